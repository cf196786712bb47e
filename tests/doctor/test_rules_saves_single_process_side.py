"""DDP006 (and DDP005) leave a save (a print) on the side of an ``if`` no launched rank takes: ``if local_rank > -1:
(rank-0 save) else: torch.save(...)`` writes from the single-process path only; the distributed side is still
judged."""

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


_DEFAULT_THEN_LAUNCHER = """
import os
import torch
import torch.distributed as dist


def train(args, model, loss):
    if args.distributed:
        if dist.get_rank() == 0:
            print("loss", loss.item())
            torch.save(model.module.state_dict(), "last.pth")
    else:
        print("loss", loss.item())
        torch.save(model.state_dict(), "last.pth")


def main(args):
    args.distributed = False
    if {guard}:
        args.distributed = {world} {test}
    {after}
    if args.distributed:
        dist.init_process_group("nccl")
    model = torch.nn.Linear(2, 2)
    for step in range(3):
        train(args, model, model.weight.sum())
"""


def _default_then_launcher(guard: str = '"WORLD_SIZE" in os.environ', world: str = 'int(os.environ["WORLD_SIZE"])',
                           test: str = "> 1", after: str = "pass") -> list[tuple[str, int]]:
    source = _DEFAULT_THEN_LAUNCHER.format(guard=guard, world=world, test=test, after=after)
    return sorted((f.code, f.line) for f in check_source(source, "t.py") if f.code in ("DDP005", "DDP006"))


def test_a_default_then_the_launchers_world_size_test_has_the_same_dead_side() -> None:
    """timm's and VoCo's ``args.distributed = False`` then ``if "WORLD_SIZE" in os.environ: args.distributed =
    int(os.environ["WORLD_SIZE"]) > 1``: the ``else`` of ``if args.distributed:`` is the single-process path, its
    print and save run on no rank of a world of several."""
    assert _default_then_launcher() == []
    assert _default_then_launcher(world='os.environ.get("WORLD_SIZE", 1)', test=">= 2") == []
    assert _default_then_launcher(guard='"RANK" in os.environ', world='int(os.environ["RANK"])', test="!= -1") == []


def test_a_binding_that_may_not_hold_under_a_launcher_keeps_both_sides_judged() -> None:
    found = [("DDP006", 14)]  # the else's save: every rank's when the else may run (its print is no training loop's)
    assert _default_then_launcher(guard="args.dist") == found  # a flag around it: off, the else runs
    assert _default_then_launcher(after="args.distributed = False") == found  # set again after the test
    assert _default_then_launcher(test="> 4") == found  # not the world against one


_LOOP_PRINT = """
import os
import torch
import torch.distributed as dist

args_distributed = False
if "WORLD_SIZE" in os.environ:
    args_distributed = int(os.environ["WORLD_SIZE"]) {test}
if args_distributed:
    dist.init_process_group("nccl")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.ones(2)).sum()
    loss.backward()
    optimizer.step()
    if args_distributed:
        if dist.get_rank() == 0:
            print("loss", loss.item())
    else:
        print("loss", loss.item())
"""


def test_the_single_process_sides_print_is_no_ddp005() -> None:
    """VoCo's training loop: the rank-0 print when distributed, every print on the single-process side."""
    def prints(test: str) -> list[int]:
        return [f.line for f in check_source(_LOOP_PRINT.format(test=test), "t.py") if f.code == "DDP005"]

    assert prints("> 1") == []
    assert prints("> 4") == [21]  # not the world against one: the else may run in a world of several
