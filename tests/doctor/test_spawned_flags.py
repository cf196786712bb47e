"""DDP015 and a spawning script's ``--local_rank``: PS-MT declares the flag (default -1) and its spawned worker's
first statement replaces it with the spawn index (``def main(gpu, ...): args.local_rank = gpu``): the flag decides
nothing, in any style orch starts it. The same flag read as given, in a script that spawns a worker which never
replaces it, is still the finding."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

_SCRIPT = """
import argparse
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def main(gpu, ngpus, args):
{first}    torch.cuda.set_device(args.local_rank)
    dist.init_process_group("nccl", init_method="env://", rank=args.node * ngpus + args.local_rank,
                            world_size=args.world_size)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--node", type=int, default=0)
    parser.add_argument("--world_size", type=int, default=8)
    args = parser.parse_args()
    mp.spawn(main, nprocs=8, args=(8, args))
"""


@pytest.mark.parametrize(("first", "found"), [
    ("    args.local_rank = gpu\n", []),
    ("", [16]),  # the worker reads the flag as given: every worker keeps -1
])
def test_a_flag_the_spawned_worker_replaces_with_its_index_decides_nothing(first: str, found: list[int]) -> None:
    findings = check_source(_SCRIPT.format(first=first), "train.py")
    assert [f.line for f in findings if f.code == "DDP015"] == found
