"""Trust of what orch runs and reads as you: scripts, their modules, job files, cluster.yaml, templates.

Every task runs the script (or job file) as it is when the job starts, with its folder first on
``sys.path``; cluster.yaml and templates decide what the batch script runs. So before launching or
reading any of them, orch checks that only you (or root) could have written them, with the stat rules of
:mod:`orchestrator.records.trust` (the one owner of those rules):

* **code** (the script, the ``-m`` module and the folder it is found in, a job file): the file is a
  regular file (a symbolic link must be yours, and what it leads to is checked), owned by you or root,
  not writable by group or others; the folder it is imported from is owned by you or root and not
  writable by group or others *even with the sticky bit* (in ``/tmp`` anyone could add a ``torch.py``
  beside your script, and your script would import it); every folder above is not writable by others
  without the sticky bit. The folder's other modules and packages (``*.py``, folders with
  ``__init__.py``, at most :data:`SCAN_LIMIT` entries) are checked as files the same way.
* **configuration** (cluster.yaml, ``--templates`` files): the file as code; its folder and the folders
  above as a job folder's (:func:`orchestrator.records.trust.check_folder`: a sticky shared folder is
  allowed, since nobody else can replace your file there).

A refusal is a :class:`~orchestrator.records.trust.TrustError` (exit 2) naming the file and the fix.
A job name that a ``./jobs/NAME.py`` (or ``$ORCH_JOBS_DIR``) of your own takes from a built-in job is
announced (:func:`shadow_note`), never silent.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.records.trust import TrustError, check_folder, problem

if TYPE_CHECKING:
    from orchestrator.spec.script import ScriptTarget

log = logging.getLogger(__name__)

SCAN_LIMIT = 2000  # entries of a script's folder (and its packages) looked at; more are not checked
_SCAN_DEPTH = 8
_ROOT_UID = 0


def _uid(uid: int | None) -> int:
    return os.getuid() if uid is None else uid


def _refuse(path: Path, what: str, reason: str, fix: str) -> TrustError:
    return TrustError(f"{what} {path} {reason}, so another user could change what orch runs as you", hint=fix)


def _lstat(path: Path, what: str) -> os.stat_result:
    try:
        return path.lstat()
    except OSError as exc:
        raise TrustError(f"cannot check {what} {path}: {exc.strerror}", hint="check the path and its permissions"
                         ) from None


def _file_fix(path: Path) -> str:
    return f"make it yours and private: chmod go-w {path} (or copy it to a folder only you can write)"


def check_trusted_file(path: Path, what: str, *, uid: int | None = None) -> Path:
    """``path`` (a link: yours, then its target) is a regular file of yours (or root's) that neither
    group nor others may write; the real path."""
    uid = _uid(uid)
    path = Path(os.path.abspath(path))
    st = _lstat(path, what)
    if stat.S_ISLNK(st.st_mode):
        if st.st_uid not in (uid, _ROOT_UID):
            raise _refuse(path, f"{what} (a symbolic link)", f"is owned by uid {st.st_uid}, not by you (uid {uid})",
                          f"replace the link {path} with one you own (or use the real path)")
        real = Path(os.path.realpath(path))
        st = _lstat(real, what)
        path = real
    reason = problem(st, uid, is_dir=False)
    if reason is not None:
        raise _refuse(path, what, reason, _file_fix(path))
    return path


def check_code_folder(folder: Path, what: str, *, uid: int | None = None) -> None:
    """A folder Python imports from: yours (or root's), not writable by group or others (sticky or
    not), and the folders above not writable by others without the sticky bit."""
    uid = _uid(uid)
    folder = Path(os.path.realpath(folder))
    st = _lstat(folder, what)
    reason = problem(st, uid, is_dir=True)
    if reason is None and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):  # sticky: others may still add modules
        reason = f"is writable by others (mode {stat.S_IMODE(st.st_mode):o}; the sticky bit does not stop " \
                 "them from adding a module beside yours)"
    if reason is not None:
        raise _refuse(folder, what, reason, f"move the code into a folder only you can write (mkdir -m 700 ...), "
                                            f"or chmod go-w {folder}")
    # the folders above: not writable by others without the sticky bit (trust's rule for job folders)
    check_folder(folder, what, uid=uid, ancestors=True,
                 fix="move the code under folders that others cannot write, or chmod o-w {folder}")


def check_code(path: Path, what: str, *, uid: int | None = None, siblings: bool = True) -> None:
    """A file Python runs (a script, a job file, a ``-m`` module): the file, the folder it is imported
    from and (``siblings``) that folder's other modules and packages."""
    real = check_trusted_file(path, what, uid=uid)
    check_code_folder(real.parent, f"the folder of {what}", uid=uid)
    if siblings:
        check_modules(real.parent, uid=uid)


def check_modules(folder: Path, *, uid: int | None = None) -> None:
    """The modules and packages Python could import from ``folder`` (bounded: :data:`SCAN_LIMIT`)."""
    uid = _uid(uid)
    for entry, is_dir in _modules(folder):
        if is_dir:
            check_code_folder(entry, "the package", uid=uid)
        else:
            check_trusted_file(entry, "the module", uid=uid)


def _modules(folder: Path) -> Iterator[tuple[Path, bool]]:
    seen = 0
    pending = [(folder, 0)]
    while pending:
        current, depth = pending.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > SCAN_LIMIT:
                log.debug("stopped checking modules in %s after %d entries", folder, SCAN_LIMIT)
                return
            try:
                if entry.name.endswith(".py") and (entry.is_file() or entry.is_symlink()):
                    yield Path(entry.path), False
                elif entry.is_dir(follow_symlinks=False) and depth < _SCAN_DEPTH and \
                        os.path.isfile(os.path.join(entry.path, "__init__.py")):
                    yield Path(entry.path), True
                    pending.append((Path(entry.path), depth + 1))
            except OSError:
                continue


def check_config(path: Path, what: str, *, uid: int | None = None) -> None:
    """A file orch reads as configuration (cluster.yaml, a template): trusted file, trusted folders
    (a missing file is left to the reader, which says so)."""
    if not os.path.lexists(path):
        return
    real = check_trusted_file(path, what, uid=uid)
    check_folder(real.parent, f"the folder of {what}", uid=uid, ancestors=True,
                 fix="keep it in a folder only you can write (chmod go-w {folder})")


def check_templates(folder: Path, *, uid: int | None = None) -> None:
    """``--templates DIR``: the folder (as code: another user must not add a template) and every
    ``*.j2`` in it."""
    if not os.path.isdir(folder):
        return  # the renderer says what is wrong with it
    check_code_folder(folder, "the templates folder (--templates)", uid=uid)
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".j2"))[:SCAN_LIMIT]
    except OSError:
        return  # the renderer reports a folder it cannot read
    for name in names:
        check_trusted_file(Path(folder) / name, "the template", uid=uid)


