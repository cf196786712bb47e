"""Spawns of training processes as facts: a script that starts its own ranks (``mp.spawn``, ``start_processes``, a
``multiprocessing.Process`` that runs the training) where no launcher check keeps it from running, and a framework's
spawning strategy (Lightning's ``Trainer(strategy="ddp_spawn")``). The first kind is a ``per-node`` script (started
once per node, it spawns its ranks); inside a rank a launcher already started it is DDP014 (the doctor reports
these same spawns).

Every launched rank then forks ``nprocs`` processes of its own: nproc x GPUs processes per node, each
launched rank a world of its own (rank from the spawn index, world size from the GPU count, one hard-coded
port). Not a fact when the code already asks the environment whether a launcher started it
(``if "LOCAL_RANK" not in os.environ: mp.spawn(...)``, ``if int(os.environ.get("WORLD_SIZE", 1)) > 1:
main() else: mp.spawn(...)``), around the call or around every call of its function, nor when the spawn
is an opt-in flag (``if args.multiprocessing_distributed:``: a flag the user passes, off by default, that the
project's config files do not switch on, where the other branch can start under a launcher): ``spawngates.py``
reads these. Nor when the started function does not set up distributed training (a file-sync process).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field

from orchestrator.launchstyles.nestedspawn import spawned_by_one_rank
from orchestrator.launchstyles.spawngates import callers_checked, env_checked
from orchestrator.source.analysis import INIT, WRAPPERS, Analysis, spawn_target
from orchestrator.source.exprnames import FunctionNode, last_name
from orchestrator.source.flow import Site
from orchestrator.source.kwargs import keyword
from orchestrator.source.spawntargets import is_spawner
from orchestrator.source.walk import walk

_MP = ("torch.multiprocessing.", "multiprocessing.")
_SETS_UP = INIT | WRAPPERS
_DEPTH = 3
# Lightning's strategies that start the ranks themselves (a launched rank then starts ``devices`` more):
# by name, and by class
SPAWN_STRATEGIES = frozenset({"ddp_spawn", "ddp_notebook", "ddp_fork"})
_SPAWN_STRATEGY_CLASSES = frozenset({"DDPSpawnStrategy", "DDPSpawnShardedStrategy"})
_LIGHTNING_ROOTS = ("lightning.", "pytorch_lightning.", "lightning_fabric.")
_LIGHTNING_ENTRIES = frozenset({"Trainer", "Fabric"})


@dataclass(frozen=True)
class Spawn:
    """A spawn at ``file``:``line``: ``call`` is how it reads (``mp.spawn(nprocs=args.gpus)``, ``Trainer``);
    ``strategy`` names a framework's spawning strategy (``'ddp_spawn'``, ``DDPSpawnStrategy()``), None for a spawn
    the script makes."""

    file: str
    line: int
    call: str
    node: ast.Call = field(compare=False, repr=False)
    strategy: str | None = None


def spawns(a: Analysis, others: Sequence[Analysis] = ()) -> list[Spawn]:
    """The spawns of training processes in ``a``'s file that no launcher check keeps from running, then the
    framework spawning strategies. ``others``: the readings of the project's other helper modules, whose calls may
    hand a helper's spawner what it starts (``coreutils.main_spawner(args, main_worker)`` in a sibling module)."""
    out: list[Spawn] = []
    for site in a.flow.sites:
        target, how = _started(a, site)
        if how is None or not _trains_distributed(a, target, how, site.call, others):
            continue
        if env_checked(a, site.call) or callers_checked(a, site.function, 0) or spawned_by_one_rank(a, site):
            continue
        nprocs = _nprocs(site.call, how)
        name = ast.unparse(site.call.func)[:40]
        out.append(Spawn(a.filename, _line(site.call), f"{name}(nprocs={nprocs})" if nprocs else f"{name}(...)",
                         site.call))
    return out + _spawn_strategies(a)


def _line(node: ast.AST) -> int:
    return int(getattr(node, "lineno", 1))


