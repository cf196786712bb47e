"""DDP002 at an FSDP model's own collectives made on one rank: its forward (in eval, under ``no_grad`` too), its
``state_dict()`` and ``summon_full_params()`` gather every rank's shards, so rank 0 alone waits for ranks that never
join (U-EGformer's rank-0 preview forward in its trainer module, and its rank-0 ``save_model`` whose parameter every
call fills with the FSDP model). Silent for a DDP model's forward, for a state dict of each rank's own shard
(``LOCAL_STATE_DICT``) and where the other side of the ``if`` makes the same call."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_SCRIPT = """\
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP


def save_model(model, rank):
    if rank == 0:
        states = model.state_dict()
        torch.save(states, "best.pt")


def preview(model, batch):
    with torch.no_grad():
        return model(batch)


def main(distributed):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = torch.nn.Linear(2, 2)
    model = {wrap}(model) if distributed else model
    {local}
    for epoch in range(3):
        out = model(torch.ones(1, 2)).sum()
        out.backward()
        if rank == 0:
            {rank0}
        save_model(model, rank)
"""


def _ddp002(tmp_path: Path, wrap: str = "FSDP", rank0: str = "print(epoch)", local: str = "pass") -> list[int]:
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT.format(wrap=wrap, rank0=rank0, local=local))
    return sorted(f.line for f in check_file(script) if f.code == "DDP002")


def test_an_fsdp_models_state_dict_on_rank_zero_through_a_save_helper(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT.format(wrap="FSDP", rank0="print(epoch)", local="pass"))
    [finding] = [f for f in check_file(script) if f.code == "DDP002"]
    assert (finding.line, finding.severity, finding.confidence) == (9, "warning", "likely")
    assert "state_dict() gathers every rank's shards" in finding.message


@pytest.mark.parametrize(("rank0", "found"), [
    ("model.eval(); model(torch.ones(1, 2))", [9, 28]),  # the forward on rank 0
    ("preview(model, torch.ones(1, 2))", [9, 28]),  # through a function of the file handed the model
    ("print(model)", [9]),
])
def test_an_fsdp_models_forward_on_rank_zero(tmp_path: Path, rank0: str, found: list[int]) -> None:
    assert _ddp002(tmp_path, rank0=rank0) == found


def test_a_ddp_models_forward_and_state_dict_on_rank_zero_are_silent(tmp_path: Path) -> None:
    assert _ddp002(tmp_path, wrap="DDP", rank0="model(torch.ones(1, 2))") == []


def test_a_local_state_dict_gathers_nothing(tmp_path: Path) -> None:
    local = "FSDP.set_state_dict_type(model, torch.distributed.fsdp.StateDictType.LOCAL_STATE_DICT)"
    assert _ddp002(tmp_path, local=local) == []


def test_the_same_forward_on_both_sides_is_silent(tmp_path: Path) -> None:
    rank0 = "model(torch.ones(1, 2))\n        else:\n            model(torch.ones(1, 2))"
    assert _ddp002(tmp_path, rank0=rank0) == [9]


_TRAINER = """\
import torch


def train_epoch(model, rank, loader):
    for batch in loader:
        model(batch).sum().backward()
    if rank == 0:
        with torch.no_grad():
            model.eval()
            shown = model(batch)
            model.train()
        print(shown)
"""

_ENTRY = """\
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from trainer import train_epoch

dist.init_process_group("gloo")
model = {wrap}(torch.nn.Linear(2, 2))
for epoch in range(2):
    train_epoch(model, dist.get_rank(), [torch.ones(1, 2)])
"""


@pytest.mark.parametrize(("wrap", "found"), [("FSDP", [("trainer.py", 10)]), ("torch.compile", [])])
def test_a_helper_modules_forward_of_the_scripts_fsdp_model_on_rank_zero(tmp_path: Path, wrap: str,
                                                                        found: list[tuple[str, int]]) -> None:
    (tmp_path / "trainer.py").write_text(_TRAINER)
    (tmp_path / "train.py").write_text(_ENTRY.format(wrap=wrap))
    findings = check_file(tmp_path / "train.py")
    assert [(Path(f.file).name, f.line) for f in findings if f.code == "DDP002"] == found
