"""Spawners of well-known installed packages as facts: ``detectron2.engine.launch(main, num_gpus_per_machine,
num_machines, machine_rank, dist_url)`` starts ``num_gpus_per_machine`` processes on the machine it runs on, each
rank ``machine_rank x num_gpus_per_machine + index``: a script that calls it is started once per node (``per-node``),
as one with its own ``mp.spawn``. The package is installed, not the project's, so its code is never read here; the
table names what it does. A call that a launcher check keeps from running (``if "LOCAL_RANK" in os.environ: main()
else: launch(...)``) is not a fact, as for the script's own spawns.

Not a DDP014 finding of the doctor: such a spawner starts processes only when asked for more than one (the count, a
flag of the package's own parser, defaults to one), so under torchrun the script would not spawn as written.
"""

from __future__ import annotations

import ast

from orchestrator.launchstyles.spawngates import callers_checked, env_checked
from orchestrator.launchstyles.spawns import Spawn
from orchestrator.source.analysis import Analysis

# qualified name of the call -> the position of its per-machine process count
SPAWNERS: dict[str, int] = {
    "detectron2.engine.launch": 1, "detectron2.engine.launch.launch": 1,
    "fastreid.engine.launch": 1, "fastreid.engine.launch.launch": 1,  # fast-reid's copy of detectron2's
}


def installed_spawns(a: Analysis) -> list[Spawn]:
    """The calls in ``a``'s file of an installed package's spawner (:data:`SPAWNERS`) that no launcher check keeps
    from running."""
    out: list[Spawn] = []
    for site in a.flow.sites:
        count = SPAWNERS.get(site.qual or "")
        if count is None or env_checked(a, site.call) or callers_checked(a, site.function, 0):
            continue
        given = site.call.args[count] if len(site.call.args) > count else None
        name = ast.unparse(site.call.func)[:40]
        out.append(Spawn(a.filename, int(getattr(site.call, "lineno", 1)),
                         f"{name}(nprocs={ast.unparse(given)[:40]})" if given is not None else f"{name}(...)",
                         site.call))
    return out
