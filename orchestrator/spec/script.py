"""Bring your own script: ``JOB`` may be a torchrun-style ``train.py`` or ``-m package.module``.

``resolve_target`` decides, on the login node and without running the user's code, what a command
line asks for:

| command line                         | result                                             |
| ------------------------------------ | -------------------------------------------------- |
| ``mnist`` / ``./my_job.py`` with SPEC | None: a job file, as before                        |
| ``train.py [-- ARGS]`` without SPEC  | ScriptTarget(kind="script", target=/abs/train.py)  |
| ``-m pkg.mod [-- ARGS]``             | ScriptTarget(kind="module", target="pkg.mod")      |

A script is never imported here (that would run it): whether it is a job file is read from its
syntax tree (a module-level ``SPEC = ...``). A module is looked up on the file system only, so a
package whose ``__init__`` imports torch costs nothing; one that is not found here may still exist
on the compute nodes, which the dry run says. Everything after ``--`` is kept byte for byte
(``job.json`` stores undecodable bytes as ``\\udcXX`` escapes, which give the same bytes back).
"""

from __future__ import annotations

import logging
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.errors import ConfigError
from orchestrator.spec.framework import Framework
from orchestrator.spec.job import JobSpec, LoadedJob, Resources, TrainParams
from orchestrator.spec.launch import Launch
from orchestrator.spec.safefile import NotAFile, kind_of, open_regular

log = logging.getLogger(__name__)
MAX_SOURCE_BYTES = 16 * 1024 * 1024  # a script or job file larger than this is refused, not read

_MODULE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
# Exit code a script uses to ask for a requeue after a preemption (EX_TEMPFAIL: "try again later").
REQUEUE_EXIT = 75


