"""DDP001 (CUDA before set_device), DDP009 (torch.load without map_location), DDP010 (device from the
global rank), DDP012 (a device context manager never entered)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.confidence import Confidence
from orchestrator.doctor.device_stores import stored_unread
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.frameworkdevice import framework_binder
from orchestrator.doctor.helper_rankattrs import script_global_attribute, script_global_parameter
from orchestrator.doctor.oneprocess import before_a_spawn, masked_to_own_gpu, undistributed_side, visible_device_masks
from orchestrator.launchstyles.spawns import spawns
from orchestrator.source.analysis import EXIT_CALLS, INIT, SET_DEVICE, WRAPPERS
from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.branches import enclosing_ifs, other_side
from orchestrator.source.exprnames import last_name
from orchestrator.source.flow import Site
from orchestrator.source.kwargs import keyword
from orchestrator.source.project import MAX_BYTES
from orchestrator.source.ranks import DeviceKind
from orchestrator.source.syspath import mentioned_in_repository
from orchestrator.source.walk import walk


def device_args(a: Reading, site: Site) -> list[ast.expr]:
    """The expressions a call uses to pick a device: ``.to(x)``, ``.cuda(x)``, ``set_device(x)``,
    ``torch.device(...)``, ``DDP(device_ids=[x])``, ``device=x``."""
    call, func = site.call, site.call.func
    found: list[ast.expr] = []
    if site.qual in SET_DEVICE or site.qual == "torch.device":
        found.extend(call.args[:1] if site.qual in SET_DEVICE else [call])
    elif isinstance(func, ast.Attribute) and func.attr in ("to", "cuda") and call.args:
        found.append(call.args[0])
    if site.qual in WRAPPERS:
        ids = keyword(call, "device_ids")
        if isinstance(ids, ast.List | ast.Tuple):
            found.extend(ids.elts)
        out = keyword(call, "output_device")
        if out is not None:
            found.append(out)
    device = keyword(call, "device")
    if device is not None and site.qual != "torch.device":
        found.append(device)
    return found


def _cuda_use(a: Reading, site: Site) -> DeviceKind | None:
    """How ``site`` puts something on a GPU (building a ``torch.device`` touches no GPU: not a use)."""
    func = site.call.func
    if site.qual in SET_DEVICE or site.qual == "torch.device":
        return None
    if isinstance(func, ast.Attribute) and func.attr == "cuda" and not site.call.args:
        return "default" if a.module.qualname(func.value) != "torch" else None
    kinds = [a.ranks.device_kind(expr) for expr in device_args(a, site)]
    if "default" in kinds:
        return "default"
    if isinstance(func, ast.Attribute) and func.attr == "cuda" and a.module.qualname(func.value) != "torch":
        return "index"
    return "index" if "index" in kinds else None


def _backend(site: Site) -> str | None:
    """``init_process_group``'s backend where it is written in (None: a name, a config's value)."""
    value = site.call.args[0] if site.call.args else keyword(site.call, "backend")
    return value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None


def _backends(a: Reading) -> list[str | None]:
    return [_backend(site) for site in a.sites(INIT)]


def _cpu_backend_only(a: Reading) -> bool:
    backends = _backends(a)
    return bool(backends) and all(b is not None and "nccl" not in b for b in backends)


_CONTEXTS = frozenset({"torch.cuda.device", "torch.accelerator.device_index"})


def _bare_context(a: Reading, site: Site) -> bool:
    """``torch.cuda.device(i)`` as a statement of its own: the context manager is built, never entered."""
    return site.qual in _CONTEXTS and isinstance(a.module.parents.get(site.call), ast.Expr)


def check_set_device(a: Analysis) -> Iterator[Finding]:
    """DDP001, once per file, at the first use of the *current* CUDA device (``.cuda()``, ``"cuda"``) with no set_device
    before it, in the script or in a helper it calls. An explicit device (``f"cuda:{local_rank}"``, ``.to(local_rank)``)
    is bound: not reported. At most a warning (orch's launcher binds each launched rank's GPU before the script
    starts). Silent where a framework (Accelerate, Lightning, Fabric) binds the device (``frameworkdevice.py``)."""
    if not a.distributed or framework_binder(a) is not None:
        return
    every = [site for site in a.flow.sites if _cuda_use(a, site) == "default"]
    if not every:
        yield from _explicit_only(a)
        return
    spawner = before_a_spawn(a, every)
    uses = [site for site in every if not (undistributed_side(a, site) or site in spawner)]
    if not uses:
        return  # the current device is used by the run of one process only (or by the spawner, before its ranks)
    first = uses[0]
    setters = [s for s in a.sites(SET_DEVICE) if not _bare_context(a, s)] + a.helper_sites(SET_DEVICE)
    setters.sort(key=lambda s: s.call.lineno)
    if setters or visible_device_masks(a):
        late = [s for s in setters if s.function is first.function and s.call.lineno > first.call.lineno]
        if late and len(late) == len(setters):
            detail = f"{ast.unparse(first.call)[:60]} before set_device at line {late[0].call.lineno}"
            yield a.finding("DDP001", first.call, detail, confidence=_under_orch(a),
                            fact=detail if a.spawns else f"{detail}; {_LAUNCHED}")
        return
    if a.unread or _unseen_binder(a, first):
        return  # a helper nobody could read may well bind the device: silence over a guess
    nowhere = a.spawns and mentioned_in_repository(Path(a.filename).resolve(), b"set_device", MAX_BYTES) is False
    yield a.finding("DDP001", first.call, f"{ast.unparse(first.call)[:60]}; no set_device in the script or its "
                                          "helpers", confidence="likely" if nowhere else "possible",
                    fact=_NOWHERE if nowhere else "no set_device in what could be read")


def _explicit_only(a: Analysis) -> Iterator[Finding]:
    """DDP001 where every device is explicit (``.to(device_id)``, ``DDP(device_ids=[device_id])``) but nothing
    binds the current device before an NCCL group: NCCL opens its communicator on the current device, GPU 0,
    in every rank (an extra process on GPU 0 under plain torchrun; orch's launcher binds it first)."""
    explicit = [site for site in a.flow.sites if _cuda_use(a, site) == "index"]
    # A script that starts its own ranks and joins NCCL with its GPUs named only in its helpers (the trainer
    # class's .cuda(rank), DDP(device_ids=[rank])): reported at the group's start.
    nccl = [site for site in a.sites(INIT) if a.spawns and _backend(site) == "nccl"]
    first = explicit[0] if explicit else nccl[0] if nccl else None
    if first is None or _cpu_backend_only(a) or not _backends(a) or visible_device_masks(a) or a.unread:
        return
    if [s for s in a.sites(SET_DEVICE) if not _bare_context(a, s)] or a.helper_sites(SET_DEVICE):
        return
    if any(keyword(site.call, "device_id") is not None for site in a.sites(INIT)) or _unseen_binder(a, first):
        return
    where = _SPAWNED if a.spawns else _LAUNCHED
    what = "names the device" if explicit else "joins NCCL"
    yield a.finding("DDP001", first.call,
                    f"{ast.unparse(first.call)[:50]} {what} but nothing binds it: NCCL opens its "
                    f"communicator on the current device, GPU 0, in every rank ({where})", confidence=_under_orch(a))


def _under_orch(a: Analysis) -> Confidence | None:
    """A launched script's DDP001 is possible (orch's launcher binds each rank's GPU first: only a plain torchrun shows
    it); one in ranks the script starts itself keeps the rule's likely (docs/doctor.md, "Between sets 38 and 39")."""
    return None if a.spawns else "possible"


# Who binds the current device: orch's launcher for the ranks it starts, nobody for a script's own (_NOWHERE: likely).
_NOWHERE = "the script starts these ranks itself and no module of its repository calls set_device"
_LAUNCHED = ("harmless under orch run/submit, whose launcher binds each rank's GPU; under torchrun or a plain "
             "launch an extra context on GPU 0")
_SPAWNED = ("the script starts these ranks itself, so no launcher binds their GPU, orch's included: every rank "
            "keeps a context on GPU 0")
_DIST_SETUP = re.compile(r"init_dist|dist_init|distributed_init|setup_dist|init_distributed|setup_distributed",
                         re.IGNORECASE)


def _unseen_binder(a: Reading, first: Site) -> bool:
    """A call the doctor cannot follow that sets up distributed training before the first CUDA use: a
    package's ``init_distributed_device(args)`` (timm binds the device there) or a dispatch into a project
    module by name (``getattr(common_utils, "init_dist_%s" % launcher)(...)``)."""
    for site in a.flow.sites:
        if site.function is first.function and site.call.lineno > first.call.lineno:
            continue
        func = site.call.func
        if isinstance(func, ast.Call) and last_name(func.func) == "getattr" and func.args:
            holder = a.module.qualname(func.args[0])
            if a.project is not None and holder is not None and a.project.find(holder) is not None:
                return True
        if a.helper(site) is None and _DIST_SETUP.search(last_name(func) or ""):
            return True
    return False


def check_unentered_context(a: Analysis) -> Iterator[Finding]:
    """DDP012: ``torch.cuda.device(i)`` / ``torch.accelerator.device_index(i)`` as a bare statement."""
    for site in a.flow.sites:
        if _bare_context(a, site):
            yield a.finding("DDP012", site.call, f"{ast.unparse(site.call)[:60]} binds nothing")


def check_load(a: Analysis) -> Iterator[Finding]:
    """DDP009: torch.load without map_location, in a distributed script that uses CUDA (in a helper module the
    script calls, a class's ``load_checkpoint`` method included, when the script does); not where each process is
    masked to its own GPU."""
    if not (a.distributed or a.framework_parallel) or not (
            _uses_cuda(a) or a.framework_parallel or (a.outer is not None and _uses_cuda(a.outer))):
        return  # a framework that prepares the model (Accelerate, Fabric) runs on a GPU per rank
    if any(masked_to_own_gpu(r) for r in (a, a.outer) if r is not None):
        return  # each process sees its own GPU alone (scGPT's CUDA_VISIBLE_DEVICES = local rank): cuda:0 is its own
    for site in a.sites(frozenset({"torch.load"})):
        if (_mapped(site.call) or a.flow.guarded(site) or _other_branch_maps(a, site.call)
                or _before_the_spawn(a, site) or _saved_on_cpu(a, site)):
            continue
        state = _loads_state(a, site.call)
        if not (state or _checkpoint_like(a, site.call.args[0] if site.call.args else keyword(site.call, "f"))):
            continue  # features or tensors saved from the CPU load onto the CPU: only checkpoints are judged
        # a state loaded into a model or kept as one is likely; a checkpoint told by its path's name alone, possible
        yield a.finding("DDP009", site.call, ast.unparse(site.call)[:60], confidence=None if state else "possible",
                        fact="its result is a model's state" if state else "a checkpoint by its path's name only")


def _saved_on_cpu(a: Reading, site: Site) -> bool:
    """The load is ``load_X``'s and the file's ``save_X`` saves CPU copies (KAIR's ``save_network``: ``state_dict[key]
    = param.cpu()``, then ``torch.save(state_dict, path)``), or every ``torch.save`` of the file saves a CPU copy
    (VLP's ``torch.save(copy.deepcopy(model).cpu().state_dict(), path)``): the checkpoint it reads holds no GPU
    tensors."""
    saves = [n for n in a.module.nodes if isinstance(n, ast.Call) and a.module.qualname(n.func) == "torch.save"]
    if saves and all(n.args and any(isinstance(c, ast.Call) and last_name(c.func) == "cpu" for c in walk(n.args[0]))
                     for n in saves):
        return True
    if site.function is None or not site.function.name.startswith("load_"):
        return False
    saver = a.module.functions.get("save_" + site.function.name.removeprefix("load_"))
    if saver is None:
        return False
    saved = [n.args[0].id for n in walk(saver) if isinstance(n, ast.Call) and a.module.qualname(n.func) == "torch.save"
             and n.args and isinstance(n.args[0], ast.Name)]
    copied = {t.value.id for n in walk(saver) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
              and last_name(n.value.func) == "cpu" for t in n.targets
              if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)}
    return bool(saved) and set(saved) <= copied