def _spawn_strategies(a: Analysis) -> list[Spawn]:
    """``Trainer(strategy="ddp_spawn")``, ``Fabric(strategy="ddp_notebook")``, ``strategy=DDPSpawnStrategy()``:
    Lightning starts ``devices`` processes inside every rank the launcher started."""
    out: list[Spawn] = []
    for site in a.flow.sites:
        q = site.qual or ""
        if last_name(site.call.func) not in _LIGHTNING_ENTRIES or not q.startswith(_LIGHTNING_ROOTS):
            continue
        strategy = keyword(site.call, "strategy")
        if isinstance(strategy, ast.Name):
            _, strategy = a.module.resolve(strategy.id, strategy)
        name = _strategy_name(strategy)
        if name is not None:
            out.append(Spawn(a.filename, _line(site.call), last_name(site.call.func) or "", site.call, name))
    return out


def _strategy_name(strategy: ast.expr | None) -> str | None:
    if isinstance(strategy, ast.Constant) and isinstance(strategy.value, str):
        return strategy.value if strategy.value.split("_find_unused")[0] in SPAWN_STRATEGIES else None
    if isinstance(strategy, ast.Call) and last_name(strategy.func) in _SPAWN_STRATEGY_CLASSES:
        return f"{last_name(strategy.func)}()"
    return None


def _started(a: Analysis, site: Site) -> tuple[ast.expr | None, str | None]:
    """(the function the call starts, a short name of the call) for mp.spawn / start_processes /
    multiprocessing.Process(target=...); (None, None) for any other call."""
    q = site.qual or ""
    func = site.call.func
    if isinstance(func, ast.Name):  # runner = torch.multiprocessing.start_processes; runner(fn, ...)
        _, value = a.module.resolve(func.id, func)
        if isinstance(value, ast.Attribute | ast.Name):
            q = a.module.qualname(value) or q
    if is_spawner(q):
        return spawn_target(site.call), q.rsplit(".", 1)[1]
    if last_name(site.call.func) == "Process" and (q.startswith(_MP) or _from_context(a, site.call.func)):
        return spawn_target(site.call), "Process"
    if q in _ELASTIC:  # elastic_launch(LaunchConfig(nproc_per_node=n), entrypoint)(*args): torchrun in-process
        return site.call.args[1] if len(site.call.args) > 1 else keyword(site.call, "entrypoint"), "elastic_launch"
    return None, None


# torchrun's agent started inside the script: ``elastic_launch(config, entrypoint)(*args)`` runs nproc_per_node
# workers of ``entrypoint`` on this machine
_ELASTIC = frozenset({"torch.distributed.launcher.api.elastic_launch", "torch.distributed.launcher.elastic_launch"})


def _from_context(a: Analysis, func: ast.expr) -> bool:
    """``ctx.Process`` with ``ctx = mp.get_context("spawn")``."""
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return False
    _, value = a.module.resolve(func.value.id, func.value)
    return isinstance(value, ast.Call) and (a.module.qualname(value.func) or "").endswith(
        "multiprocessing.get_context")



def _nprocs(call: ast.Call, how: str) -> str:
    if how in ("Process", "elastic_launch"):
        return ""
    value = keyword(call, "nprocs")
    if value is None and len(call.args) >= 3:
        value = call.args[2]
    return ast.unparse(value)[:40] if value is not None else ""


def _trains_distributed(a: Analysis, target: ast.expr | None, how: str, call: ast.Call,
                        others: Sequence[Analysis] = ()) -> bool:
    """The started function sets up a process group or wraps a model (itself, through functions of this
    file or the project's helpers); a spawned function that cannot be followed counts when the file does
    (a ``Process`` target that cannot be followed is not judged: a logger, a file sync). torchrun's agent
    (``elastic_launch``) starts nothing but distributed workers: its entrypoint counts whatever it calls."""
    if how == "elastic_launch":
        return target is not None
    function = _function(a, target)
    if function is None and target is not None:  # mp.spawn(mpu.run, ...): a function of a project module
        project = (a.outer or a).project
        reach = project.reach(a.module.qualname(target)) if project is not None else None
        if reach is not None and not reach.quals.isdisjoint(_SETS_UP):
            return True
    if function is None and isinstance(target, ast.Name) and _passed_trains(a, target, others):
        return True
    if function is None:
        return target is not None and how != "Process" and a.data_parallel
    if a.flow.reaches(function, _SETS_UP) is not None or _wrapped_trains(a, function, call):
        return True
    # also under a branch on the spawn index (``if rank == 0: training(rank) else: training(rank)``)
    return any(_sets_up(a, site) for site in _sites_under(a, function, 0, set()))


