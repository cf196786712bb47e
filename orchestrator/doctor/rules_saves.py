"""DDP006: torch.save (save_pretrained, a checkpoint writer) on every rank, all writing one file; or of the DDP
wrapper (its keys start with 'module.')."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.confidence import PER_NODE_WRITER
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.framework_saves import (
    WRITERS,
    called_by_framework,
    framework_runs,
    saver_only,
)
from orchestrator.doctor.frameworknames import QUALIFIED, import_aliases, qualified_name
from orchestrator.doctor.own_methods import writer_method
from orchestrator.doctor.save_guards import left_at_none, unset_elsewhere
from orchestrator.doctor.save_paths import (
    data_cache,
    file_path,
    local_index_only,
    per_host,
    per_process,
    per_rank,
)
from orchestrator.doctor.saves_readback import check_readback
from orchestrator.doctor.wrapper_saves import knows_prefix, saved_wrapper
from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.exprnames import FunctionNode, dotted, last_name
from orchestrator.source.flow import Site
from orchestrator.source.ranks import RANK_NAMES, is_main_flag
from orchestrator.source.walk import walk


def check_saves(a: Analysis) -> Iterator[Finding]:
    """DDP006: torch.save (or safetensors' save_file) outside any rank condition (unless the path is per rank), or
    of the DDP wrapper; also in a script a framework runs on every rank (the HF Trainer, Lightning, Accelerate,
    Fabric: every rank runs the script's save), and in the methods a framework calls on every rank (a
    ``TrainerCallback``'s ``on_save``)."""
    framework = framework_runs(a)
    if not (a.distributed or a.framework_parallel or framework):
        return
    settled: set[int] = set()  # saves one writer per node, or under a global rank test in their function
    for site in a.sites(WRITERS):
        call = site.call
        if a.flow.never_runs(site):
            continue  # the single-process side of ``if local_rank != -1:``
        problems: list[str] = []
        wrapper = saved_wrapper(a, call.args[0]) if call.args else None
        if wrapper is not None and not knows_prefix(a):
            problems.append(f"saves the DDP wrapper {wrapper}, not {wrapper}.module: its keys start with 'module.'")
        path = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords
                                                              if k.arg in ("f", "filename")), None)
        one_path = path is not None and file_path(a, path, 0) and not (per_rank(a, path) or per_process(a, path))
        if one_path and not _guarded(a, site):
            problems.append("runs on every rank, all writing the same file")
        elif path is not None and _per_local_index(a, site, path):
            problems.append(_PER_INDEX)
        elif one_path and path is not None and _per_node_guard(a, site) and not (
                per_host(a, path, 0) or data_cache(a, call, path)):
            problems.append(_PER_NODE if _node_first_runs(a, site) else _ALL_BUT_FIRST)
        own = (site.branch or site.early_guard) is not None and not _per_node_guard(a, site)  # a global guard
        settled.update([call.lineno] if _PER_NODE in problems or (own and not problems) else [])
        if problems:
            yield a.finding("DDP006", call, "; ".join(problems), fact=_why(a, site, framework, problems),
                            marks=frozenset({PER_NODE_WRITER}) if _PER_NODE in problems else frozenset())
    yield from _per_node_savers(a, frozenset(settled))
    yield from _every_rank_pretrained(a, framework)
    yield from check_readback(a)


_PER_NODE = "guarded by the local rank: local rank 0 of every node writes the same file (one shared file system)"


_ALL_BUT_FIRST = ("runs on every rank but each node's first (the other side of a local-rank test), all writing the "
                  "same file")

_PER_INDEX = ("runs on every rank, each writing a file named by its local rank: on every node the processes with "
              "the same local rank write the same file (one shared file system)")


def _per_local_index(a: Analysis, site: Site, path: ast.expr) -> bool:
    """An unguarded save to a path numbered by the local rank alone (``final_state{gpu}.pth``), in a script whose
    ranks can span nodes (a launcher's, or a spawn offset by the node), that names no host and builds no cache."""
    if (a.spawns and not _multi_node_spawn(a)) or not file_path(a, path, 0) or per_process(a, path):
        return False
    return (local_index_only(a, path) and not _guarded(a, site) and not per_host(a, path, 0)
            and not data_cache(a, site.call, path))


def _guarded(a: Analysis, site: Site) -> bool:
    """Only some ranks run ``site``: a rank condition around it or its callers (the script's, for a helper), the
    frameworks' "this process saves" (``args.should_save``, ``@rank_zero_only``, the Trainer's ``_save``), a test of
    a value the other ranks unset (``if self.ckpt_dir is not None:``)."""
    return (a.flow.guarded(site) or unset_elsewhere(a, site.call) or _guarded_by_script(a, site)
            or saver_only(a, site) or _hook_of_guarded_save_state(a, site))


