"""DDP015: the local rank (the device, or whether to run distributed at all) taken only from the legacy
``--local_rank``/``--local-rank`` flag that ``torch.distributed.launch`` passed; DDP016: the local rank handed to
``init_process_group`` (or a ``DistributedSampler``, or compared with a list gathered over the ranks) as the global
rank (see ``check_local_rank_as_rank``). (DDP019, a failed ``init_process_group`` caught and let go, is
``rules_caughtinit.py``'s.)

torchrun and orch's launcher pass no such flag (nor does ``torch.distributed.launch --use-env``): they set
``LOCAL_RANK`` in the environment. A script that reads the flag alone keeps its default on every
rank: every rank of a node on GPU 0 (NCCL refuses duplicate GPUs), ``set_device(-1)``, a distributed
branch never taken (each rank trains alone), or argparse stopping on a ``required=True`` flag. Not reported
when the script's project (the script and the local modules it calls, as read) reads ``LOCAL_RANK`` from
the environment anywhere (``os.environ["LOCAL_RANK"]``, ``os.getenv("LOCAL_RANK", ...)``, a flag whose
default is the variable), nor when the flag is declared only for old torch versions
(``if PYTORCH_MAJOR_VERSION == 1: parser.add_argument("--local_rank", ...)``), nor when the flag's value is
never read (declared only so that the old launcher's argument parses).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.frameworkdevice import framework_binder
from orchestrator.doctor.localindex import gathered_slice_by_local_rank, global_named_local, shards_by_local_rank
from orchestrator.doctor.offslurm import OFF_SLURM, off_slurm
from orchestrator.doctor.spawned_flags import index_overwrites_flag
from orchestrator.launchstyles import localrank
from orchestrator.launchstyles.spawnrank import index_as_rank
from orchestrator.launchstyles.spawns import spawns
from orchestrator.source.analysis import COLLECTIVES, INIT
from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.argflags import local_rank_attributes
from orchestrator.source.branches import enclosing_ifs
from orchestrator.source.exprnames import dotted, last_name
from orchestrator.source.flow import Site
from orchestrator.source.names import LIGHTNING_MODULE, LIGHTNING_TRAINER
from orchestrator.source.ranks import LOCAL_ENV, LOCAL_NAMES
from orchestrator.source.walk import walk

_PER_NODE = re.compile(r"(?i)local|device_count|per_node")


def _text(a: Analysis, expr: ast.expr) -> str:
    """``expr``'s source, and the value a name holds (``world = int(os.environ["LOCAL_WORLD_SIZE"])``)."""
    value = a.module.resolve(expr.id, expr)[1] if isinstance(expr, ast.Name) else None
    return ast.unparse(expr) + (" " + ast.unparse(value) if value is not None else "")


def check_legacy_local_rank(a: Analysis) -> Iterator[Finding]:
    """DDP015 at each ``add_argument("--local_rank", ...)`` of a project that never reads LOCAL_RANK (the launch
    styles' fact, ``orchestrator.launchstyles.localrank``; a framework that binds the device makes it possible)."""
    declarations = localrank.declarations(a)
    if declarations and a.spawns and index_overwrites_flag(a):
        return  # PS-MT's worker: args.local_rank = gpu, the spawn index, before any read: the flag decides nothing
    binder = framework_binder(a) if declarations else None  # Accelerate, Lightning, Fabric: device and mode are theirs
    for declared in declarations:
        guess = binder is not None and not declared.required  # what the flag still decides there is a guess
        yield a.finding("DDP015", declared.node, f"{declared.flag_source} {declared.what} and LOCAL_RANK is never "
                                                 "read from the environment: under orch or torchrun (no flag passed) "
                                                 "every rank keeps that value; local_rank = int(os.environ.get("
                                                 "\"LOCAL_RANK\", args.local_rank))",
                        confidence="possible" if guess else None,
                        fact=f"{binder} binds the device; the flag's other uses may not matter" if guess else "")


