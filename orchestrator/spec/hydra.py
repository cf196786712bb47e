"""Hydra apps run in several ranks (pure): one run directory for the job, in its job folder.

A script whose entry point is ``@hydra.main(...)`` makes a run directory when it starts,
``outputs/<date>/<time>`` by default (``hydra.run.dir``), from each process's own clock: started as
several ranks, they land in several folders a second apart, or race in one (its ``.hydra/config.yaml``,
its ``<job>.log``). orch gives every rank the same run directory, ``<job folder>/hydra``
(``runconfig.HYDRA_DIR``), as command-line overrides after the script's own arguments, the way Lightning starts
the ranks of a Hydra app: rank 0 is the app as Hydra runs it (its ``.hydra/`` config record, its
``<job name>.log``); every other rank writes no ``.hydra/`` record (``hydra.output_subdir=null``) and logs
to ``<job name>_rank<R>.log`` (``hydra.job.name``). A requeued or restarted run gets the same folder
(what it saved there is still there to resume from). A script given its own ``hydra.run.dir=`` gets
nothing from orch, nor does a ``--multirun`` sweep (Hydra's sweeps are launches of their own).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path

from orchestrator.spec.pysource import UnreadableSource, parse_source
from orchestrator.spec.runconfig import HYDRA_DIR
from orchestrator.spec.script import ScriptTarget, find_module

OWN_RUN_DIR = ("hydra.run.dir=", "+hydra.run.dir=", "++hydra.run.dir=")
MULTIRUN_FLAGS = frozenset({"-m", "--multirun"})


def is_hydra_app(source: str | bytes, filename: str = "<script>") -> bool:
    """Whether the source decorates a function with Hydra's ``main`` (``@hydra.main(...)``, or ``main``
    imported from ``hydra``, under any name); never imports or runs it."""
    try:
        tree = parse_source(source, filename)
    except UnreadableSource:
        return False
    modules = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
               for a in n.names if a.name == "hydra"}
    mains = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "hydra"
             for a in n.names if a.name == "main"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                func = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(func, ast.Name) and func.id in mains:
                    return True
                if (isinstance(func, ast.Attribute) and func.attr == "main" and isinstance(func.value, ast.Name)
                        and func.value.id in modules):
                    return True
    return False


def main_config(decorator: ast.Call) -> tuple[str | None, str | None]:
    """``@hydra.main(config_path=..., config_name=...)``'s folder and config name (positional or keywords; None
    where not a literal or not given)."""
    given = dict(zip(("config_path", "config_name"), decorator.args, strict=False))
    given.update({k.arg: k.value for k in decorator.keywords if k.arg in ("config_path", "config_name")})
    path, name = (given.get(key) for key in ("config_path", "config_name"))
    return (path.value if isinstance(path, ast.Constant) and isinstance(path.value, str) else None,
            name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None)


SOURCE_LIMIT = 4 << 20  # bytes of a script read to tell a Hydra app (a larger file is none)


def hydra_entry(target: ScriptTarget, search: Sequence[Path]) -> Path | None:
    """The file of a script target when it is a Hydra app (``-m``: found in ``search`` as ``python -m`` would
    find it), else None. Reads the file; never imports it."""
    path = Path(target.target) if target.kind == "script" else find_module(target.target, search)
    if path is None:
        return None
    try:
        with path.open("rb") as fp:
            source = fp.read(SOURCE_LIMIT + 1)
    except OSError:
        return None
    return path if len(source) <= SOURCE_LIMIT and is_hydra_app(source, str(path)) else None


def describe(job_dir: str | Path) -> str:
    """What the dry run and rank 0 say of a Hydra app."""
    return (f"a Hydra app: every rank's run directory is {Path(job_dir) / HYDRA_DIR} (orch passes hydra.run.dir "
            "after the script's arguments; rank R > 0 logs to <job name>_rank<R>.log there)")


def quoted(value: str) -> str:
    """A value in Hydra's override grammar, double-quoted (a path with spaces, commas, ``=``): a quote is
    escaped, and so is a run of backslashes before a quote or the closing quote (Hydra escapes nothing
    else); ``${`` is escaped for OmegaConf, which would read it as an interpolation."""
    body = re.sub(r'(\\*)("|$)', lambda m: m.group(1) * 2 + ("\\" + m.group(2) if m.group(2) else ""), value)
    return '"' + body.replace("${", "\\${") + '"'


def run_dir_overrides(job_dir: Path, rank: int, job_name: str, args: Sequence[str]) -> list[str]:
    """The overrides orch appends to a Hydra app's arguments in rank ``rank`` (none when the script was
    given its own run directory, or runs a sweep). ``job_name``: Hydra's own (the script's stem)."""
    if any(a.startswith(OWN_RUN_DIR) for a in args) or MULTIRUN_FLAGS & set(args):
        return []
    out = [f"hydra.run.dir={quoted(str(job_dir / HYDRA_DIR))}"]
    if rank > 0:
        out += ["hydra.output_subdir=null", f"hydra.job.name={quoted(f'{job_name}_rank{rank}')}"]
    return out
