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
project's config files do not switch on, where the other branch can start under a launcher), nor
when the started function does not set up distributed training (a file-sync process).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.launchstyles.envurl import ungated_reads, url_defaults
from orchestrator.launchstyles.nestedspawn import spawned_by_one_rank
from orchestrator.source.analysis import INIT, WRAPPERS, Analysis, spawn_target
from orchestrator.source.configfiles import lookup
from orchestrator.source.flow import Site
from orchestrator.source.kwargs import keyword
from orchestrator.source.names import FunctionNode, dotted, last_name
from orchestrator.source.ranks import GLOBAL_ENV, LOCAL_ENV
from orchestrator.source.spawntargets import is_spawner
from orchestrator.source.walk import walk

_MP = ("torch.multiprocessing.", "multiprocessing.")
# what a launcher sets: its presence says "already launched"
LAUNCHER_ENV = GLOBAL_ENV | LOCAL_ENV | frozenset({
    "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "GROUP_RANK",
    "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
_SETS_UP = INIT | WRAPPERS
# the launchers' world sizes (torchrun's, Slurm's, MPI's): a project that reads none never learns a launcher's world
_WORLD_VARS = frozenset({"WORLD_SIZE", "SLURM_NTASKS", "SLURM_NPROCS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
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
    return any(site.qual in _SETS_UP or a.helper_reaches(site, _SETS_UP)
               for site in _sites_under(a, function, 0, set()))


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
    if isinstance(target, ast.Name):
        return a.module.named_function(target.id)
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in ("self", "cls"):
        return a.module.functions.get(target.attr)
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

def env_checked(a: Analysis, node: ast.AST) -> bool:
    """An ``if`` around ``node`` (in its function) tests the launcher's environment or an opt-in flag, or
    an earlier ``if <env test>: ...return`` in an enclosing block leaves before it."""
    child: ast.AST = node
    current = a.module.parents.get(node)
    while current is not None and not isinstance(current, ast.ClassDef):
        if isinstance(current, ast.If | ast.While | ast.IfExp) and child is not current.test and (
                _reads_launcher(a, current.test, 0) or (opt_in(a, current.test) and not _only_way(a, current.test)
                                                        and not _else_stops(current, child))):
            return True
        for block in ("body", "orelse", "finalbody"):
            stmts = getattr(current, block, None)
            if isinstance(stmts, list) and child in stmts and any(
                    isinstance(e, ast.If) and _ends(e.body, returning=True) and _reads_launcher(a, e.test, 0)
                    for e in stmts[:stmts.index(child)]):
                return True
        if isinstance(current, FunctionNode):
            return False
        child, current = current, a.module.parents.get(current)
    return False


def callers_checked(a: Analysis, function: FunctionNode | None, depth: int) -> bool:
    """Every call of ``function`` in this file is launcher-checked (or, a level up, its caller's are)."""
    if function is None or depth > _DEPTH or a.module.spawned(function):
        return False
    callers = [s for s in a.flow.sites if a.module.local_function(s.call) is function]
    return bool(callers) and all(env_checked(a, s.call) or callers_checked(a, s.function, depth + 1)
                                 for s in callers)


def _else_stops(stmt: ast.If | ast.While | ast.IfExp, child: ast.AST) -> bool:
    """The flag's other branch stops the script (``if args.multiprocessing_distributed: mp.spawn(...)`` / ``else:
    raise NotImplementedError('Currently only DDP training')``): the spawn is the only way it trains."""
    return isinstance(stmt, ast.If) and child in stmt.body and _ends(stmt.orelse, returning=False)


def _ends(block: list[ast.stmt], returning: bool) -> bool:
    """``block`` ends by raising or exiting (``sys.exit(1)``), or by returning when ``returning``."""
    last = block[-1] if block else None
    if isinstance(last, ast.Raise) or (returning and isinstance(last, ast.Return)):
        return True
    return isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and last_name(last.value.func) in (
        "exit", "_exit")


def _reads_launcher(a: Analysis, expr: ast.expr, depth: int) -> bool:
    """``expr`` reads a variable the launcher sets (``os.environ["RANK"]``, ``"LOCAL_RANK" in os.environ``),
    itself or through the names it uses (``distributed = "WORLD_SIZE" in os.environ``). An ``or`` reads it only when
    every side does: ``args.world_size > 1 or cfg.TRAIN.distributed`` is true with no launcher too."""
    if depth > _DEPTH:
        return False
    if isinstance(expr, ast.BoolOp) and isinstance(expr.op, ast.Or):
        return all(_reads_launcher(a, value, depth) for value in expr.values)
    for node in walk(expr):
        key = a.ranks.env_key(node) if isinstance(node, ast.expr) else None
        if key is not None and key in LAUNCHER_ENV:
            return True
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and node.left.value in LAUNCHER_ENV \
                and any(a.module.qualname(c) == "os.environ" for c in node.comparators):
            return True
        if isinstance(node, ast.Name | ast.Attribute):
            key = dotted(node)
            if key is None:
                continue
            _, value = a.module.resolve(key, node)
            values = [value] if value is not None else (a.module.values_anywhere(key) if "." in key else [])
            if any(v is not expr and _reads_launcher(a, v, depth + 1) for v in values):
                return True
        if isinstance(node, ast.Call):
            function = a.module.local_function(node)
            if function is not None and any(_reads_launcher(a, r.value, depth + 1) for r in walk(function)
                                            if isinstance(r, ast.Return) and r.value is not None):
                return True
    return False


def _only_way(a: Analysis, flag: ast.expr) -> bool:
    """The opt-in flag is the script's only way to distributed training: every ``init_process_group`` of the file
    and the project modules read sits under an ``if`` on the same flag (``if args.distributed: mp.spawn(...)``
    and, in the worker, ``if args.distributed: init_process_group(...)``): without it nothing is distributed, so
    the spawn is how it must be started (not ImageNet's ``--multiprocessing-distributed``, whose other branch
    starts under a launcher)."""
    name = flag.attr if isinstance(flag, ast.Attribute) else None
    root = a.outer or a
    trees = [a.module.tree, root.module.tree]
    trees += [module.tree for _, module in root.project.helpers()] if root.project is not None else []
    unique = list({id(t): t for t in trees}.values())
    inits = [guards for tree in unique for guards in _init_guards(tree)]
    return bool(inits) and (all(any(isinstance(n, ast.Attribute) and n.attr == name for g in guards
                                    for n in walk(g)) for guards in inits) or _stops_without(a, name)
                            or _no_launcher_world(unique))


def _no_launcher_world(trees: list[ast.Module]) -> bool:
    """No file names a launcher's world size (``os.environ["WORLD_SIZE"]``) and every ``init_process_group`` is
    given its own (``world_size=args.world_size``, a ``--world-size`` flag that defaults to 1): under a launcher
    the other branch never learns how many ranks there are (undistributed, or every rank a world of its flag's
    size), so the flag's spawn is the way the script trains on several GPUs (an ImageNet-style script that reads
    ``WORLD_SIZE`` for ``--dist-url env://`` is not, unless ``--dist-url`` defaults to another URL: ``envurl.py``)."""
    defaults = url_defaults(trees)
    if any(next(ungated_reads(tree, _WORLD_VARS, defaults), None) is not None for tree in trees):
        return False  # read where the script is started as it is (not only under a --dist-url env:// passed)
    inits = [node for tree in trees for node in walk(tree)
             if isinstance(node, ast.Call) and last_name(node.func) == "init_process_group"]
    return bool(inits) and all(len(call.args) >= 4 or any(k.arg == "world_size" for k in call.keywords)
                               for call in inits)


def _stops_without(a: Analysis, name: str | None) -> bool:
    """The script stops on a machine with more than one GPU unless the flag is passed (NeWCRFs' ``if
    ngpus_per_node > 1 and not args.multiprocessing_distributed: return -1``): its other branch trains on one GPU
    alone, so under a launcher that gives each rank its GPUs the flag's spawn is the only way to train on several."""
    for node in a.module.nodes:
        if not (isinstance(node, ast.If) and node.body and isinstance(node.body[-1], ast.Return | ast.Raise)):
            continue
        tests = list(walk(node.test))
        if any(isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not) and isinstance(n.operand, ast.Attribute)
               and n.operand.attr == name for n in tests) and any(_more_than_one_gpu(a, n) for n in tests):
            return True
    return False


def _more_than_one_gpu(a: Analysis, node: ast.AST) -> bool:
    """``device_count() > 1`` (``>= 2``), also through a name set from it."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.comparators[0], ast.Constant)):
        return False
    bound, op = node.comparators[0].value, node.ops[0]
    if not ((isinstance(op, ast.Gt) and bound == 1) or (isinstance(op, ast.GtE) and bound == 2)):
        return False
    left = node.left
    if isinstance(left, ast.Name):
        _, value = a.module.resolve(left.id, left)
        left = value if value is not None else left
    return isinstance(left, ast.Call) and last_name(left.func) == "device_count"


def _init_guards(tree: ast.Module) -> list[list[ast.expr]]:
    """For each ``init_process_group(...)`` call of ``tree``: the tests of the ``if`` statements around it."""
    found: list[list[ast.expr]] = []

    def visit(node: ast.AST, tests: list[ast.expr]) -> None:
        if isinstance(node, ast.Call) and last_name(node.func) == "init_process_group":
            found.append(tests)
        for child in ast.iter_child_nodes(node):
            inner = [*tests, node.test] if isinstance(node, ast.If) and child is not node.test else tests
            visit(child, inner)

    visit(tree, [])
    return found


def opt_in(a: Analysis, test: ast.expr) -> bool:
    """A bare flag the user passes (``args.multiprocessing_distributed``), never assigned in the file nor switched
    on by the project's config files: off by default, so the spawn is asked for, not a habit."""
    if not isinstance(test, ast.Attribute):
        return False
    key = dotted(test)
    return key is not None and not a.module.values_anywhere(key) and not _configured_on(a, test.attr)


def _configured_on(a: Analysis, name: str) -> bool:
    """The project's config files set the flag's key to true, all that hold it (``multiprocessing_distributed:
    true`` in the YAML the script copies into its arguments): the spawn is the configured way to train."""
    found = lookup(Path((a.outer or a).filename), [name])
    return found is not None and found.agreed and found.value is True
