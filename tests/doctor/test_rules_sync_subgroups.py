"""DDP002 and a subgroup's collective: ``barrier(group=g)`` with ``g = dist.new_group(ranks=[...])`` is called by the
group's members alone, so a rank condition around it may be the test of membership (TGL's NCCL group of the GPU
workers, ``if args.local_rank < args.num_gpus:`` around its barriers, the host process outside it). A collective of
the whole world, or of a group made without its ranks, under the same condition is still reported."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import os
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
workers = GROUP
if rank < 4:
    dist.barrier(ARGS)
"""


@pytest.mark.parametrize(("group", "args", "found"), [
    ("dist.new_group(ranks=list(range(4)), backend='nccl')", "group=workers", []),
    ("dist.new_group([0, 1, 2, 3])", "group=workers", []),
    ("dist.new_group(ranks=list(range(4)))", "", [8]),  # the world's barrier
    ("dist.new_group(backend='gloo')", "group=workers", [8]),  # every rank is in it
    ("None", "group=workers", [8]),
])
def test_a_subgroups_collective_under_its_membership_test_is_not_ddp002(group: str, args: str,
                                                                          found: list[int]) -> None:
    source = SCRIPT.replace("GROUP", group).replace("ARGS", args)
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP002"] == found


HANDED = """\
import torch.distributed as dist


class Sync:
    def __init__(self, rank, mp_group, world):
        self.rank = rank
        self.mp_group = mp_group
        self.world = world

    def state(self, delta):
        if self.rank == 0:
            dist.all_reduce(delta, group=GROUP)
"""


@pytest.mark.parametrize(("group", "found"), [
    ("self.mp_group", []),  # a group the class is handed: which ranks are in it is not read
    ("dist.group.WORLD", [12]),
    ("None", [12]),
])
def test_a_group_the_code_is_handed_counts_as_a_subgroup(group: str, found: list[int]) -> None:
    source = HANDED.replace("GROUP", group)
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP002"] == found
