"""DDP016, the node-local rank written into the environment as ``RANK``: PersFormer's ``setup_dist_launch`` sets
``args.proc_id = args.local_rank`` (the ``--local_rank`` flag), then ``os.environ['RANK'] = str(args.proc_id)``; the
group it then joins with ``init_method="env://"`` (and everything else that asks the environment for the rank) reads
the node's rank as the world's: from the second node on, two processes claim each rank.

The value written is judged where the write stands: the last assignment of that name or ``args.x`` earlier in the
same function, if any (``setup_slurm``'s ``args.proc_id = int(os.environ['SLURM_PROCID'])`` is the global rank),
else what ``rules_launch.holds_local`` finds it may hold. Not in a script that spawns its own workers (the spawn
index written as ``RANK`` is ``launchstyles/spawnrank.py``'s, DDP016 by ``rules_spawn``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.rules_launch import holds_local
from orchestrator.launchstyles.spawnrank import unwrapped, written_rank
from orchestrator.source.exprnames import FunctionNode
from orchestrator.source.walk import walk


def check_local_rank_written(a: Analysis) -> Iterator[Finding]:
    """DDP016 at ``os.environ["RANK"] = str(X)`` (or ``os.environ.update(RANK=...)``) where X holds the node-local
    rank."""
    if a.spawns:
        return
    for node in a.module.nodes:
        raw = written_rank(a.module, node)
        if raw is None:
            continue
        value = unwrapped(raw)
        written = _last_before(a.module.function_of(node), value, node) or value
        if holds_local(a, written, 0):
            yield a.finding("DDP016", node, f"RANK={ast.unparse(value)[:40]} written into the environment holds the "
                                            "local rank: the group (and all else that reads RANK) takes it for the "
                                            "global one", at=value)


def _last_before(function: FunctionNode | None, target: ast.expr, at: ast.AST) -> ast.expr | None:
    """The value the last assignment of ``target`` (a name, ``args.x``) before ``at`` in ``function`` gives it."""
    if function is None or not isinstance(target, ast.Name | ast.Attribute):
        return None
    text, line = ast.unparse(target), getattr(at, "lineno", 0)
    found = [(n.lineno, n.value) for n in walk(function) if isinstance(n, ast.Assign) and n.lineno < line
             and any(ast.unparse(t) == text for t in n.targets)]
    return max(found, key=lambda pair: pair[0])[1] if found else None
