"""Whether a spawn of training processes is kept from running under a launcher (``spawns.spawns``'s gates): an ``if``
around the call that reads the launcher's environment (``if "LOCAL_RANK" not in os.environ: mp.spawn(...)``), an
earlier ``if <env test>: ... return``, or an opt-in flag the user passes (``if args.multiprocessing_distributed:``,
off by default, not switched on by the project's config files) whose other branch can start under a launcher.

A spawn on the side an opt-in flag left off takes (``if args.debugmode: run_one(...) else: mp.Process(...)``) is the
default, not gated; nor is a flag's spawn that is the script's only way to train distributed (every
``init_process_group`` under the same flag, the other branch stopping, or no launcher's world size read anywhere).
"""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator.launchstyles.envurl import ungated_reads, url_defaults
from orchestrator.source.analysis import Analysis
from orchestrator.source.branches import statements_before
from orchestrator.source.configfiles import lookup
from orchestrator.source.exprnames import FunctionNode, dotted, last_name
from orchestrator.source.ranks import GLOBAL_ENV, LOCAL_ENV
from orchestrator.source.walk import walk

# what a launcher sets: its presence says "already launched"
LAUNCHER_ENV = GLOBAL_ENV | LOCAL_ENV | frozenset({
    "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "GROUP_RANK",
    "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
# the launchers' world sizes (torchrun's, Slurm's, MPI's): a project that reads none never learns a launcher's world
_WORLD_VARS = frozenset({"WORLD_SIZE", "SLURM_NTASKS", "SLURM_NPROCS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
_DEPTH = 3


def env_checked(a: Analysis, node: ast.AST) -> bool:
    """An ``if`` around ``node`` (in its function) tests the launcher's environment or an opt-in flag, or
    an earlier ``if <env test>: ...return`` in an enclosing block leaves before it."""
    child: ast.AST = node
    current = a.module.parents.get(node)
    while current is not None and not isinstance(current, ast.ClassDef):
        if isinstance(current, ast.If | ast.While | ast.IfExp) and child is not current.test and (
                _reads_launcher(a, current.test, 0) or (opt_in(a, current.test) and not _only_way(a, current.test)
                                                        and not _else_stops(current, child)
                                                        and not _off_side(a, current, child))):
            return True
        if any(isinstance(e, ast.If) and _ends(e.body, returning=True) and _reads_launcher(a, e.test, 0)
               for e in statements_before(current, child)):
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


def _off_side(a: Analysis, stmt: ast.If | ast.While | ast.IfExp, child: ast.AST) -> bool:
    """``child`` is the side an opt-in flag left off takes (``if args.debugmode: run_one(...)`` / ``else:
    mp.Process(...)``): the spawn is the default, not asked for; unless the flag's own side reads a launcher's
    variables (``if args.multi_node: ... os.environ["RANK"]``): the flag then switches to the launcher's path, and the
    one-node spawn is the other way to start the same script."""
    if isinstance(stmt, ast.IfExp):
        return child is stmt.orelse and not _reads_launcher(a, stmt.body, 0)
    return isinstance(stmt, ast.If) and child in stmt.orelse and not any(
        _reads_launcher(a, node, 0) for s in stmt.body for node in walk(s) if isinstance(node, ast.expr))


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
            if any(v is not expr and _reads_launcher(a, v, depth + 1) for v in a.module.held(key, node, "." in key)):
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
    return bool(inits) and (all(any(_names_flag(n, name) for g in guards for n in walk(g)) for guards in inits)
                            or _stops_without(a, name) or _no_launcher_world(unique))


def _names_flag(node: ast.AST, name: str | None) -> bool:
    """``args.distributed``, or a name ``distributed`` (a parameter the flag is passed as)."""
    return (isinstance(node, ast.Attribute) and node.attr == name) or (isinstance(node, ast.Name) and node.id == name)


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
    """For each ``init_process_group(...)`` call of ``tree``: the tests of the ``if`` statements around it, and where
    its function (``def setup_distributed(...)``) has none around it, those around the function's calls in the file
    (``if args.distributed: setup_distributed(...)``; one list per call, or per place it is handed on: a spawn's
    target)."""
    found: list[tuple[list[ast.expr], str | None]] = []
    calls: dict[str, list[list[ast.expr]]] = {}

    def visit(node: ast.AST, tests: list[ast.expr], taken: list[ast.expr], function: str | None) -> None:
        """``tests``: every ``if`` around (either side); ``taken``: those whose true side holds the node."""
        if isinstance(node, ast.Call) and last_name(node.func) == "init_process_group":
            found.append((tests, function))
        elif isinstance(node, ast.Call) and (called := last_name(node.func)) is not None:
            calls.setdefault(called, []).append(taken)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):  # handed on (a spawn's target): a call too
            calls.setdefault(node.id, []).append(taken)
        if isinstance(node, FunctionNode):
            function = node.name
        for child in ast.iter_child_nodes(node):
            inner = [*tests, node.test] if isinstance(node, ast.If) and child is not node.test else tests
            on_true = [*taken, node.test] if isinstance(node, ast.If) and child in node.body else taken
            visit(child, inner, on_true, function)

    visit(tree, [], [], None)
    return [guards for tests, function in found
            for guards in ([tests] if tests else calls.get(function or "") or [tests])]


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