def _before_the_spawn(a: Reading, site: Site) -> bool:
    """The load runs in the process that spawns the ranks, not in a rank (TimesFM's ``get_model()`` in the function
    that then calls ``mp.spawn(setup_process, args=(world_size, model, ...))``): a function of the file that no
    spawned worker calls, names or reaches (``Reading.spawned_reach``). Unknown workers (a ``partial``, another
    module's function) tell nothing, nor does a worker also called directly; module-level code runs again in every
    child the ``spawn`` start method makes."""
    reached = a.spawned_reach
    if site.function is None or reached is None:
        return False
    holder: ast.AST | None = site.function
    while holder is not None and not (holder in a.module.top_functions.values()
                                      or holder in a.module.classes.values()):
        holder = a.module.parents.get(holder)
    if holder is None or id(holder) in reached:
        return False
    return not (isinstance(holder, ast.ClassDef) and any(id(m) in reached for m in holder.body))


def _mapped(call: ast.Call) -> bool:
    return len(call.args) >= 2 or keyword(call, "map_location") is not None


def _other_branch_maps(a: Reading, call: ast.Call) -> bool:
    """The load sits in one branch of an ``if`` whose other branch loads onto the rank's GPU (``if args.gpu is None:
    torch.load(p)``, ``else: torch.load(p, map_location=f"cuda:{args.gpu}")``) in a script that stops on a machine
    with more than one GPU unless it spawns a process per GPU (``if device_count() > 1 and not
    args.multiprocessing_distributed: return``), or whose spawn is how it trains (a ``per-node`` script:
    ``launchstyles.spawns``; FKD's ImageNet layout, whose ``--dist-url`` is not ``env://``): the branch with no GPU
    chosen runs on a single GPU, never in a spawned worker."""
    mapped = any(isinstance(n, ast.Call) and a.module.qualname(n.func) == "torch.load" and _mapped(n)
                 and not _onto_cpu(n) for statement, in_body in enclosing_ifs(a.module.parents, call)
                 for stmt in other_side(statement, in_body) for n in walk(stmt))
    return mapped and (_one_gpu_unless_spawned(a) or bool(spawns(a.outer or a)))


