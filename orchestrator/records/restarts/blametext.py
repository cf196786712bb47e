"""The words of a blame's message: how a rank exited, what became of a rank that stopped making progress."""

from __future__ import annotations

import signal
from collections.abc import Sequence

from orchestrator.records.restarts.rankoutcome import RankOutcome


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def fate(record: RankOutcome | None, waiter: RankOutcome) -> str:
    """What became of a rank that stopped making progress, with its last step when known."""
    if record is None:
        text = "left no record of this run (it never started, or its node was lost)"
    elif record.kind == "signalled":
        by = f" by {record.stopped_by}" if record.stopped_by else ""
        text = f"was still running and was stopped{by} ({record.signal or 'a signal'})"
    elif record.exit_code:
        text = f"was still running and {describe_exit(record.exit_code)}"
    else:
        text = "was still running and ended without a word (killed, or stuck where it could not answer a signal)"
    last = record.last_step if record is not None else None
    if last is not None:
        ago = (waiter.ended or waiter.started) - last.time
        when = f", {ago:.0f} s before rank {waiter.rank} gave up" if ago >= 0 else ""
        text += f"; its last step: epoch {last.epoch}, step {last.step}{when}"
    elif record is not None:
        text += "; it had finished no training step"
    return text


def final_words(record: RankOutcome) -> str:
    if record.kind == "signalled":
        return f"was stopped ({record.signal or 'a signal'})" if record.exit_code is None else \
            describe_exit(record.exit_code)
    if record.exit_code is None:
        return "ended without a word" if record.kind == "running" else f"ended ({record.kind})"
    return describe_exit(record.exit_code)


def setting(name: str | None) -> str:
    return f"; {name} sets the wait" if name else ""


def listed(ranks: Sequence[int]) -> str:
    return ", ".join(map(str, ranks))


def was(ranks: Sequence[int]) -> str:
    return "was" if len(ranks) == 1 else "were"
