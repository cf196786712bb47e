"""DDP002 and a collective pair of both polarities of one rank comparison: ``if rank != p: barrier()`` before the work
and ``if rank == p: barrier()`` after it, in ``for p in range(world):`` (DRAGON's one process at a time building its
cache): every rank calls the barrier once per turn, on one side or the other. One side alone, or two sides of
different comparisons, is still reported."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
world = dist.get_world_size()
for p in range(world):
    if BEFORE:
        dist.barrier()
    data = build()
    if AFTER:
        dist.barrier()
"""


@pytest.mark.parametrize(("before", "after", "found"), [
    ("rank != p", "rank == p", []),  # one rank at a time
    ("rank != p", "False", [8]),  # one side alone
    ("rank != p", "rank == world - 1", [8, 11]),  # two comparisons
])
def test_both_polarities_of_one_rank_comparison_are_a_pair(before: str, after: str, found: list[int]) -> None:
    source = SCRIPT.replace("BEFORE", before).replace("AFTER", after)
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP002"] == found
