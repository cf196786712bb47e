"""What a launcher saw of its ranks' ends, and the outcome records completed with it (pure).

A rank's own record (:mod:`orchestrator.records.restarts.blame`) says how it ended when it could write it; a rank
killed by SIGKILL, or stopped where no handler runs, leaves ``running``. Its launcher knows more:
``orch run`` waits for every rank (each exit code, when, which ranks it stopped itself), and under Slurm
srun reports each task that failed in the batch log (``orchestrator.slurm.stepreport``). :class:`Seen`
holds that; :func:`complete` (and :func:`observed`, its long form) fills in the records that are
missing or still say ``running``; a rank's final record always wins over what was seen from outside.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrator.records.restarts.rankoutcome import FINAL_KINDS, RankOutcome, current_run


@dataclass(frozen=True)
class Seen:
    """What a launcher saw of one run's ranks (``run``, ``restart``: the run, as the records name it)."""

    codes: Mapping[int, int]  # rank -> exit code as Popen says it (-N: killed by signal N); the ranks seen
    stopped: frozenset[int] = frozenset()  # the ranks the launcher stopped itself (after the failure)
    stopped_by: str = ""  # "orch run", "srun"
    ended: Mapping[int, float] = field(default_factory=dict)  # rank -> when it ended (wall clock), when known
    reasons: Mapping[int, str | None] = field(default_factory=dict)  # rank -> its last error line, when known
    run: str = "local"
    restart: int | None = None  # None: the restart of the records' current run


def complete(records: Sequence[RankOutcome], seen: Seen | None) -> list[RankOutcome]:
    """``records`` completed with ``seen`` (unchanged without it)."""
    if seen is None:
        return list(records)
    return observed(records, codes=dict(seen.codes), ended=dict(seen.ended), stopped=set(seen.stopped),
                    stopped_by=seen.stopped_by, reasons=dict(seen.reasons), run=seen.run, restart=seen.restart)


def observed(records: Sequence[RankOutcome], *, codes: Mapping[int, int], ended: Mapping[int, float],
             stopped: set[int], stopped_by: str, reasons: Mapping[int, str | None], run: str = "local",
             restart: int | None = None) -> list[RankOutcome]:
    """The records completed with what a runner saw (``orch run`` waits for every rank): a rank
    whose record is missing or still says ``running`` gets its exit code; one the runner stopped
    (``stopped``) is ``signalled``, one that exited 0 ``completed``; ``reasons``: its last error line.
    A rank with no record gets one of ``run`` and ``restart`` (None: the records' current run's, else 0)."""
    by_rank, _ = current_run(records)
    if restart is None:
        restart = next(iter(by_rank.values())).restart if by_rank else 0
    out = [r for r in records if r.rank not in codes]
    for rank, code in sorted(codes.items()):
        held = by_rank.get(rank)
        if held is not None and held.kind in FINAL_KINDS:
            out.append(held)
            continue
        base: dict[str, Any] = held.model_dump() if held is not None else {
            "rank": rank, "world_size": max(codes) + 1, "run": run, "restart": restart,
            "started": ended.get(rank, 0.0)}
        base.update(exit_code=max(-128, min(code, 255)), ended=ended.get(rank), reason=reasons.get(rank))
        if rank in stopped and code < 0:
            base.update(kind="signalled", signal=_signal_name(-code), stopped_by=stopped_by)
        elif code == 0:
            base.update(kind="completed")
        elif held is None and reasons.get(rank):
            base.update(kind="failed")  # it said why before its record could start
        else:
            base.update(kind="running")  # it ended without a word
        out.append(RankOutcome.model_validate(base))
    return out


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
