"""Signs that a framework script is meant to run on several GPUs or nodes (rules_layout.py reports a layout stuck
at one node only in such a script): it works with ranks or names a parallel strategy, or asks for every GPU of
the machine (``devices=torch.cuda.device_count()``, ``devices=-1``/``"auto"`` written in or a flag's default, or
``accelerator="gpu"`` with the devices left to Lightning's ``"auto"``, or both left out in Lightning 2, whose
``Trainer()`` takes every GPU of a GPU node): on one node that is all of them, and with
``num_nodes`` left at 1 the run cannot grow past the node."""

from __future__ import annotations

import ast

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.layoutconfig import PARALLEL
from orchestrator.doctor.rules_rendezvous_computed import DEVICE_COUNT
from orchestrator.source.argflags import declared_flags
from orchestrator.source.walk import walk

# names whose use shows the script works with ranks (the framework's or torch.distributed's)
RANK_NAMES = frozenset({"global_rank", "world_size", "is_global_zero", "local_rank", "node_rank", "all_gather",
                        "all_reduce", "barrier", "DistributedSampler", "sync_dist", "broadcast",
                        "DDPStrategy", "FSDPStrategy", "DeepSpeedStrategy", "DDPPlugin", "DDPShardedPlugin"})
_EVERY = frozenset({-1, "-1", "auto"})
_GPU = frozenset({"gpu", "cuda"})
_LIGHTNING_2 = ("lightning.pytorch.", "lightning.fabric.", "lightning.Trainer", "lightning.Fabric")  # not 1.x's names


def rank_use(tree: ast.Module) -> bool:
    """The file works with ranks or a parallel strategy (a sign it is meant to run on several GPUs or nodes)."""
    for node in walk(tree):
        if isinstance(node, ast.Attribute) and (node.attr in RANK_NAMES or (
                node.attr == "launch" and isinstance(node.value, ast.Name) and "fabric" in node.value.id.lower())):
            return True
        if isinstance(node, ast.Name) and node.id in RANK_NAMES:
            return True
        if isinstance(node, ast.keyword) and node.arg == "sync_dist":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 40 and (
                PARALLEL.search(node.value)):
            return True
    return False


def strategy_parallel(call: ast.Call) -> bool:
    return any(k.arg in ("strategy", "plugins", "accelerator") and PARALLEL.search(ast.unparse(k.value))
               for k in call.keywords)


def every_gpu(a: Analysis, call: ast.Call, devices_left_out: bool) -> bool:
    """The Trainer/Fabric call asks for every GPU of the machine: its ``devices``/``gpus`` calls
    ``torch.cuda.device_count()`` or is -1/"auto" written in, or (the devices left out) its ``accelerator`` names
    the GPU."""
    given = {k.arg: k.value for k in call.keywords if k.arg}
    asked = given.get("devices", given.get("gpus"))
    if asked is not None:
        return any(isinstance(n, ast.Call) and a.module.qualname(n.func) in DEVICE_COUNT for n in walk(asked)) or (
            _literal(asked) in _EVERY) or _flag_default(a, asked) in _EVERY
    if isinstance(call.func, ast.Attribute) and call.func.attr == "from_argparse_args" and call.args:
        # Trainer.from_argparse_args(args): the devices are the parser's --devices/--gpus flag (LLaRA's default -1)
        return any(_declared_default(a, attribute) in _EVERY for attribute in ("devices", "gpus"))
    accelerator = given.get("accelerator")
    if devices_left_out and (accelerator is None or _literal(accelerator) == "auto"):  # Lightning 2's defaults: "auto"
        return (a.module.qualname(call.func) or "").startswith(_LIGHTNING_2)
    return devices_left_out and accelerator is not None and any(
        isinstance(n, ast.Constant) and n.value in _GPU for n in walk(accelerator))


def _flag_default(a: Analysis, expr: ast.expr) -> object:
    """The default of the flag ``expr`` reads (``args.devices`` of ``add_argument("--devices", default="auto")``: Pyro's
    Lightning example), where the file sets it nowhere else; else None."""
    if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)) or a.module.values_anywhere(
            f"{expr.value.id}.{expr.attr}"):
        return None
    return _declared_default(a, expr.attr)


def _declared_default(a: Analysis, attribute: str) -> object:
    """The default written in for the file's flag that fills ``attribute`` (argparse's first such flag); else None."""
    for flag in declared_flags(a.module.tree):
        if flag.attribute == attribute and "default" in flag.keywords:
            return _literal(flag.keywords["default"])
    return None


def _literal(expr: ast.expr) -> object:
    """The value written in (``-1``, ``"auto"``), else None."""
    try:
        value: object = ast.literal_eval(expr)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, int | str) else None
