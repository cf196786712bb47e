"""DDP006 leaves a save on the side of an ``if`` no launched rank takes: ``if local_rank > -1: (rank-0 save) else:
torch.save(...)`` writes from the single-process path only; the distributed side is still judged."""

from __future__ import annotations

from orchestrator.doctor import check_source

_SCRIPT = """
import argparse
import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--local_rank", type=int, default=-1)
args = p.parse_args()
if args.local_rank > -1:
    dist.init_process_group("nccl")
net = torch.nn.Linear(2, 2)


def save_network(network, local_rank):
    if {test}:
        {distributed}
    else:
        torch.save(network.state_dict(), "net.pth")


for epoch in range(3):
    save_network(net, args.local_rank)
"""


def _saves(test: str, distributed: str) -> list[int]:
    return [f.line for f in check_source(_SCRIPT.format(test=test, distributed=distributed), "t.py")
            if f.code == "DDP006"]


def test_the_single_process_side_is_left_and_the_distributed_side_judged() -> None:
    assert _saves("local_rank > -1", 'torch.save(network.state_dict(), "net.pth")') == [16]
    assert _saves("local_rank != -1", "pass") == []
    assert _saves("-1 < local_rank", "pass") == []


def test_a_test_that_some_ranks_pass_keeps_both_sides_judged() -> None:
    # `local_rank > 0`: the else is local rank 0 of each node (a writer per node), not a single process
    assert _saves("local_rank > 0", "pass") == [18]