def shadow_note(job: str, path: Path, builtin_dir: Path) -> None:
    """A job name resolved outside the built-in jobs while a built-in job has that name: say so."""
    builtin = builtin_dir / f"{job}.py"
    try:
        same = path.resolve() == builtin.resolve()
    except OSError:
        same = False
    if not same and builtin.is_file():
        log.warning("job %r is your %s, not the built-in job %r (rename yours to run the built-in one)",
                    job, path, job)


def check_launch(job: str | None, target: ScriptTarget | None, *, environ: Mapping[str, str], cwd: Path,
                 templates: str | Path | None = None, uid: int | None = None) -> None:
    """Everything ``orch submit`` / ``orch run`` is about to import, run or render, before any of it is:
    the script (or ``-m`` module), or the job file (a job name: announced when it shadows a built-in
    job), and ``--templates``."""
    from orchestrator.spec.job import BUILTIN_JOBS_DIR, job_search_path, resolve_job_file
    from orchestrator.spec.script import find_module

    if target is not None and target.kind == "script":
        check_code(Path(target.target), "the script", uid=uid)
    elif target is not None:  # -m: python puts the working directory first on sys.path
        check_code_folder(cwd, "the working directory (first on sys.path for -m)", uid=uid)
        check_modules(cwd, uid=uid)
        found = find_module(target.target, [cwd])
        if found is not None:
            check_code(found, f"the module {target.target}", uid=uid, siblings=False)
    elif job:
        path = resolve_job_file(job, job_search_path(environ, cwd), cwd)  # errors are load_job's own
        check_code(path, "the job file", uid=uid)
        if not (job.endswith(".py") or "/" in job):
            shadow_note(job, path, BUILTIN_JOBS_DIR)
    if templates:
        check_templates(Path(templates).expanduser() if os.path.isabs(str(templates)) else cwd / str(templates),
                        uid=uid)


def check_task_code(script: ScriptTarget | None, job_file: str, *, siblings: bool,
                    uid: int | None = None) -> None:
    """What a task is about to import (job.json's script or job file), checked again when the job
    starts: ``siblings`` once per job (the batch script, before srun), the file and its folder in every task.
    A path missing here (a container's own path) is left to the task that runs it, which says so."""
    if script is not None and script.kind == "script":
        if os.path.lexists(script.target):
            check_code(Path(script.target), "the script", uid=uid, siblings=siblings)
    elif script is not None:
        if os.path.isdir(script.cwd):
            check_code_folder(Path(script.cwd), "the working directory (first on sys.path for -m)", uid=uid)
    elif os.path.lexists(job_file):
        check_code(Path(job_file), "the job file", uid=uid, siblings=siblings)
