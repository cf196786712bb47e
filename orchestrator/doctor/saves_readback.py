"""DDP006: a file one rank writes and every rank reads back at once, with no barrier between (PyTorch's DDP tutorial
puts ``dist.barrier()`` there): the other ranks can read a missing or half-written file.

    if rank == 0:                                     @rank_zero_only
        torch.save(model.state_dict(), path)          def save_init(model, path): torch.save(..., path)
    model.load_state_dict(torch.load(path))           save_init(model, path); sd = torch.load(path)

The write is a ``torch.save`` (or safetensors' ``save_file``) under a rank condition, or a call of a function that
writes and runs on the main process only (``@rank_zero_only``, in the file or a project module); the read is a
``torch.load`` of the same path, later in the same function and loop, on every rank; nothing between them waits for
the ranks (a collective, a ``backward()``, a call that reaches one, or a helper named for it: ``synchronize()``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.framework_saves import MAIN_ONLY, WRITERS, saver_only
from orchestrator.doctor.save_paths import LOADS, path_forms
from orchestrator.source.analysis import COLLECTIVES
from orchestrator.source.exprnames import FunctionNode, last_name
from orchestrator.source.flow import Site

_WAITS = re.compile(r"barrier|synchron|wait_for|sync$", re.IGNORECASE)  # a helper named for waiting on the ranks


def check_readback(a: Analysis) -> Iterator[Finding]:
    for load in a.sites(LOADS):
        if not load.call.args or a.flow.guarded(load) or saver_only(a, load):
            continue
        for write in a.flow.sites_in(load.function):
            if write.call.lineno >= load.call.lineno or write.loops != load.loops:
                continue
            paths = _written_paths(a, write)
            if paths and _same_path(a, paths, load.call.args[0]) and not _waits_between(a, write, load):
                yield a.finding("DDP006", load.call,
                                f"reads back the file one rank writes at line {write.call.lineno} with no barrier "
                                f"between: the other ranks can read it missing or half-written",
                                fact=f"written by one rank at line {write.call.lineno} "
                                     f"(`{ast.unparse(write.call.func)}`), read here by every rank")
                break


def _written_paths(a: Analysis, site: Site) -> list[ast.expr]:
    """The paths ``site`` writes on one rank only: a guarded ``torch.save``'s file, or the arguments of a call of a
    main-process-only function that writes (``@rank_zero_only``)."""
    call = site.call
    if site.qual in WRITERS:
        one_rank = a.flow.guarded(site) or saver_only(a, site)
        return call.args[1:2] if one_rank and len(call.args) > 1 else []
    function = a.module.local_function(call)
    if function is not None:
        writes = a.flow.reaches(function, WRITERS) is not None
    else:
        function = _project_function(a, site)
        writes = a.helper_reaches(site, WRITERS)
    if function is None or not writes:
        return []
    if a.flow.guarded(site) or _main_only(function):
        return [*call.args, *(k.value for k in call.keywords)]
    return []


def _project_function(a: Analysis, site: Site) -> FunctionNode | None:
    """The project module's function ``site`` calls (``from src.trainer import generate_init_weight``)."""
    if a.project is None or site.qual is None:
        return None
    where = a.project.split(site.qual)
    module = a.project.read(where[0]) if where is not None else None
    if module is None or where is None:
        return None
    return next((n for n in module.tree.body if isinstance(n, FunctionNode) and n.name == where[1]), None)


def _main_only(function: FunctionNode) -> bool:
    return any(last_name(d.func if isinstance(d, ast.Call) else d) in MAIN_ONLY for d in function.decorator_list)


def _same_path(a: Analysis, written: list[ast.expr], read: ast.expr) -> bool:
    reads = path_forms(a, read)
    return any(not reads.isdisjoint(path_forms(a, path)) for path in written
               if not isinstance(path, ast.Constant) or isinstance(path.value, str))


def _waits_between(a: Analysis, write: Site, load: Site) -> bool:
    """A call between the two (in the same function) waits for the ranks: a collective, a backward pass, a call
    that reaches a collective, or a helper named for waiting."""
    for site in a.flow.sites_in(load.function):
        between = write.call.lineno < site.call.lineno < load.call.lineno
        if not (between or (site is write and site.qual not in WRITERS)):  # (a writing helper may wait itself)
            continue
        name = last_name(site.call.func) or ""
        if (site.qual in COLLECTIVES or name == "backward" or _WAITS.search(name)
                or a.reaching(site, COLLECTIVES) is not None):
            return True
    return False