def check_local_rank_as_rank(a: Analysis) -> Iterator[Finding]:
    """DDP016 at ``init_process_group(rank=X)`` where X holds the node-local rank (``LOCAL_RANK``, a
    ``local_rank`` passed down as ``rank``): from the second node on, two processes claim each rank. Not in a
    script that spawns its own workers (there the spawn index is the rank by design; DDP014 owns it), unless the
    function that joins is also called directly, as a launcher starts it (``main_worker(args.gpu, ngpus, args)``
    beside its ``mp.spawn(main_worker, ...)``: there ``args.rank = args.local_rank`` is the launcher's path)."""
    indexed = {id(r.call) for s in spawns(a) if (r := index_as_rank(a, s.node)) is not None} if a.spawns else set()
    for site in a.sites(INIT):  # a spawn index given as the rank is DDP016's index finding (rules_spawn)
        if a.spawns and (not _called_directly(a, site.function) or id(site.call) in indexed):
            continue
        rank = next((k.value for k in site.call.keywords if k.arg == "rank"), None)
        found: list[ast.expr] = []
        if rank is not None and holds_local(a, rank, 0, found):
            off = bool(found) and all(off_slurm(a.module, value) for value in found)
            yield a.finding("DDP016", site.call, f"rank={ast.unparse(rank)[:40]} holds the local rank", at=rank,
                            marks=frozenset({OFF_SLURM}) if off else frozenset(),
                            fact=f"rank={ast.unparse(rank)[:40]} holds the local rank {OFF_SLURM}" if off else "")
    if a.spawns:
        return
    for site in [s for s in a.flow.sites if (s.qual or "").rsplit(".", 1)[-1].endswith("Sampler")]:
        # DistributedSampler(ds, rank=LOCAL_RANK): num_replicas is the world size, so from the second node on the
        # nodes read the same shards (Cutie's, TorchRec's BERT4Rec loaders; a project's bucket sampler given
        # rank= and world_size=, MQTTS's); a per-node world (num_replicas=LOCAL_WORLD_SIZE, device_count()) is not
        rank = next((k.value for k in site.call.keywords if k.arg == "rank"), None)
        replicas = next((k.value for k in site.call.keywords if k.arg in ("num_replicas", "world_size")), None)
        if rank is None or (replicas is not None and _PER_NODE.search(_text(a, replicas))):
            continue
        if _env_local(a, rank, 0) or _flag_local(a, rank):
            yield a.finding("DDP016", site.call, f"{last_name(site.call.func)}(rank={ast.unparse(rank)[:40]}) holds "
                            "the local rank: from the second node on, nodes read the same shards", at=rank)
    yield from _gathered_vs_local(a)
    yield from _rank_from_flag(a)
    yield from shards_by_local_rank(a, _env_local)
    yield from gathered_slice_by_local_rank(a, _GATHER_INTO | _GATHER_RETURNS)
    yield from global_named_local(a)


def _flag_local(a: Analysis, expr: ast.expr) -> bool:
    """``args.local_rank`` or ``args["local_rank"]``, the value of a ``--local_rank`` flag that the file or a project
    module it imports declares (the old launcher's, and orch's local-rank-arg style's, node-local rank), or of
    transformers' ``TrainingArguments`` that one imports (``self.training_args.local_rank``, LOMO's), never set
    in the file (``args.local_rank = dist.get_rank()`` would make it the global one); ``args.rank`` where the file
    declares ``add_argument("--rank", "--local_rank")`` (ParallelWaveGAN's)."""
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and (
            expr.attr in local_rank_attributes(a.module.tree)):
        return not a.module.values_anywhere(dotted(expr) or "")
    if isinstance(expr, ast.Attribute) and expr.attr == "local_rank":
        key = dotted(expr)
        if key is None or a.module.values_anywhere(key):
            return False
        if a.module.qualname(expr) in _LIGHTNING_LOCAL or a.module.qualname(expr.value) in _LIGHTNING_LOCAL:
            return True  # Lightning's Trainer.local_rank: the node-local rank (MQTTS's self.trainer.local_rank)
    elif not (isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant)
              and expr.slice.value == "local_rank") or any(
            isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) and isinstance(n.slice, ast.Constant)
            and n.slice.value == "local_rank" for n in walk(a.module.tree)):
        return False
    roots = [a] if a.outer is None else [a, a.outer]  # a helper's: the script's project too (LOMO's trainer)
    modules = [r.module for r in roots] + [m for r in roots if r.project is not None
                                           for p in r.project.imported(r.module)
                                           if (m := r.project.read(p)) is not None]
    return any(localrank.declared_flag(m.tree) or localrank.hf_arguments(m.tree) for m in modules)