def _onto_cpu(call: ast.Call) -> bool:
    where = call.args[1] if len(call.args) >= 2 else keyword(call, "map_location")
    return where is not None and ("cpu" in ast.unparse(where) or isinstance(where, ast.Lambda))


def _one_gpu_unless_spawned(a: Reading) -> bool:
    """An ``if`` on more than one visible GPU (``torch.cuda.device_count() > 1``, also through a name) with no
    spawn flag, whose body stops the script (``return``, ``raise``, ``sys.exit``)."""
    for node in a.module.nodes:
        if not (isinstance(node, ast.If) and node.body and _many_gpus(a, node.test)):
            continue
        last = node.body[-1]
        if isinstance(last, ast.Return | ast.Raise) or (
                isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
                and a.module.qualname(last.value.func) in EXIT_CALLS):
            return True
    return False


def _many_gpus(a: Reading, test: ast.expr) -> bool:
    for node in walk(test):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.comparators[0], ast.Constant):
            bound, op = node.comparators[0].value, node.ops[0]
            many = (isinstance(op, ast.Gt) and bound == 1) or (isinstance(op, ast.GtE) and bound == 2)
            if many and _device_count(a, node.left):
                return True
    return False


def _device_count(a: Reading, expr: ast.expr) -> bool:
    if isinstance(expr, ast.Name):
        _, value = a.module.resolve(expr.id, expr)
        expr = value if value is not None else expr
    return isinstance(expr, ast.Call) and (a.module.qualname(expr.func) or "").endswith("device_count")


