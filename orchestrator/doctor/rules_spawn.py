"""DDP014: a script that starts its own ranks (``mp.spawn``, ``start_processes``, a ``multiprocessing.Process``
that runs the training) inside a rank that a launcher (orch, torchrun) already started, or a framework strategy
that does (``Trainer(strategy="ddp_spawn")``). Which spawns count (no launcher check keeps them from running, the
started function trains) is the launch styles' fact (``orchestrator.launchstyles.spawns``): a ``per-node``
script runs its spawn as written, and the gate drops this finding then.
"""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.launchstyles.spawns import spawns


def check_self_spawn(a: Analysis) -> Iterator[Finding]:
    """DDP014 at each spawn of training processes that no launcher check keeps from running."""
    for spawn in spawns(a):
        if spawn.strategy is None:
            yield a.finding("DDP014", spawn.node, spawn.call)
        else:
            yield a.finding("DDP014", spawn.node, f"{spawn.call}(strategy={spawn.strategy!r}): Lightning starts its "
                                                  "own ranks in every launched rank; use strategy=\"ddp\"")