# Lightning's Trainer.local_rank, by Module.qualname: ``trainer = Trainer(...)``, ``trainer.local_rank``; or the
# Trainer a LightningModule holds, ``self.trainer`` (then ``.local_rank``)
_LIGHTNING_LOCAL = frozenset({f"{LIGHTNING_TRAINER}.local_rank", f"{LIGHTNING_MODULE}.trainer"})
_NODE_INDEX = re.compile(r"NODE|GROUP_RANK|^RANK$|PROCID")  # a node index or rank the environment gives
_FLAG_HOLDERS = frozenset({"args", "opt", "opts", "cfg", "config", "hparams", "FLAGS", "self"})


def _rank_from_flag(a: Analysis) -> Iterator[Finding]:
    """``args.rank = args.rank * world + LOCAL_RANK``: the global rank built from a command-line node index (the old
    launcher's ``--rank``/``--node_rank``, default 0) and the environment's local rank. orch and torchrun set
    ``RANK`` and pass no such flag, so every node takes offset 0: from the second node on two processes claim each
    rank. Silent on an offset read from the environment (``SLURM_NODEID``, ``GROUP_RANK``) and in a script that
    spawns its own workers (there the node index is the user's to pass: DDP014)."""
    if a.spawns or (a.outer is not None and a.outer.spawns):  # per node: the user passes the node's rank flag
        return
    for node in a.module.nodes:
        offset: ast.expr | None
        local: ast.expr | None
        assigned: ast.expr
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and isinstance(node.value, ast.BinOp):
            # args.local_rank += args.node_index * args.gpu_per_node: the local rank shifted into the global one
            target = (last_name(node.target) or "").lower()
            if not ("local" in target or target in LOCAL_NAMES) or not isinstance(node.value.op, ast.Mult):
                continue
            offset, local, assigned = node.value, node.target, node.target
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.BinOp)
                and isinstance(node.value.op, ast.Add)):
            target = (last_name(node.targets[0]) or "").lower()
            if "rank" not in target or "local" in target:
                continue
            sides = (node.value.left, node.value.right)
            offset = next((s for s in sides if isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mult)), None)
            local = next((s for s in sides if s is not offset), None)
            assigned = node.targets[0]
            if offset is None or local is None or not _env_local(a, local, 0):
                continue
        else:
            continue
        flags = [n for n in walk(offset) if isinstance(n, ast.Attribute)
                 and (dotted(n) or "").split(".")[0] in _FLAG_HOLDERS
                 and ("rank" in n.attr.lower() or "node" in n.attr.lower())]
        keys = {a.ranks.env_key(n) or "" for n in walk(offset) if isinstance(n, ast.Call | ast.Subscript)}
        if flags and not any(_NODE_INDEX.search(k) for k in keys):
            yield a.finding("DDP016", node, f"{ast.unparse(assigned)} {'+' * (assigned is local)}= "
                            f"{ast.unparse(node.value)[:50]}: the node offset comes from {ast.unparse(flags[0])}, a "
                            "flag no launcher passes per node")