def _hook_of_guarded_save_state(a: Analysis, site: Site) -> bool:
    """``site`` is in a function handed to ``accelerator.register_save_state_pre_hook`` (it runs inside
    ``save_state``) and every ``save_state()`` of the file is under a rank condition."""
    function = site.function
    registered = function is not None and any(
        last_name(s.call.func) == "register_save_state_pre_hook" and any(
            isinstance(x, ast.Name) and x.id == function.name for x in s.call.args) for s in a.flow.sites)
    states = [s for s in a.flow.sites if last_name(s.call.func) == "save_state"]
    return registered and bool(states) and all(a.flow.guarded(s) for s in states)


def _why(a: Analysis, site: Site, framework: str | None, problems: list[str]) -> str:
    """The evidence's fact: the problems, and who runs the save on every rank when a framework does."""
    fact = "; ".join(problems)
    if problems and problems[-1] == _PER_NODE:
        return fact
    owner = site.function
    if owner is not None and called_by_framework(a, owner):
        return f"{fact} ({framework or 'the framework'} calls {owner.name} on every rank)"
    if framework is not None and not a.distributed and problems:
        return f"{fact} ({framework} runs this code on every rank)"
    return fact


def _every_rank_pretrained(a: Analysis, framework: str | None) -> Iterator[Finding]:
    """``model.save_pretrained(output_dir)`` (Hugging Face, PEFT) with no rank condition around it in a
    distributed script, or under a local-rank one: every rank (every node's local rank 0) writes the same files (the
    Trainer's own ``save_model`` checks the rank)."""
    for site in a.flow.sites:
        func = site.call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "save_pretrained" and site.call.args):
            continue
        if per_rank(a, site.call.args[0]) or not file_path(a, site.call.args[0], 0):
            continue
        if any(k.arg == "is_main_process" for k in site.call.keywords):
            continue  # save_pretrained(..., is_main_process=accelerator.is_main_process): it writes on that rank only
        per_node = False
        if not _guarded(a, site):
            problem = "save_pretrained runs on every rank, all writing the same files"
        elif _per_node_guard(a, site) and not per_host(a, site.call.args[0], 0):
            problem, per_node = "save_pretrained " + _PER_NODE.replace("the same file ", "the same files "), True
        else:
            continue
        yield a.finding("DDP006", site.call, problem, fact=_why(a, site, framework, [problem]),
                        marks=frozenset({PER_NODE_WRITER}) if per_node else frozenset())


_SAVER = re.compile(r"saver|checkpoint", re.IGNORECASE)


def _per_node_savers(a: Analysis, reported: frozenset[int]) -> Iterator[Finding]:
    """``if args.local_rank == 0: saver = CheckpointSaver(...)`` then ``saver.save_checkpoint(...)``: a
    checkpoint writer (timm's, a project's) made on every node's local rank 0 writes the same files (``reported``: the
    file's saves one writer per node already, or under a global rank test in their own function)."""
    made = {id(site.call): site for site in a.flow.sites}
    for site in a.flow.sites:
        func = site.call.func
        if not (isinstance(func, ast.Attribute) and func.attr.lstrip("_").startswith("save")
                and isinstance(func.value, ast.Name)):
            continue
        _, value = a.module.resolve(func.value.id, func.value)
        creation = made.get(id(value)) if isinstance(value, ast.Call) else None
        if creation is not None and _SAVER.search(last_name(creation.call.func) or "") and (
                _per_node_guard(a, creation)):
            yield a.finding("DDP006", site.call, f"{func.value.id} is made only where the local rank is 0 "
                                                 f"(line {creation.call.lineno}): one writer per node, the same files",
                            marks=frozenset({PER_NODE_WRITER}))
        elif ((_SAVER.search(func.attr) or _accelerator_state(a, site.call) or _own_writer(a, site.call, reported))
              and func.value.id not in a.module.aliases
              and _per_node_guard(a, site) and _node_first_runs(a, site)):  # not the `else` of `if local_rank == 0:`
            # checkpointer.save_checkpoint(epoch=epoch) under `if rank == 0:` where rank is LOCAL_RANK: a guess from
            # the method's name, unless it is a method of the project's own class that reaches a torch.save (then
            # any ``save*`` name: CLIP-ViL's ``self.save("BEST")``), or Accelerate's save_state (it writes the model,
            # optimizer and RNG files into the folder it is given)
            if writer_method(a, site.call) is not None and not _own_writer(a, site.call, reported):
                continue  # the file's own method, whose saves are reported as one writer per node
            sure = _own_writer(a, site.call) or _accelerator_state(a, site.call)
            yield a.finding("DDP006", site.call, f"{func.value.id}.{func.attr}() runs only where the local rank is "
                                                 "0: one writer per node, the same files",
                            confidence="likely" if sure else "possible",
                            marks=frozenset({PER_NODE_WRITER}) if sure else frozenset())