def _uses_cuda(a: Reading) -> bool:
    """The file puts something on a GPU, starts an NCCL group, or calls a helper that binds a CUDA device
    (CodeT5's ``set_dist(args)``: ``torch.cuda.set_device(args.local_rank)`` in configs.py)."""
    return any(_cuda_use(a, site) for site in a.flow.sites) or (not _cpu_backend_only(a) and bool(_backends(a))) or (
        "torch.cuda.set_device" in a.helper_quals)


_CHECKPOINT = re.compile(r"ckpt|checkpoint|resume|pretrain|weight|snapshot|model|state|finetune", re.IGNORECASE)


def _checkpoint_like(a: Reading, expr: ast.expr | None, depth: int = 0) -> bool:
    """``expr`` names a checkpoint (a name or a string that says so), where tensors saved on a GPU live."""
    if expr is None or depth > 3:
        return False
    for node in walk(expr):
        text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else (
            last_name(node) if isinstance(node, ast.Name | ast.Attribute) else None)
        if text and _CHECKPOINT.search(text):
            return True
    if isinstance(expr, ast.Name):
        _, value = a.module.resolve(expr.id, expr)
        return value is not None and _checkpoint_like(a, value, depth + 1)
    return False


def _loads_state(a: Reading, call: ast.Call) -> bool:
    """``model.load_state_dict(torch.load(p))``, ``checkpoint = torch.load(p)``: a checkpoint's tensors."""
    parent = a.module.parents.get(call)
    while isinstance(parent, ast.Subscript):  # load_state_dict(torch.load(p)["model"])
        parent = a.module.parents.get(parent)
    if isinstance(parent, ast.Call) and last_name(parent.func) in ("load_state_dict", "load"):
        return True
    if isinstance(parent, ast.Assign):
        return any(_CHECKPOINT.search(last_name(t) or "") for t in parent.targets) or _fed_to_a_model(a, parent)
    return False