_GATHER_INTO = frozenset({"torch.distributed.all_gather", "torch.distributed.all_gather_object"})
_GATHER_RETURNS = frozenset(q for q in COLLECTIVES
                            if q.rsplit(".", 1)[1] in ("all_gather", "gather", "gather_for_metrics"))


def _gathered_vs_local(a: Analysis) -> Iterator[Finding]:
    """A list gathered over all the ranks (``dist.all_gather(idx_list, idx)``, ``fabric.all_gather(x)``) indexed
    by, or compared with, the local rank: its entries are in global-rank order, so from the second node on each
    rank picks another rank's entry."""
    for site in a.flow.sites:
        names = _gathered_names(a, site)
        if not names:
            continue
        scope: ast.AST = site.function if site.function is not None else a.module.tree
        for _ in range(2):  # names derived from the gathered list: loop targets over it, values computed from it
            for node in walk(scope):
                derived = (node.target, node.iter) if isinstance(node, ast.For) else (
                    (node.targets[0], node.value) if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
                if derived is not None and _mentions(derived[1], names):
                    names |= {n.id for n in walk(derived[0]) if isinstance(n, ast.Name)}
        for node in walk(scope):
            pairs: list[tuple[ast.expr, ast.expr]] = []
            if isinstance(node, ast.Subscript) and _mentions(node.value, names):
                pairs.append((node.value, node.slice))
            elif isinstance(node, ast.Compare) and len(node.comparators) == 1:
                pairs += [(node.left, node.comparators[0]), (node.comparators[0], node.left)]
            hit = next((local for gathered, local in pairs if _mentions(gathered, names)
                        and a.ranks.source(local) == "local" and getattr(node, "lineno", 0) > site.call.lineno), None)
            if hit is not None:
                yield a.finding("DDP016", node, f"{ast.unparse(hit)[:40]} (the local rank) picks from what "
                                f"{ast.unparse(site.call.func)[:40]}() gathered in global-rank order (line "
                                f"{site.call.lineno}): from the second node on, another rank's entry")
                break


def _gathered_names(a: Analysis, site: Site) -> set[str]:
    if site.qual in _GATHER_INTO and site.call.args and isinstance(site.call.args[0], ast.Name):
        return {site.call.args[0].id}
    stmt = a.statement_of(site.call)
    if site.qual in _GATHER_RETURNS and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and (
            isinstance(stmt.targets[0], ast.Name)):
        return {stmt.targets[0].id}
    return set()


def _mentions(expr: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in walk(expr))


def _called_directly(a: Analysis, function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> bool:
    """``function`` is also called directly where the script spawns its workers: the same function (or the
    module's top level) calls it in one branch and hands it, or another worker, to ``mp.spawn`` in the other
    (``if args.multiprocessing_distributed: mp.spawn(main_worker, ...) else: main_worker(args.gpu, ...)``)."""
    if function is None:
        return False
    spawners = {id(site.function) for site in a.flow.sites if (site.qual or "").endswith("multiprocessing.spawn")}
    return any(id(site.function) in spawners and last_name(site.call.func) == function.name
               for site in a.flow.sites)


def holds_local(a: Analysis, expr: ast.expr, depth: int, found: list[ast.expr] | None = None) -> bool:
    """Whether some value ``expr`` may hold is the local rank: any assignment of the name in its scope
    (``rank = int(os.environ["LOCAL_RANK"])`` in one branch), or what the callers pass for a parameter. ``found``
    collects the values assigned that hold it (``args.rank``'s, a name's)."""
    if depth > 4:
        return False
    if a.ranks.source(expr) == "local":
        return True
    if isinstance(expr, ast.Call) and a.module.qualname(expr.func) in ("int", "str") and expr.args:
        return holds_local(a, expr.args[0], depth + 1, found)
    if isinstance(expr, ast.Attribute):  # args.rank = gpu, gpu the local rank its callers pass
        key = dotted(expr)
        held = [v for v in (a.module.values_anywhere(key) if key is not None else []) if holds_local(a, v, depth + 1)]
        if found is not None:
            found += held
        return bool(held)
    if not isinstance(expr, ast.Name):
        return False
    scope = a.module.scope_of(expr)
    values = [v for _, v in scope.assigned.get(expr.id, ()) if v is not None and v is not expr
              and not _apart(a, v, expr)]
    function = a.module.function_of(expr)
    if function is not None and expr.id in {p.arg for p in function.args.args + function.args.kwonlyargs}:
        values += a.module.argument_for(function, expr.id)
    held = [v for v in values if holds_local(a, v, depth + 1)]
    if found is not None:
        found += held
    return bool(held)


def _sides(a: Reading, node: ast.AST) -> dict[int, bool]:
    """The ``if`` statements around ``node`` in its function, each with the side it sits on (True: the body)."""
    return {id(statement): in_body for statement, in_body in enclosing_ifs(a.module.parents, node)}


def _apart(a: Reading, value: ast.AST, use: ast.AST) -> bool:
    """``value`` is assigned on one side of an ``if`` (or ``elif``) and ``use`` sits on the other: it never reaches
    the use (``if "LOCAL_RANK" in os.environ: rank = ...LOCAL_RANK`` / ``elif ...: rank = ...SLURM_PROCID``)."""
    used = _sides(a, use)
    return any(used.get(key, side) != side for key, side in _sides(a, value).items())


def _env_local(a: Reading, expr: ast.expr, depth: int) -> bool:
    """Whether ``expr`` is (traced to) the local rank read from the environment or a local-rank call: through
    assignments, ``args.x`` set anywhere in the file, the callers' arguments for a parameter, and in a helper
    the script's calls of the function. A name alone (a parameter called ``local_rank``) is not enough."""
    if depth > 6:
        return False
    if isinstance(expr, ast.Call) and a.module.qualname(expr.func) in ("int", "str") and expr.args:
        return _env_local(a, expr.args[0], depth + 1)
    if isinstance(expr, ast.IfExp):  # int(os.environ["LOCAL_RANK"]) if "LOCAL_RANK" in os.environ else 0
        return _local_or_constant(a, [expr.body, expr.orelse], depth)
    if isinstance(expr, ast.Call | ast.Subscript):
        key = a.ranks.env_key(expr)
        return key in LOCAL_ENV if key is not None else isinstance(expr, ast.Call) and a.ranks.source(expr) == "local"
    if isinstance(expr, ast.Attribute):
        key = dotted(expr)
        return key is not None and any(_env_local(a, v, depth + 1) for v in a.module.values_anywhere(key))
    if not isinstance(expr, ast.Name):
        return False
    _, value = a.module.resolve(expr.id, expr)
    if value is not None:
        # if distributed: rank = int(os.environ["LOCAL_RANK"]) / else: rank = 0 (one process)
        return _env_local(a, value, depth + 1) or (isinstance(value, ast.Constant) and any(
            _env_local(a, v, depth + 1) for v in a.module.other_branch(expr.id, expr)))
    function = a.module.function_of(expr)
    if function is None or expr.id not in {p.arg for p in function.args.args + function.args.kwonlyargs}:
        return False
    if any(_env_local(a, v, depth + 1) for v in a.module.argument_for(function, expr.id)):
        return True
    outer = a.outer  # a helper's parameter: what the script passes to the function of that name
    if outer is None:
        return False
    return any(_env_local(outer, v, depth + 1) for v in outer.passes_for(function, expr.id))


def _local_or_constant(a: Reading, values: list[ast.expr], depth: int) -> bool:
    """One of ``values`` is the local rank and the others constants (the single-process fallback)."""
    return any(_env_local(a, v, depth + 1) for v in values) and all(
        isinstance(v, ast.Constant) or _env_local(a, v, depth + 1) for v in values)