def _own_writer(a: Analysis, call: ast.Call, reported: frozenset[int] = frozenset()) -> bool:
    """``call`` runs a method of the project's own class that reaches a ``torch.save`` (not one of this file holding
    a save already ``reported`` as one writer per node, through the guard around this call)."""
    method = writer_method(a, call)
    return method is not None and (method.module is not a.module or not any(
        method.node.lineno <= line <= (method.node.end_lineno or line) for line in reported))


def _accelerator_state(a: Analysis, call: ast.Call) -> bool:
    """``accelerator.save_state(path)`` on an ``Accelerator()`` of this file: its files are written by the process
    that calls it (by the main one among those that do), so under ``is_local_main_process`` every node writes them."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "save_state" and isinstance(func.value, ast.Name)):
        return False
    _, value = a.module.resolve(func.value.id, func.value)
    return isinstance(value, ast.Call) and QUALIFIED.get(
        qualified_name(value.func, import_aliases(a.module.tree)) or "") == "accelerate"


def _guarded_by_script(a: Reading, site: Site) -> bool:
    """In a helper module: the script calls the function around ``site`` only under a rank condition (or
    not at all, as far as can be seen: then nothing says every rank runs it)."""
    if a.outer is None or site.function is None or called_by_framework(a, site.function):
        return False  # (a framework calls it on every rank: a callback's on_save, a Trainer's _save_checkpoint)
    return _script_guarded(a, site.function, site.call, 0)


def _script_guarded(a: Reading, function: FunctionNode, node: ast.AST, depth: int) -> bool:
    """Every way the script reaches ``node`` in ``function`` is guarded: its own calls of it, and the helper's calls
    of it from functions (methods: ``Trainer.train`` calling ``self.save``) that the script reaches unguarded. A call
    that leaves a parameter at its None default which ``node``'s block needs (``if model is not None:``) does not
    reach ``node``."""
    assert a.outer is not None
    outer = a.outer

    def reaches_unguarded(where: Reading, site: Site) -> bool:
        return not (where.flow.guarded(site) or unset_elsewhere(where, site.call)
                    or left_at_none(function, node, site.call, a.module))
    calls = [s for s in outer.flow.sites if last_name(s.call.func) == function.name]
    inner = [s for s in a.flow.sites if a.module.local_function(s.call) is function]
    if depth > 3 or any(reaches_unguarded(outer, s) for s in calls):
        return depth > 3
    return all(not reaches_unguarded(a, s) or (s.function is not None and _script_guarded(
        a, s.function, s.call, depth + 1)) for s in inner)


# "this is the node's first process": helpers and flags that test the local rank
LOCAL_MAIN = frozenset({"is_local_master", "is_local_main_process", "is_local_main", "local_master",
                        "is_local_rank0", "is_local_rank_zero", "is_local_zero", "is_node_master", "local_main",
                        "is_local_process_zero"})


def _per_node_guard(a: Reading, site: Site) -> bool:
    """The rank condition around ``site`` in its function tests only a local rank (``local_rank == 0``,
    ``args.gpu == 0``, ``dist.is_local_master()``)."""
    if a.spawns and not _multi_node_spawn(a):
        return False  # mp.spawn on one node, where the local rank is the global one
    tests = [(a, t) for t in _guard_tests(a, site, 0)]
    if not tests and a.outer is not None and site.function is not None:  # a helper: the script's guards
        outer = a.outer
        calls = [s for s in outer.flow.sites if last_name(s.call.func) == site.function.name]
        found = [_guard_tests(outer, s, 0) for s in calls]
        if not calls or not all(found):
            return False
        tests = [(outer, t) for ts in found for t in ts]
    if not tests:
        return False
    # a guard's name that holds a rank test is what it holds (``is_main = local_rank == 0``), not what it is called
    parts = [(where, part) for where, t in tests
             for part in (t.values if isinstance(t, ast.BoolOp) and isinstance(t.op, ast.And) else [t])]
    tests = [(where, held) for where, t in parts for held in (_held_tests(where, t) or [t])]
    # a rank modulo a node's count (SFA3D's ``rank % ngpus_per_node == 0``, ``% 8``, ``% device_count()``) is the
    # node-local index: what it holds is local (not ``rank % world_size``: rank 0 alone)
    modulo = {id(n.left) for _, t in tests for n in walk(t) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)
              and (isinstance(n.right, ast.Constant) or _NODE_COUNT.search(ast.unparse(n.right)))}
    kinds = {"local" if id(n) in modulo and guard_kind(where, n) in ("global", "rankish") else guard_kind(where, n)
             for where, t in tests for n in walk(t)
             if isinstance(n, ast.Name | ast.Attribute | ast.Call | ast.Subscript)}
    kinds.discard(None)
    return kinds == {"local"}


_NODE_COUNT = re.compile(r"gpu|per_node|device_count|nproc|local", re.IGNORECASE)


def guard_kind(a: Reading, node: ast.Name | ast.Attribute | ast.Call | ast.Subscript) -> str | None:
    """``local`` for a node-local rank or flag (``local_rank``, ``is_local_process_zero``), ``global`` for a main
    process flag (``is_world_process_zero``, ``args.should_save``), else what rank it holds."""
    name = last_name(node.func if isinstance(node, ast.Call) else node)
    if name in LOCAL_MAIN:
        return "local"
    if is_main_flag(name) or name == "should_save":
        return "global"
    return a.ranks.source(node)


def _held_tests(a: Reading, test: ast.expr) -> list[ast.expr]:
    """The rank tests a guard's name or attribute holds (``self.chief = args.local_rank in (-1, 0)``, ``first =
    rank == 0``, a parameter its callers fill with one): what it tests is theirs."""
    if isinstance(test, ast.Name):
        _, value = a.module.resolve(test.id, test)
        values = [value] if value is not None else a.module.passed_for(test)
    elif isinstance(test, ast.Attribute):
        values = a.module.values_anywhere(dotted(test) or "")
    else:
        return []
    values = [_as_test(v) for v in values]
    return [v for v in values if v is not test and a.ranks.is_condition(v)]


def _as_test(value: ast.expr) -> ast.expr:
    """``True if local_rank == 0 else False`` is its test (SIMPL's ``is_main``); ``False if C else True`` is ``not
    C``."""
    if isinstance(value, ast.IfExp) and isinstance(value.body, ast.Constant) and isinstance(value.orelse, ast.Constant):
        if value.body.value is True and value.orelse.value is False:
            return value.test
        if value.body.value is False and value.orelse.value is True:
            return ast.UnaryOp(op=ast.Not(), operand=value.test)
    return value


def _multi_node_spawn(a: Reading) -> bool:
    """The spawned ranks span nodes: the global rank is a node's offset plus the spawn index
    (``args.rank = args.rank * ngpus_per_node + gpu``, ``rank = args.nr * args.gpus + gpu``, ``args.rank += gpu``),
    so the spawn index is a local rank."""
    for node in a.module.nodes:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add):
            targets, parts = node.targets, [node.value.left, node.value.right]
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            targets, parts = [node.target], [node.value]
        else:
            continue
        if any(_held_name(t).lower() in RANK_NAMES for t in targets) and any(
                a.ranks.source(p) == "local" for p in parts):
            return True
    return False


def _held_name(target: ast.expr) -> str:
    """The name a rank is kept under: ``rank``, ``args.rank``, CurricularFace's ``cfg["RANK"]``."""
    key = target.slice if isinstance(target, ast.Subscript) else None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else last_name(target) or ""


def _node_first_runs(a: Reading, site: Site) -> bool:
    """The side of the local-rank test around ``site`` is the one local rank 0 takes (``if local_rank == 0:``'s
    body, ``if local_rank != 0:``'s ``else``); so taken when it cannot be told."""
    return site.branch is None or site.branch.taken_at_rank_zero(a.ranks) is not False


def _guard_tests(a: Reading, site: Site, depth: int) -> list[ast.expr]:
    """The rank conditions that guard ``site``: around it, or around every call of its function."""
    if site.branch is not None:
        return [site.branch.node.test]
    if site.early_guard is not None:
        return [site.early_guard.test]
    if depth > 3 or site.function is None or site.function not in a.flow.guarded_functions:
        return []
    tests: list[ast.expr] = []
    for caller in a.flow.sites:
        if a.module.local_function(caller.call) is site.function:
            found = _guard_tests(a, caller, depth + 1)
            if not found:
                return []
            tests += found
    return tests
