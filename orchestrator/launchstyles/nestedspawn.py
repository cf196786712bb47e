"""A spawn that one rank makes for a job of its own: the function around it is called only under a rank condition
(FeatureDecorrelationSSL's ``if device == 0: linear_eval(args, model.module.backbone)`` after training, whose
``linear_eval`` spawns the node's GPUs into a fresh group on ``localhost``). The training's ranks are started
elsewhere; this one's processes meet among themselves, once per rank that takes the branch, so it is neither a spawn
inside a launched rank (DDP014) nor the training's world (DDP008, DDP016)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.source.analysis import Analysis
from orchestrator.source.branches import under_main_guard
from orchestrator.source.exprnames import last_name
from orchestrator.source.flow import Site


def spawned_by_one_rank(a: Analysis, site: Site) -> bool:
    """``site`` (a spawn) is in a function every call of which, in this file or (for a helper module) in the
    script, runs only under a rank condition; False when no call is in sight."""
    function = site.function
    if function is None or a.module.spawned(function):
        return False
    stem = Path(a.filename).stem
    helper = a.outer is not None  # a helper's own __main__ block never runs
    calls = [(owner, s) for owner in (a, a.outer) if owner is not None for s in owner.flow.sites
             if (owner is a and a.module.local_function(s.call) is function
                 and not (helper and under_main_guard(s.call, a.module.parents)))
             or (owner is not a and (owner.module.qualname(s.call.func) or "").endswith(f"{stem}.{function.name}"))
             or (owner is not a and last_name(s.call.func) == function.name
                 and owner.module.qualname(s.call.func) is None)]
    return bool(calls) and all(owner.flow.guarded(s) for owner, s in calls)

