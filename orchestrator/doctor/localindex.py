"""DDP016 where the node-local rank stands for a global index into the world:

- a data set's own sharding: a call handed the world size as the number of shards and the node-local rank as this
  process's shard (``sharded_batch_iterator(ds, batch_size, world_size, local_rank)``, 🤗 Datasets'
  ``ds.shard(num_shards=world_size, index=local_rank)``, ``split_dataset_by_node(ds, rank=local_rank, world_size=n)``,
  also by position: ``ds.shard(dist.get_world_size(), local_rank)``):
  from the second node on the processes with the same local rank read the same shard, and the shards of the ranks
  past the first node's are never read. The arguments are told by their parameters' names: the keywords given, or
  the project function's own parameters for positional ones (a library's positional arguments are not guessed, but
  for 🤗 Datasets' two sharding calls, read by their documented names);
- the slice of gathered features an autograd function's backward keeps: ``ctx.rank = args.local_rank`` in a
  ``forward`` that all-gathers, then ``grad_output[ctx.batch_size * ctx.rank: ...]`` in ``backward`` (CLIP4Clip's
  ``AllGather`` written with the local rank): from the second node on each rank takes the gradient of another
  rank's features.

- a name that says it holds the global rank given the local one (``global_rank = accelerator.local_process_index``,
  ``self.global_rank = args.local_rank``): what it is handed to (a data set's shard, a file's name) takes the node's
  index for the world's.

A DistributedSampler's and init_process_group's rank are ``rules_launch``'s, as is an index into a list
``all_gather`` filled in the same function.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.exprnames import FunctionNode, last_name
from orchestrator.source.ranks import WORLD_ENV

_COUNT = re.compile(r"^(num_shards|n_shards|world_size|world|num_replicas|nranks|num_ranks|num_parts|num_partitions"
                    r"|num_processes)$")
_INDEX = re.compile(r"^(index|shard_index|shard_id|shard_idx|shard|rank|shard_rank|world_rank|part|partition"
                    r"|process_index|rank_id)$")
_OWNED = frozenset({"DistributedSampler", "init_process_group"})  # their rank is rules_launch's
_DEPTH = 4
_SET_UP = frozenset({"init_process_group", "set_device", "initialize_model_parallel"})
_DEVICE_CALLS = frozenset({"to", "cuda", "set_device", "device"})

LocalTest = Callable[[Reading, ast.expr, int], bool]


def shards_by_local_rank(a: Analysis, local: LocalTest) -> Iterator[Finding]:
    """DDP016 at the local rank handed to a sharding call with the world size (``local``: rules_launch's test of a
    value traced to the environment's local rank)."""
    for site in a.flow.sites:
        if (last_name(site.call.func) or "") in _OWNED:
            continue
        function = _called(a, site.call)
        if function is not None and _sets_up(function):
            continue  # setup(rank, world_size): its init_process_group is rules_launch's
        named = _named_arguments(site.call, function)
        counts = [value for name, value in named if _COUNT.match(name)]
        if not any(_world_sized(a, value, 0) for value in counts):
            continue
        index = next((value for name, value in named if _INDEX.match(name) and local(a, value, 0)
                      and (function is None or (_reads(function, name) and not _device_of(function, name)))), None)
        if index is not None:
            yield a.finding("DDP016", site.call, f"{ast.unparse(index)[:40]} holds the local rank, the shard count the "
                            "world size: from the second node on the nodes read the same shards", at=index)


# the sharding calls of 🤗 Datasets whose positional arguments are read by their documented names (a library's other
# positional arguments are not guessed): Dataset.shard(num_shards, index), split_dataset_by_node(dataset, rank,
# world_size)
_LIBRARY_POSITIONAL: dict[str, tuple[str, ...]] = {"shard": ("num_shards", "index"),
                                                   "split_dataset_by_node": ("dataset", "rank", "world_size")}


def _named_arguments(call: ast.Call, function: FunctionNode | None) -> list[tuple[str, ast.expr]]:
    """``(parameter, value)`` for the call's keywords, and for its positional arguments when it calls ``function``, a
    function of this file or of the project (its parameters' names), or one of ``_LIBRARY_POSITIONAL``."""
    named = [(k.arg, k.value) for k in call.keywords if k.arg]
    if not call.args:
        return named
    if function is None:
        known = _LIBRARY_POSITIONAL.get(last_name(call.func) or "", ())
        return named + list(zip(known, call.args, strict=False))
    params = [p.arg for p in (*function.args.posonlyargs, *function.args.args)]
    if params[:1] in (["self"], ["cls"]):
        params = params[1:]
    return named + list(zip(params, call.args, strict=False))


def _reads(function: FunctionNode, param: str) -> bool:
    """The function reads its parameter ``param`` (WF-VAE's ``gather_valid_result(..., rank, world_size)`` never reads
    its ``rank``: nothing is sharded by it)."""
    return any(isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Load) for n in ast.walk(function))


