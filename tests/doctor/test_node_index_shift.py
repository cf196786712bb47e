"""DDP016 for a local rank shifted into the global rank by a node-index flag no launcher passes
(``args.local_rank += args.node_index * args.gpu_per_node``): orch and torchrun pass no such flag, so every node
takes the flag's default offset and from the second node on two processes claim each rank. Silent when the offset
comes from the environment (``GROUP_RANK``, ``SLURM_NODEID``) or in a script that spawns its own workers (and in the
helper modules of such a script: the user passes the node index per node)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source

_SCRIPT = """\
import argparse
import os
import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
parser.add_argument("--node_index", type=int, default=-1)
parser.add_argument("--gpu_per_node", type=int, default=-1)
args = parser.parse_args()
torch.cuda.set_device(args.local_rank)
dist.init_process_group("nccl")
{shift}
print(args.local_rank)
"""


@pytest.mark.parametrize(("shift", "found"), [
    ("args.local_rank += args.node_index * args.gpu_per_node", [13]),
    ("args.local_rank += int(os.environ['GROUP_RANK']) * args.gpu_per_node", []),  # the launcher's node index
    ("args.local_rank += args.node_index", []),  # no node x GPUs offset
    ("args.epochs += args.node_index * args.gpu_per_node", [])])  # not a rank
def test_a_local_rank_shifted_by_a_node_index_flag(shift: str, found: list[int]) -> None:
    findings = check_source(_SCRIPT.format(shift=shift), "train.py")
    assert [f.line for f in findings if f.code == "DDP016"] == found


def test_a_spawning_script_passes_its_node_index_by_design() -> None:
    source = _SCRIPT.format(shift="args.local_rank += args.node_index * args.gpu_per_node") + (
        "import torch.multiprocessing as mp\n\n\ndef worker(i):\n    dist.init_process_group('nccl', rank=i)\n\n\n"
        "mp.spawn(worker, nprocs=8)\n")
    init = source.splitlines().index("    dist.init_process_group('nccl', rank=i)") + 1
    # the shift (line 13) is by design there; the worker's spawn index as the rank is DDP016 of its own
    assert [f.line for f in check_source(source, "train.py") if f.code == "DDP016"] == [init]


_HELPER = """\
import os
import torch
import torch.distributed as dist


def init_dist(opt):
    opt.rank = opt.rank * torch.cuda.device_count() + int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl", init_method=opt.dist_url, world_size=opt.world_size, rank=opt.rank)
"""

_ENTRY = """\
import argparse
import os
import torch
import torch.multiprocessing as mp
from env import init_dist


def worker(gpu, opt):
    opt.gpu = gpu
    init_dist(opt)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int, default=0)  # the node's index, passed per node
    parser.add_argument("--world-size", type=int, default=1)
    parser.add_argument("--dist-url", default="env://")
    opt = parser.parse_args()
    opt.gpu = int(os.environ.get("LOCAL_RANK", 0))
    {start}
"""


@pytest.mark.parametrize(("start", "found"), [("mp.spawn(worker, nprocs=torch.cuda.device_count(), args=(opt,))", []),
                                              ("init_dist(opt)", [7])])
def test_a_helper_of_a_spawning_script_gets_the_node_index_by_design(tmp_path: Path, start: str,
                                                                     found: list[int]) -> None:
    (tmp_path / "env.py").write_text(_HELPER)
    (tmp_path / "train.py").write_text(_ENTRY.format(start=start))
    lines = [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP016" and f.file.endswith("env.py")]
    assert lines == found
