"""DDP016 whose local rank is assigned only where Slurm's variables are absent (cslr2's ``elif "LOCAL_RANK" in
os.environ: cfg.rank = int(os.environ["LOCAL_RANK"])`` after ``if "SLURM_PROCID" in os.environ:``): a warning on
one node and across nodes alike, since ``orch submit`` runs every task under ``srun``; the same rank read on every
path is an error across nodes."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source
from orchestrator.doctor.feasibility import across_nodes
from orchestrator.doctor.offslurm import OFF_SLURM

SCRIPT = """\
import os
import torch.distributed as dist


def setup(cfg):
    if {slurm}:
        cfg.rank = int(os.environ["SLURM_PROCID"])
    elif "LOCAL_RANK" in os.environ:
        cfg.rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl", init_method="env://", world_size=cfg.world_size, rank=cfg.rank)
"""


def ddp016(slurm: str) -> list:
    return [f for f in check_source(SCRIPT.format(slurm=slurm), "t.py") if f.code == "DDP016"]


@pytest.mark.parametrize("slurm", ['"SLURM_PROCID" in os.environ', 'os.environ.get("SLURM_NTASKS") is not None'])
def test_a_local_rank_only_off_slurm_stays_a_warning_across_nodes(slurm: str) -> None:
    found = ddp016(slurm)
    assert [(f.line, f.severity) for f in found] == [(10, "warning")] and OFF_SLURM in found[0].marks
    assert [f.severity for f in across_nodes(found, 2, 8)] == ["warning"]


@pytest.mark.parametrize("slurm", ['"SLURM_PROCID" not in os.environ', 'os.environ.get("RANK") is not None'])
def test_a_local_rank_a_slurm_task_may_take_is_an_error_across_nodes(slurm: str) -> None:
    found = ddp016(slurm)
    assert [f.line for f in found] == [10] and OFF_SLURM not in found[0].marks
    assert [f.severity for f in across_nodes(found, 2, 8)] == ["error"]
