"""DDP002 and a rank-0 collective whose other side is a later ``if rank == 0: ... else: <the same collective>`` of the
function (IndexTTS: rank 0 broadcasts a cached index and returns; with no cache it scans, then both sides meet in
the later pair). A rank-0 broadcast with no receiving side anywhere in the function is still reported."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import os
import torch
import torch.distributed as dist


def load_index(path, rank):
    if rank == 0 and os.path.exists(path):
        size = torch.load(path)
        dist.broadcast(size, src=0)
        return size
    size = torch.zeros(1)
    if rank == 0:
        size = torch.ones(1)
        BROADCAST_ZERO
    else:
        BROADCAST_OTHERS
    return size


dist.init_process_group("gloo")
load_index("index.pt", dist.get_rank())
"""


@pytest.mark.parametrize(("zero", "others", "found"), [
    ("dist.broadcast(size, src=0)", "dist.broadcast(size, src=0)", []),  # the others receive in the later pair
    ("pass", "pass", [9]),  # nobody receives rank 0's first broadcast
])
def test_a_rank_zero_collective_pairs_with_the_other_ranks_side_later(zero: str, others: str, found: list[int]) -> None:
    source = SCRIPT.replace("BROADCAST_ZERO", zero).replace("BROADCAST_OTHERS", others)
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP002"] == found