class ScriptTarget(BaseModel):
    """What each task runs instead of the built-in entrypoint (stored in ``job.json`` as ``script``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["script", "module"]
    target: str = Field(description="absolute path of the script, or the dotted module name")
    args: list[str] = Field(default_factory=list, description="everything after --, verbatim")
    cwd: str = Field(description="the submit directory: every rank's working directory, snapshot or not")
    found: bool = Field(default=True, description="-m: the module was found on the login node")
    launch: Launch = Field(default_factory=Launch, description="how its ranks are started (spec/launch.py)")
    frameworks: list[Framework] = Field(default_factory=list, description="what it trains with (spec/framework.py)")

    @property
    def name(self) -> str:
        """A job name: the script's folder and file name without .py (``dino/main_dino`` for
        ``.../dino/main_dino.py``: every project has its ``train.py``), or the dotted module name
        (``pkg.mod``). Slurm takes it as ``--job-name`` as it is (the templates quote it)."""
        if self.kind == "module":
            return self.target
        path = Path(self.target)
        folder = path.parent.name
        return f"{folder}/{path.stem}" if folder else path.stem

    def command(self) -> str:
        """How it reads as a command line (``python train.py --lr 0.1``), for the dry run."""
        head = [self.target] if self.kind == "script" else ["-m", self.target]
        return "python " + " ".join(shlex.quote(_printable(a)) for a in (*head, *self.args))

    def note(self) -> str | None:
        if self.kind == "module" and not self.found:
            return (f"module {self.target} is not importable on this machine (looked in {self.cwd} and "
                    "sys.path); it must exist on the compute nodes")
        return None


def _printable(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def has_spec(path: Path) -> bool:
    """Does this .py file assign ``SPEC`` at module level (a job file)? Read, not imported."""
    import ast  # only when a .py path is given (a job name needs no parser)

    from orchestrator.spec.pysource import UnreadableSource, parse_source

    try:
        with open_regular(path) as fh:  # a FIFO or a device: refused, never read (no hang)
            source = fh.read(MAX_SOURCE_BYTES + 1)
    except NotAFile as exc:
        raise ConfigError(f"{path} {exc.strerror}", hint="pass the .py file of the script or job") from None
    if len(source) > MAX_SOURCE_BYTES:
        raise ConfigError(f"{path} is larger than {MAX_SOURCE_BYTES // (1024 * 1024)} MiB",
                          hint="pass the .py file of the script or job")
    try:
        tree = parse_source(source, str(path))
    except UnreadableSource as exc:
        if not exc.limit:
            raise ConfigError(f"{path} is not valid Python: {exc.why} (line {exc.line or '?'})",
                              hint="fix the script, or pass another") from None
        # nested beyond the parser: no job file (it defines SPEC simply); Python itself may refuse it too
        log.warning("%s; taken as a script, not a job file", exc)
        return False
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "SPEC" for t in targets):
            return True
    return False


def find_module(name: str, search: Sequence[Path]) -> Path | None:
    """Where ``python -m name`` would find it in ``search`` (file system only, nothing imported)."""
    parts = name.split(".")
    for root in search:  # parent folders need no __init__.py: namespace packages import too
        base = root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__main__.py"):
            if candidate.is_file():
                return candidate
    return None


def resolve_target(job: str | None, module: str | None, args: Sequence[str] | None, overrides: Sequence[str],
                   cwd: Path, search: Sequence[Path]) -> ScriptTarget | None:
    """The script or module a command line names, or None for a job file (see the module table).

    ``args`` is what followed ``--`` (None when there was no ``--``); ``search`` is where ``-m``
    modules are looked for after ``cwd`` (the caller passes ``sys.path``).
    """
    extra = list(args or [])
    for arg in extra:
        if "\0" in arg:
            raise ConfigError("an argument after -- contains a NUL byte, which no program can receive",
                              hint="remove the NUL byte")
    if module is not None:
        if job is not None:
            raise ConfigError(f"both a JOB ({job!r}) and -m {module} were given",
                              hint="pass either a script/job or -m package.module, not both")
        if not _MODULE_RE.match(module):
            raise ConfigError(f"-m {module!r} is not a dotted module name",
                              hint="use -m package.module (letters, digits and '_', parts joined by '.')")
        _no_overrides(overrides, f"-m {module}")
        found = find_module(module, [cwd, *search]) is not None
        return ScriptTarget(kind="module", target=module, args=extra, cwd=str(cwd), found=found)
    if job is None:
        return None
    path = Path(job).expanduser()
    path = path if path.is_absolute() else cwd / path
    looks_like_path = job.endswith(".py") or "/" in job or path.is_dir() or (path.suffix != "" and path.is_file())
    if not looks_like_path:
        if args is not None:  # a job name with `--`: refuse below, once we know it is a job
            raise ConfigError(f"job {job!r} takes key=value overrides, not arguments after --",
                              hint=f"write orch ... {job} key=value, or pass a script path (./train.py)")
        return None
    if path.is_dir():
        raise ConfigError(f"{job} is a directory, not a script",
                          hint="pass the .py file to run (e.g. train.py), or -m package.module")
    if path.exists() and not path.is_file():  # a FIFO, a device: never opened
        raise ConfigError(f"script {path} is {kind_of(path.stat().st_mode)}, not a file",
                          hint="pass the .py file to run (e.g. train.py), or -m package.module")
    if not path.is_file():
        raise ConfigError(f"script {path} does not exist",
                          hint="check the path (it is relative to the current directory), or use -m package.module")
    if not (path.name.endswith(".py") or _python_shebang(path)):
        raise ConfigError(f"{job} is not a .py file", hint="pass a Python script ending in .py (or one whose first "
                          "line is a python #! line), or -m package.module")
    if has_spec(path):
        if args is not None:
            raise ConfigError(f"{job} is a job file (it defines SPEC): it takes key=value overrides, not "
                              "arguments after --", hint=f"write orch ... {job} key=value")
        return None
    _no_overrides(overrides, job)
    return ScriptTarget(kind="script", target=str(path.resolve()), args=extra, cwd=str(cwd))


def _python_shebang(path: Path) -> bool:
    """A script installed without ``.py`` (deepblast's ``scripts/deepblast-train``) whose first line runs Python:
    ``#!/usr/bin/env python3``."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def _no_overrides(overrides: Sequence[str], what: str) -> None:
    if overrides:
        raise ConfigError(f"{what} is a script: key=value overrides ({overrides[0]!r}) are for job files",
                          hint=f"pass the script's own arguments after --, e.g. orch run {what} -- "
                               + " ".join(shlex.quote(o) for o in overrides))


def _no_build(params: object, ctx: object) -> None:
    raise ConfigError("a script has no build()", hint="scripts run as they are; see orchestrator.task.scriptrun")


def script_job(target: ScriptTarget) -> LoadedJob:
    """A script as a job for planning: its name, default resources (1 node, 1 GPU), no parameters."""
    spec = JobSpec(name=target.name, params=TrainParams, build=_no_build, resources=Resources(),
                   description=target.command())
    return LoadedJob(spec=spec, path=Path(target.target) if target.kind == "script" else Path(target.cwd))
