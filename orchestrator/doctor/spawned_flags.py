"""A spawning script's ``--local_rank`` that its spawned worker replaces with the spawn index (PS-MT's ``def
main(gpu, ...): args.local_rank = gpu``): the flag decides nothing in any style orch starts it (DDP015 is silent)."""

from __future__ import annotations

import ast

from orchestrator.doctor.analysis import Analysis
from orchestrator.source.analysis import spawn_target


def index_overwrites_flag(a: Analysis) -> bool:
    """The file spawns its workers and a worker's first statements give ``args.local_rank`` its first parameter, the
    spawn index (``def main(gpu, ...): args.local_rank = gpu``): what the flag says is replaced in every worker."""
    targets = {target.id for site in a.flow.sites if (site.qual or "").endswith("multiprocessing.spawn")
               and isinstance(target := spawn_target(site.call), ast.Name)}
    for name in targets:
        function = a.module.functions.get(name)
        params = [p.arg for p in function.args.args] if function is not None else []
        for statement in function.body[:3] if function is not None and params else []:
            if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name) and (
                    statement.value.id == params[0]) and any(
                    isinstance(t, ast.Attribute) and t.attr == "local_rank" for t in statement.targets):
                return True
    return False
