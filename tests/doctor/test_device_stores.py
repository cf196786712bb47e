"""DDP010 and a device chosen but never used: CosyVoice's executor stores ``self.device = torch.device(f"cuda:{RANK}")``
and nothing reads ``.device`` again (the model goes to the ``LOCAL_RANK`` device the script binds): no device is taken
from the global rank. The same store, read later, is still the finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_EXECUTOR = """
import os
import torch


class Executor:
    def __init__(self):
        self.rank = int(os.environ.get("RANK", 0))
        self.device = torch.device("cuda:{{}}".format(self.rank))

    def train_one_epoch(self, model, loader):
        for batch in loader:
            model(batch{read}).sum().backward()
"""

_SCRIPT = """
import os
import torch
import torch.distributed as dist
from executor import Executor

dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda(local_rank), device_ids=[local_rank])
Executor().train_one_epoch(model, [torch.ones(2)])
"""


@pytest.mark.parametrize(("read", "found"), [
    ("", []),  # stored, never read: no device from the global rank
    (".to(self.device)", [("executor.py", 9)]),  # read when the batch is moved: the rank's device is the global one
])
def test_a_device_stored_and_never_read_is_no_device_taken_from_the_global_rank(tmp_path: Path, read: str,
                                                                                 found: list[tuple[str, int]]) -> None:
    (tmp_path / "executor.py").write_text(_EXECUTOR.format(read=read))
    (tmp_path / "train.py").write_text(_SCRIPT)
    got = [(Path(f.file).name, f.line) for f in check_file(tmp_path / "train.py") if f.code == "DDP010"]
    assert got == found


def test_a_local_name_never_read_is_no_device_either(tmp_path: Path) -> None:
    script = ("import os\nimport torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
              "rank = int(os.environ['RANK'])\ndevice = torch.device(f'cuda:{rank}')\n{use}")
    (tmp_path / "a.py").write_text(script.replace("{use}", ""))
    (tmp_path / "b.py").write_text(script.replace("{use}", "x = torch.ones(2).to(device)\n"))
    assert [f.line for f in check_file(tmp_path / "a.py") if f.code == "DDP010"] == []
    assert [f.line for f in check_file(tmp_path / "b.py") if f.code == "DDP010"] == [6]
