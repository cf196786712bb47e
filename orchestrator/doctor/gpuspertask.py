"""``--gpus-per-task K`` (K > 1) with a script that picks its GPU from the local rank: a warning.

With ``--gpus-per-task K`` each rank sees only its own K GPUs (CUDA_VISIBLE_DEVICES narrowed to them by
the launcher, ``env/devices.py``), numbered ``cuda:0`` to ``cuda:K-1``. A script written for one GPU per
rank, ``torch.cuda.set_device(local_rank)`` or ``f"cuda:{local_rank}"``, then names a GPU the rank cannot
see as soon as its LOCAL_RANK is K or more (more than K ranks on a node), and another rank's numbering
otherwise. The gate (``gate.check_script``) prints :func:`gpus_per_task_warning` for ``orch run``,
``orch submit`` and ``orch exec``; a warning, since a script may map its K devices itself.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.check import read_script
from orchestrator.doctor.rules_devices import device_args
from orchestrator.errors import OrchError
from orchestrator.source.ranks import LOCAL_NAMES
from orchestrator.source.walk import walk
from orchestrator.spec.pysource import UnreadableSource, parse_source

_MAX_DEPTH = 8
# Frameworks that put each process on cuda:LOCAL_RANK themselves (Accelerate's PartialState; the HF Trainer
# through it): the script cannot renumber them, so the fix is one GPU per rank.
FRAMEWORK_BINDERS: dict[str, str] = {
    "accelerate.Accelerator": "Accelerate", "accelerate.PartialState": "Accelerate",
    "accelerate.state.PartialState": "Accelerate", "transformers.Trainer": "the HF Trainer",
    "transformers.TrainingArguments": "the HF Trainer",
}


def _from_local_rank(a: Analysis, expr: ast.expr, depth: int = 0) -> bool:
    """Whether the device ``expr`` names is the local rank itself (``local_rank``, ``LOCAL_RANK``,
    ``f"cuda:{args.local_rank}"``); arithmetic on it (``local_rank % k``) is the script's own mapping."""
    if depth > _MAX_DEPTH or any(isinstance(n, ast.BinOp) and not isinstance(n.op, ast.Add) for n in walk(expr)):
        return False
    for node in walk(expr):
        if isinstance(node, ast.Name | ast.Attribute | ast.Call | ast.Subscript) and a.ranks.source(node) == "local":
            return True
        if isinstance(node, ast.Attribute) and node.attr in LOCAL_NAMES:
            return True
        if isinstance(node, ast.Name):
            _, value = a.module.resolve(node.id, node)
            if value is not None and value is not expr and _from_local_rank(a, value, depth + 1):
                return True
            if value is None and node.id in LOCAL_NAMES:
                return True
    return False


def _local_rank_devices(a: Analysis) -> Iterator[ast.Call]:
    for site in a.flow.sites:
        if any(a.ranks.device_kind(e) == "index" and _from_local_rank(a, e) for e in device_args(a, site)):
            yield site.call


def local_rank_device(source: str, filename: str) -> tuple[int, str, str | None] | None:
    """The first line where the script (or the framework it builds) picks its GPU from the local rank: the
    line, the call, and the framework's name (None: the script's own call); None if nowhere.
    ``source`` must parse (the gate reads the script before)."""
    a = Analysis(parse_source(source, filename), filename)
    hits: list[tuple[ast.Call, str | None]] = [
        (site.call, FRAMEWORK_BINDERS[site.qual]) for site in a.flow.sites if site.qual in FRAMEWORK_BINDERS]
    hits += [(call, None) for call in _local_rank_devices(a)]
    if not hits:
        return None
    call, framework = min(hits, key=lambda hit: hit[0].lineno)
    shown = f"{ast.unparse(call.func)}(...)" if framework is not None and (call.args or call.keywords) else None
    return call.lineno, shown or ast.unparse(call)[:80], framework


def gpus_per_task_warning(path: Path, gpus_per_task: int | None) -> str | None:
    """The warning (with its HINT) for ``--gpus-per-task K`` K > 1 and a device picked from the local rank;
    None otherwise, or when the script cannot be read (the doctor's own findings said why)."""
    k = gpus_per_task
    if k is None or k < 2:
        return None
    try:
        found = local_rank_device(read_script(path), str(path))
    except (OrchError, UnreadableSource):
        return None
    if found is None:
        return None
    line, call, framework = found
    sees = (f"each rank sees only its own {k} GPUs, cuda:0 to cuda:{k - 1}, so a rank with LOCAL_RANK >= {k} "
            "names a GPU it cannot see (invalid device ordinal)")
    if framework is not None:
        return (f"orch: warning: --gpus-per-task {k}: {path}:{line}: {framework} puts each process on "
                f"cuda:LOCAL_RANK ({call}); {sees}\n"
                f"HINT: run {framework} with one GPU per rank: leave out --gpus-per-task (orch run --nproc N, "
                "orch submit --gpus N)")
    return (f"orch: warning: --gpus-per-task {k}: {path}:{line} picks its GPU from the local rank ({call}); "
            f"{sees}\n"
            "HINT: use the rank's own GPUs by their numbers in the rank: torch.device(\"cuda\", 0) for the first "
            "(orch binds it before the script starts: torch.cuda.current_device()), or one GPU per rank "
            "without --gpus-per-task")
