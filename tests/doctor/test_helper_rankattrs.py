"""DDP010 in a helper module: ``.cuda(args.rank)`` where ``args`` is the helper function's parameter and the script
sets ``args.rank`` to the global rank (SLURM_PROCID, get_rank()): on the second node the ranks ask for a GPU past the
node's. Silent where the script's ``args.rank`` is the local rank, and for an attribute of a name that is no
parameter."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file
from orchestrator.doctor.feasibility import across_nodes

_HELPER = """
import torch
import torch.distributed as dist


def average(args, values):
    total = torch.Tensor(values).float().cuda({device})
    dist.all_reduce(total)
    return total / args.world_size
"""

_SCRIPT = """
import os
import argparse
import torch
import torch.distributed as dist
from tasks import average

args = argparse.ArgumentParser().parse_args()
{rank}, args.world_size = int(os.environ["{variable}"]), int(os.environ["SLURM_NTASKS"])
dist.init_process_group("nccl", rank=int(os.environ["SLURM_PROCID"]), world_size=args.world_size)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda(int(os.environ["SLURM_LOCALID"])))
average(args, [1.0])
"""


@pytest.mark.parametrize(("device", "rank", "variable", "found"), [
    ("args.rank", "args.rank", "SLURM_PROCID", [7]),  # the CASS-NAT recipe's helpers
    ("args.rank", "args.rank", "SLURM_LOCALID", []),  # the local rank: right on every node
    ("opts.rank", "args.rank", "SLURM_PROCID", []),  # opts is no parameter of the helper's function
    ("args.gpu", "args.rank", "SLURM_PROCID", []),
])
def test_a_helpers_device_from_the_scripts_global_rank(tmp_path: Path, device: str, rank: str, variable: str,
                                                       found: list[int]) -> None:
    (tmp_path / "tasks.py").write_text(_HELPER.format(device=device))
    (tmp_path / "train.py").write_text(_SCRIPT.format(rank=rank, variable=variable))
    findings = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP010" and f.file.endswith("tasks.py")]
    assert [f.line for f in findings] == found
    assert all(f.severity == "error" for f in across_nodes(findings, 2, 8))  # refused across nodes


_WRAP = """
import torch
from torch.nn.parallel import DistributedDataParallel


def wrap(model, rank, world_size):
    {rebound}model = model.to(rank)
    return DistributedDataParallel(model, device_ids=[rank])
"""

_WRAPPED = """
import os
import torch
import torch.distributed as dist
from dist_utils import wrap

rank = int(os.environ["RANK"])
local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl")
torch.cuda.set_device(local_rank)
model = wrap(torch.nn.Linear(2, 2), {passed}, int(os.environ["WORLD_SIZE"]))
"""


@pytest.mark.parametrize(("passed", "rebound", "found"), [
    ("rank", "", [7]),  # wafer's wrap_model_distributed(model, rank, world_size)
    ("local_rank", "", []),  # the local rank: right on every node
    ("rank", "rank = rank % torch.cuda.device_count()\n    ", []),  # bound again in the helper: not the one passed
])
def test_a_helpers_device_from_a_parameter_the_script_gives_the_global_rank(tmp_path: Path, passed: str, rebound: str,
                                                                            found: list[int]) -> None:
    (tmp_path / "dist_utils.py").write_text(_WRAP.format(rebound=rebound))
    (tmp_path / "train.py").write_text(_WRAPPED.format(passed=passed))
    findings = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP010" and f.file.endswith("dist_utils.py")]
    assert [f.line - (1 if rebound else 0) for f in findings] == found
    assert all(f.severity == "error" for f in across_nodes(findings, 2, 8))  # refused across nodes
