"""``orch top``'s detail pane: the text of one selected job's :class:`~orchestrator.service.detail.Detail`
(rank 0's log tail, every rank's state, the start-up phases, the attempts and the goodput ledger; read by
:mod:`orchestrator.service.detail`). Plain text: the app and the tests share it."""

from __future__ import annotations

from orchestrator.service.detail import Detail

MAX_RANKS_SHOWN = 64  # a large world: the first ranks, then a count


def detail_text(detail: Detail) -> str:
    """The detail pane's text (plain)."""
    lines = [f"rank 0's log ({detail.log_file}):", *(f"  {line}" for line in detail.log or ["(empty so far)"])]
    lines.append("ranks:")
    for r in detail.ranks[:MAX_RANKS_SHOWN]:
        where = f" on {r.host}" if r.host else ""
        step = f", {r.last_step}" if r.last_step else ""
        why = f": {r.reason}" if r.reason else ""
        lines.append(f"  rank {r.rank}: {r.kind}{where}{step}{why}")
    if len(detail.ranks) > MAX_RANKS_SHOWN:
        lines.append(f"  ... and {len(detail.ranks) - MAX_RANKS_SHOWN} more ranks")
    lines += [detail.startup] if detail.startup else ["startup: (recorded in result.json when rank 0 ends)"]
    lines += [f"attempt: {a}" for a in detail.attempts]
    lines += [detail.ledger] if detail.ledger else []
    return "\n".join(lines)