def _device_of(function: FunctionNode, param: str) -> bool:
    """The function takes its parameter ``param`` for its device (``model.to(rank)``, ``device_ids=[rank]``,
    ``f"cuda:{rank}"``, ``set_device(rank)``): the node's index of a GPU, which the local rank is (lorentz-gatr's
    ``main(world_size, global_rank, rank, args)``, its sampler handed ``global_rank``)."""
    def named(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == param

    for node in ast.walk(function):
        if isinstance(node, ast.Call) and (last_name(node.func) in _DEVICE_CALLS) and any(named(x) for x in node.args):
            return True
        if isinstance(node, ast.keyword) and node.arg in ("device_ids", "device", "output_device") and any(
                named(x) for x in ast.walk(node.value)):
            return True
        if isinstance(node, ast.JoinedStr) and any(isinstance(v, ast.Constant) and "cuda" in str(v.value)
                                                   for v in node.values) and any(named(x) for x in ast.walk(node)):
            return True
    return False


def _sets_up(function: FunctionNode) -> bool:
    """The function joins the process group or binds a device: a set-up handed the rank, not a shard."""
    return any(isinstance(n, ast.Call) and (last_name(n.func) or "") in _SET_UP for n in ast.walk(function))


def _called(a: Analysis, call: ast.Call) -> FunctionNode | None:
    own = a.module.local_function(call)
    if own is not None:
        return own
    root = a.outer if a.outer is not None else a
    qual = a.module.qualname(call.func)
    found = root.project.function(qual) if root.project is not None and qual else None
    return found[1] if found is not None else None


def _world_sized(a: Analysis, expr: ast.expr, depth: int) -> bool:
    """``expr`` is (traced to) the world size: ``dist.get_world_size()``, a project's ``get_world_size()``,
    ``os.environ["WORLD_SIZE"]``, through names (either side of an ``if``: a single-process branch may set 1)."""
    if depth > _DEPTH:
        return False
    if isinstance(expr, ast.Call):
        if (last_name(expr.func) or "") in ("int", "str") and expr.args:
            return _world_sized(a, expr.args[0], depth + 1)
        if (last_name(expr.func) or "") == "get_world_size" and not (expr.args or expr.keywords):
            return True
    key = a.ranks.env_key(expr)
    if key is not None:
        return key in WORLD_ENV
    if not isinstance(expr, ast.Name):
        return False
    _, value = a.module.resolve(expr.id, expr)
    values = ([value] if value is not None else []) + a.module.other_branch(expr.id, expr)
    return any(_world_sized(a, v, depth + 1) for v in values)


def gathered_slice_by_local_rank(a: Analysis, gathers: frozenset[str]) -> Iterator[Finding]:
    """DDP016 at ``ctx.X = <local rank>`` in the ``forward`` of an autograd function that gathers (one of ``gathers``)
    whose ``backward`` slices with ``ctx.X``."""
    for cls in a.module.classes.values():
        methods = {m.name: m for m in cls.body if isinstance(m, ast.FunctionDef)}
        forward, backward = methods.get("forward"), methods.get("backward")
        if forward is None or backward is None or not any(
                isinstance(n, ast.Call) and a.module.qualname(n.func) in gathers for n in ast.walk(forward)):
            continue
        stored = {target.attr: node for node in ast.walk(forward) if isinstance(node, ast.Assign)
                  for target in node.targets if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                  and a.ranks.source(node.value) == "local"}
        sliced = {n.attr for s in ast.walk(backward) if isinstance(s, ast.Subscript) for n in ast.walk(s.slice)
                  if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
        for attr in sorted(stored.keys() & sliced):
            node = stored[attr]
            yield a.finding("DDP016", node, f"{ast.unparse(node.value)[:40]} (the local rank) picks this rank's slice "
                            f"of the gathered features in {cls.name}.backward: from the second node on, another "
                            "rank's", at=node.value)


def global_named_local(a: Analysis) -> Iterator[Finding]:
    """DDP016 at ``global_rank = <the local rank>``: a target whose name says global rank (``global_rank``,
    ``args.global_rank``) assigned the node-local rank itself (``LOCAL_RANK``, ``accelerator.local_process_index``,
    ``args.local_rank``), not arithmetic on it (``node * 8 + local_rank``), nor a copy of another global-named value
    (``self.global_rank = global_rank``: the first one is said)."""
    for node in a.module.nodes:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        name = (last_name(node.targets[0]) or "").lower()
        if ("global" in name and "rank" in name and "global" not in ast.unparse(node.value).lower()  # not a copy
                and a.ranks.source(node.value) == "local"):
            yield a.finding("DDP016", node, f"{ast.unparse(node.targets[0])} = {ast.unparse(node.value)[:40]}: the "
                            "local rank kept as the global one: from the second node on, another node's index",
                            at=node.value)
