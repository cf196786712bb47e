"""DDP016 for a local rank shifted into the global rank by a node-index flag no launcher passes
(``args.local_rank += args.node_index * args.gpu_per_node``): orch and torchrun pass no such flag, so every node
takes the flag's default offset and from the second node on two processes claim each rank. Silent when the offset
comes from the environment (``GROUP_RANK``, ``SLURM_NODEID``) or in a script that spawns its own workers."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

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
    assert [f for f in check_source(source, "train.py") if f.code == "DDP016"] == []