def _sets_up(a: Analysis, site: Site) -> bool:
    """The call sets up a process group or wraps a model: itself, or through the project's modules; in a helper
    module, through the script's project (PointContrast's ``lib/multiprocessing.py``, whose spawned ``run`` calls
    ``lib.distributed.init_process_group``: a helper is not followed further by its own reading)."""
    if site.qual in _SETS_UP or a.helper_reaches(site, _SETS_UP):
        return True
    project = a.script_project if a.outer is not None else None
    reach = project.reach(site.qual) if project is not None and site.qual else None
    return reach is not None and not reach.quals.isdisjoint(_SETS_UP)


def _wrapped_trains(a: Analysis, function: FunctionNode, call: ast.Call) -> bool:
    """``Process(target=_wrap, args=(func, kwargs, queue))`` where ``_wrap`` calls its parameter (``func(**kwargs)``,
    as torch's own spawn does): the function handed over in ``args`` is what runs, a parameter of the spawner that
    its callers fill (TAPE's ``launch_process_group(run_train, args, ...)``)."""
    params = {p.arg for p in (*function.args.posonlyargs, *function.args.args)}
    if not any(isinstance(c.func, ast.Name) and c.func.id in params for c in walk(function) if isinstance(c, ast.Call)):
        return False
    handed = keyword(call, "args")
    return isinstance(handed, ast.Tuple) and any(
        isinstance(e, ast.Name) and _passed_trains(a, e) for e in handed.elts)


def _passed_trains(a: Analysis, target: ast.Name, others: Sequence[Analysis] = ()) -> bool:
    """``def run_distributed(fn, args): mp.spawn(fn, ...)``: a function the callers pass for the parameter (this
    file's calls, the script's calls of this helper, ``run_distributed(train_worker, args)``, or another helper
    module's, ``others``) sets up distributed training, itself or through the project's modules."""
    function = a.module.function_of(target)
    params = [p.arg for p in (*function.args.posonlyargs, *function.args.args)] if function is not None else []
    if function is None or target.id not in params:
        return False
    project = (a.outer or a).project
    for owner in (a, *([a.outer] if a.outer is not None else []), *(o for o in others if o is not a)):
        for passed in owner.passes_for(function, target.id):
            local = owner.module.functions.get(passed.id) if isinstance(passed, ast.Name) else None
            if local is not None and (owner.flow.reaches(local, _SETS_UP) is not None or any(
                    owner.helper_reaches(site, _SETS_UP) for site in _sites_under(owner, local, 0, set()))):
                return True
            reach = project.reach(owner.module.qualname(passed)) if project is not None else None
            if reach is not None and not reach.quals.isdisjoint(_SETS_UP):
                return True
    return False


def _function(a: Analysis, target: ast.expr | None) -> FunctionNode | None:
    """The file's function ``target`` names, also through a ``functools.partial`` of it (``train_fn =
    partial(distributed_train, num_gpus=n)``; ``Process(target=train_fn, args=(i,))``)."""
    if isinstance(target, ast.Name) and a.module.named_function(target.id) is None:
        _, value = a.module.resolve(target.id, target)
        target = _partial_of(a, value) or target
    target = _partial_of(a, target) or target
    if isinstance(target, ast.Name):
        return a.module.named_function(target.id)
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in ("self", "cls"):
        return a.module.functions.get(target.attr)
    return None


def _partial_of(a: Analysis, value: ast.expr | None) -> ast.expr | None:
    """The function a ``functools.partial(f, ...)`` call binds, else None."""
    if isinstance(value, ast.Call) and value.args and (a.module.qualname(value.func) or "") == "functools.partial":
        return value.args[0]
    return None


def _sites_under(a: Analysis, function: FunctionNode, depth: int, seen: set[str]) -> list[Site]:
    """The calls of ``function`` and of the functions of this file it calls (a few levels)."""
    if depth > _DEPTH or function.name in seen:
        return []
    seen.add(function.name)
    out = a.flow.sites_in(function)
    for site in list(out):
        inner = a.module.local_function(site.call)
        if inner is not None:
            out = out + _sites_under(a, inner, depth + 1, seen)
    return out


# -- launcher checks ----------------------------------------------------------------------------------
