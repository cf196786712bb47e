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


NEGATED = """\
import torch.distributed as dist


def evaluate(args, is_rank0):
    use_fsdp_eval = args.fsdp and args.distributed
    if not use_fsdp_eval and not is_rank0:
        return {}
    signal = 0
    {around}
        dist.broadcast(signal, src=0)
    return {}
"""


@pytest.mark.parametrize(("around", "found"), [
    ("if use_fsdp_eval:", False),  # open_clip's evaluate: where the flag is on, no rank has left
    ("if not use_fsdp_eval:\n        pass\n    else:", False),
    ("if not use_fsdp_eval:", True),  # the flag off: only rank 0 is past the exit
    ("if signal == 0:", True),
])
def test_a_collective_where_the_exits_negated_flag_is_false(around: str, found: bool) -> None:
    source = NEGATED.replace("{around}", around)
    lines = [f.line for f in check_source(source, "t.py") if f.code == "DDP002"]
    broadcast = source.splitlines().index("        dist.broadcast(signal, src=0)") + 1
    assert lines == ([broadcast] if found else [])
