"""DDP008, a world sized by one node's GPU ids: ``init_process_group(..., world_size=len(args.gpus))`` where
``--gpus`` takes the ids of the GPUs to use (``nargs="+"``: dyMEAN's ``--gpus 0 1``) and the launcher's
``WORLD_SIZE`` is never read. Under torchrun (or orch's launcher) on one node, with every process's GPU listed, the
size is right; across nodes the launcher starts nodes x GPUs ranks into a group told it has one node's, and the
rendezvous fails. A warning, likely (a user may list as many ids as the whole run has processes); across nodes an
error (``feasibility.across_nodes``, by the mark ``ONE_NODE_WORLD``). A spawning script's world is
``rules_spawnworld``'s (its spawn starts the one node's processes)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.launcherflags import LAUNCHER_READS, flag_declaration, reads_env
from orchestrator.doctor.rules_spawnworld import ONE_NODE_WORLD
from orchestrator.source.analysis import INIT
from orchestrator.source.exprnames import dotted, last_name

_IDS = re.compile(r"gpu|device|cuda", re.IGNORECASE)  # a flag of GPU ids by its name
_DEPTH = 3


def check_gpu_list_world(a: Analysis) -> Iterator[Finding]:
    """DDP008 at an ``init_process_group`` whose ``world_size`` is the count of a flag's GPU ids."""
    if a.spawns or (a.outer is not None and a.outer.spawns) or reads_env(a, LAUNCHER_READS["world_size"][0]):
        return
    for site in a.sites(INIT):
        size = next((k.value for k in site.call.keywords if k.arg == "world_size"), None)
        flag = _ids_flag(a, size, 0) if size is not None else None
        if flag is not None and size is not None:
            yield a.finding("DDP008", site.call, f"world_size={ast.unparse(size)}: the count of the GPU ids {flag} "
                                                 "lists, one node's; WORLD_SIZE is never read",
                            confidence="likely", marks=frozenset({ONE_NODE_WORLD}))


def _ids_flag(a: Analysis, expr: ast.expr, depth: int) -> str | None:
    """``--gpus`` when ``expr`` is ``len(args.gpus)`` (through ``int()`` and names) of a flag that takes several
    values and is named for GPUs."""
    if depth > _DEPTH:
        return None
    if isinstance(expr, ast.Call) and last_name(expr.func) == "int" and len(expr.args) == 1:
        return _ids_flag(a, expr.args[0], depth + 1)
    if isinstance(expr, ast.Name):
        _, value = a.module.resolve(expr.id, expr)
        return _ids_flag(a, value, depth + 1) if value is not None else None
    if not (isinstance(expr, ast.Call) and last_name(expr.func) == "len" and len(expr.args) == 1):
        return None
    listed = expr.args[0]
    if not isinstance(listed, ast.Attribute) or not _IDS.search(listed.attr) or a.module.values_anywhere(
            dotted(listed) or ""):
        return None
    call = flag_declaration(a, listed.attr)
    several = call is not None and any(k.arg == "nargs" and isinstance(k.value, ast.Constant)
                                       and k.value.value in ("+", "*") for k in call.keywords)
    return next((str(x.value) for x in call.args if isinstance(x, ast.Constant)), None) if several and call else None
