"""DDP006: a file one rank writes and every rank reads back at once, with nothing between that waits for the
ranks (orchestrator/doctor/saves_readback.py). Made-up scripts, each with a twin that waits."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source

_HEAD = """import os
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
model = Net()
path = os.path.join(args.out, "init.pt")
if dist.get_rank() == 0:
    torch.save(model.state_dict(), path)
"""


def readbacks(source: str) -> list[int]:
    return [f.line for f in check_source(source, "t.py") if f.code == "DDP006" and "reads back" in f.message]


@pytest.mark.parametrize(("between", "reported"), [
    ("", True),
    ("print('saved')\n", True),
    ("dist.barrier()\n", False),
    ("synchronize()\n", False),
])
def test_rank_zero_writes_then_every_rank_reads_the_same_file(between: str, reported: bool) -> None:
    source = _HEAD + between + "model.load_state_dict(torch.load(path, map_location='cpu'))\n"
    assert readbacks(source) == ([10 + between.count("\n")] if reported else [])


def test_another_file_or_a_read_on_the_writing_rank_only_is_not_a_readback() -> None:
    assert readbacks(_HEAD + "model.load_state_dict(torch.load(args.resume, map_location='cpu'))\n") == []
    assert readbacks(_HEAD + "    model.load_state_dict(torch.load(path, map_location='cpu'))\n") == []


def test_a_write_in_an_earlier_epoch_loop_is_not_read_back_at_once() -> None:
    """The save inside the training loop, the read after it: the training's own collectives sit between."""
    source = ("import torch\nimport torch.distributed as dist\n\ndist.init_process_group('nccl')\n"
              "for epoch in range(3):\n    loss = model(x).sum()\n    loss.backward()\n"
              "    if dist.get_rank() == 0:\n        torch.save(model.state_dict(), 'best.pt')\n"
              "model.load_state_dict(torch.load('best.pt', map_location='cpu'))\n")
    assert readbacks(source) == []


@pytest.mark.parametrize(("decorator", "reported"), [("@rank_zero_only\n", True), ("", False)])
def test_a_rank_zero_only_helper_writes_and_the_script_reads_back(tmp_path: Path, decorator: str,
                                                                  reported: bool) -> None:
    """A project module's ``@rank_zero_only`` function writes the initial weights; the script reads them back on
    every rank right after (a helper every rank runs is the every-rank save instead)."""
    (tmp_path / "init.py").write_text(
        "import torch\nfrom lightning.pytorch.utilities import rank_zero_only\n\n\n"
        f"{decorator}def write_init(model, name):\n    torch.save(model.state_dict(), name)\n")
    (tmp_path / "train.py").write_text(
        "import torch\nimport lightning as L\nfrom init import write_init\n\n"
        "if __name__ == '__main__':\n    model = Net()\n    if not args.load_model:\n"
        "        name = f'{args.out}/init.pth'\n        write_init(model, name)\n        args.load_model = name\n"
        "    model.load_state_dict(torch.load(args.load_model, map_location='cpu'))\n"
        "    L.Trainer(devices=8).fit(model)\n")
    found = [(Path(f.file).name, f.line, "reads back" in f.message) for f in check_file(tmp_path / "train.py")
             if f.code == "DDP006"]
    assert found == ([("train.py", 11, True)] if reported else [("init.py", 6, False)])
