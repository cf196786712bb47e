"""DDP002 after an early exit on some ranks (``if collect_by_master and rank != 0: return``): a collective the
remaining ranks make is reached by some ranks only, unless it runs only where the exit's flag is off (``if not
collect_by_master: synchronize()``, mmcv's ``collect_results_cpu``): then no rank has left."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import torch.distributed as dist


def collect(part, collect_by_master=True):
    rank = dist.get_rank()
    dist.barrier()
    if collect_by_master and rank != 0:
        return None
    results = [part]
    {around}
        dist.barrier()
    return results
"""


@pytest.mark.parametrize(("around", "found"), [
    ("if not collect_by_master:", []),
    ("if collect_by_master:\n        pass\n    else:", []),
    ("if len(results) > 0:", [11]),
    ("if not results:", [11]),
])
def test_a_collective_where_the_exits_flag_is_off(around: str, found: list[int]) -> None:
    source = SCRIPT.replace("{around}", around)
    lines = [f.line for f in check_source(source, "t.py") if f.code == "DDP002"]
    barrier = source.splitlines().index("        dist.barrier()") + 1
    assert lines == ([barrier] if found else [])