def _fed_to_a_model(a: Reading, assign: ast.Assign) -> bool:
    """``data = torch.load(p)`` then ``self.net.load_state_dict(data["net"])`` in the same function: a state."""
    names = {t.id for t in assign.targets if isinstance(t, ast.Name)}
    scope = a.module.function_of(assign) or a.module.tree
    return bool(names) and any(
        isinstance(node, ast.Call) and last_name(node.func) == "load_state_dict" and node.lineno > assign.lineno
        and any(isinstance(n, ast.Name) and n.id in names for arg in node.args for n in walk(arg))
        for node in walk(scope))


def check_global_rank_device(a: Analysis) -> Iterator[Finding]:
    """DDP010, once per file, at the first device picked from the global rank where it binds the GPU (set_device)."""
    hits: list[ast.AST] = [site.call for site in a.flow.sites if any(
        a.ranks.device_from_global_rank(expr) or script_global_attribute(a, expr) or script_global_parameter(a, expr)
        for expr in [*device_args(a, site), *_device_map(site.call)]) and not stored_unread(a, site.call)]
    hits += [node for node in visible_device_masks(a) if a.ranks.device_from_global_rank(node.value)]
    bound = {a.module.function_of(n) for n in hits if isinstance(n, ast.Call) and a.module.qualname(n.func) in
             SET_DEVICE}  # where the GPU is bound: LNO's main, below its train()'s .to(device)
    hits.sort(key=lambda n: (bool(bound) and a.module.function_of(n) not in bound, getattr(n, "lineno", 0)))
    if hits:
        more = len({getattr(n, "lineno", 0) for n in hits}) - 1
        extra = f"; {more} more line{'s' * (more != 1)}" if more else ""
        first = hits[0]
        mapped = next((v for v in _device_map(first) if a.ranks.device_from_global_rank(v)), None) if isinstance(
            first, ast.Call) else None  # from_pretrained(..., device_map={"": process_index}): that line
        said = f"device_map={{'': {ast.unparse(mapped)}}}" if mapped is not None else ast.unparse(first)
        yield a.finding("DDP010", first, f"{said[:60]}{extra}", at=mapped,
                        confidence="possible" if _spawn_index_world(a) else None)


def _device_map(call: ast.Call) -> list[ast.expr]:
    """The devices a model's ``device_map={"": index}`` (``from_pretrained``) puts its modules on."""
    value = keyword(call, "device_map")
    return list(value.values) if isinstance(value, ast.Dict) else []


def _spawn_index_world(a: Analysis) -> bool:
    """The file spawns its workers and every process group it starts takes the spawn index as its rank
    (``init_process_group(rank=rank)``, ``rank`` a parameter, not ``node * gpus + rank``): a one-node world, where
    the global rank is the local one."""
    inits = a.sites(INIT)
    if not (a.spawns and inits):
        return False
    for site in inits:
        rank = keyword(site.call, "rank")
        if not isinstance(rank, ast.Name) or site.function is None:
            return False
        found, value = a.module.resolve(rank.id, rank)
        if value is not None or not found or rank.id not in {p.arg for p in site.function.args.args}:
            return False
    return True
