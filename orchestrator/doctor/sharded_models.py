"""An FSDP model's own collectives, for DDP002: its forward all-gathers each wrapped unit's shards (in eval and under
``no_grad`` too), and its ``state_dict()`` (the default full state dict) and ``summon_full_params()`` gather them, so
one of these made on rank 0 alone waits for ranks that never join (U-EGformer's rank-0 preview ``model(low_img)`` after
each epoch, and its rank-0 ``save_model`` with ``model.state_dict()``).

The model is FSDP where the name is bound to ``FSDP(...)`` (or an ``IfExp`` one side of which is: ``FSDP(model) if
is_distributed else model.to(rank)``), or is a function's parameter that every call in the file (and, for a helper
module, in its script) fills with such a name; ``self.model`` where any assignment in the file is one. A DDP model is
not: its forward syncs buffers only with gradients on and buffers to sync, which the reader does not weigh."""

from __future__ import annotations

import ast
import weakref

from orchestrator.source.analysis import Analysis
from orchestrator.source.exprnames import FunctionNode, dotted, positional_parameters
from orchestrator.source.flow import Site
from orchestrator.source.passedvalues import passed_values
from orchestrator.source.walk import walk

_FSDP = "torch.distributed.fsdp.FullyShardedDataParallel"
# methods of the wrapped model that gather every rank's shards
_GATHERING = frozenset({"state_dict", "summon_full_params"})
# FSDP's static methods that take the model first and gather: ``FSDP.full_optim_state_dict(model, optimizer)``
_STATIC = frozenset({f"{_FSDP}.{m}" for m in ("full_optim_state_dict", "optim_state_dict", "summon_full_params")})
# a state dict type whose state_dict() gathers nothing: each rank's own flat shard
_LOCAL_TYPE = "LOCAL_STATE_DICT"
_LOCAL: weakref.WeakKeyDictionary[Analysis, bool] = weakref.WeakKeyDictionary()  # per file read: _local_state_dicts


def sharded_collective(a: Analysis, site: Site) -> ast.Call | None:
    """The call at ``site`` (or, one level down, in the file's function it calls with the FSDP model) that gathers
    an FSDP model's shards: its forward, ``state_dict()``, ``summon_full_params()``."""
    if _gathers(a, site.call, frozenset()):
        return site.call
    target = a.module.local_function(site.call)
    if target is None:
        return None
    handed = _handed_models(a, site.call, target)
    if not handed:
        return None
    return next((call for node in target.body for call in walk(node)
                 if isinstance(call, ast.Call) and _gathers(a, call, handed)), None)


def gathering_what(a: Analysis, call: ast.Call) -> str:
    """How ``call`` gathers, for the finding's message."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _GATHERING:
        return f"the FSDP model's {func.attr}() gathers every rank's shards"
    if a.module.qualname(func) in _STATIC:
        return f"FSDP.{func.attr if isinstance(func, ast.Attribute) else '?'}() gathers every rank's shards"
    return "the FSDP model's forward all-gathers every rank's shards"


def _gathers(a: Analysis, call: ast.Call, handed: frozenset[str]) -> bool:
    """``call`` is a gathering call of an FSDP model; ``handed``: the parameters the caller fills with one."""
    func = call.func
    if a.module.qualname(func) in _STATIC:
        return bool(call.args) and _sharded(a, call.args[0], handed)
    if isinstance(func, ast.Attribute) and func.attr in _GATHERING:
        if func.attr == "state_dict" and _local_state_dicts(a):
            return False
        return _sharded(a, func.value, handed)
    if isinstance(func, ast.Name) or (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                                      and func.value.id == "self"):
        return _sharded(a, func, handed)
    return False


def _sharded(a: Analysis, expr: ast.expr, handed: frozenset[str], depth: int = 0) -> bool:
    """``expr`` is an FSDP model."""
    if isinstance(expr, ast.Call):
        return a.module.qualname(expr.func) == _FSDP
    if isinstance(expr, ast.IfExp):
        return _sharded(a, expr.body, handed, depth) or _sharded(a, expr.orelse, handed, depth)
    if isinstance(expr, ast.Name) and expr.id in handed:
        return True
    key = dotted(expr)
    if key is None or depth > 2:
        return False
    if "." in key:
        return key.startswith("self.") and any(_sharded(a, v, frozenset(), depth + 1)
                                               for v in a.module.values_anywhere(key))
    found, value = a.module.resolve(key, expr)
    if value is not None:
        return _sharded(a, value, frozenset(), depth + 1)
    function = a.module.function_of(expr)
    if not found or function is None:
        return False
    passed = passed_values(a, function, key)
    return bool(passed) and all(_sharded(holder, value, frozenset(), depth + 1) for holder, value in passed)


def _handed_models(a: Analysis, call: ast.Call, target: FunctionNode) -> frozenset[str]:
    """The parameters of ``target`` that ``call`` fills with an FSDP model, by position and keyword."""
    pairs = [*zip(positional_parameters(target, call), call.args, strict=False),
             *((k.arg, k.value) for k in call.keywords if k.arg)]
    return frozenset(name for name, value in pairs if not isinstance(value, ast.Starred)
                     and _sharded(a, value, frozenset()))


def _local_state_dicts(a: Analysis) -> bool:
    """The file sets ``StateDictType.LOCAL_STATE_DICT``: its state dicts are each rank's own shard (looked up once
    per file read)."""
    if a not in _LOCAL:
        _LOCAL[a] = any(isinstance(n, ast.Attribute) and n.attr == _LOCAL_TYPE for n in a.module.nodes)
    return _LOCAL[a]
