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


_NAMED = """
import os
import torch
import torch.distributed as dist


def save(model, step):
    if {test}:
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), f"iter_{{step}}.pth")
    else:
        torch.save(model.state_dict(), f"iter_{{step}}.pth")


ddp = {flag}
if ddp:
    dist.init_process_group("nccl")
model = torch.nn.Linear(2, 2)
for step in range(3):
    save(model, step)
"""


def test_a_name_bound_once_to_the_launchers_test_has_the_same_dead_side() -> None:
    """baby-llama2's ``ddp = int(os.environ.get("RANK", -1)) != -1`` (nanoGPT's line): ``if ddp:`` ... ``else:``
    saves from the single-process path only; ``if not ddp:`` is the same test turned round."""
    def saves(test: str, flag: str = 'int(os.environ.get("RANK", -1)) != -1') -> list[int]:
        source = _NAMED.format(test=test, flag=flag)
        return [f.line for f in check_source(source, "t.py") if f.code == "DDP006"]

    assert saves("ddp") == []
    assert saves("not ddp") == [12]  # the guarded save on the side no rank takes, the unguarded one on every rank's
    assert saves("ddp", flag="os.environ.get('SAVE_ALL') == '1'") == [12]  # not a rank test: both sides judged
