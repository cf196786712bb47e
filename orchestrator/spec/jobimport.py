"""Importing a job file so that nothing it does at import can change what orch does next (pure).

A job file's module level should only define ``SPEC``; whatever else it does while orch imports it
(in ``orch submit``, ``orch run``, the API, and every task) is caught here and becomes a ConfigError
that names what the file did:

- ending the process: ``sys.exit`` (SystemExit), ``os._exit``, ``os.abort``;
- starting or replacing processes: ``os.fork``/``forkpty`` (two orch processes would go on, each
  submitting the job), the ``os.exec*`` family (orch would be replaced), ``os.posix_spawn*``,
  ``os.spawn*``, ``os.system``: each raises instead while the file is imported;
- raising an exception of any kind, ``BaseException`` subclasses included (Ctrl-C stays Ctrl-C);
- printing: ``sys.stdout`` and file descriptor 1 are standard error while the file is imported (a
  ``print``, ``os.write(1, ...)``, a subprocess's output), so ``orch ... --json`` keeps printing JSON
  only; closing ``sys.stdout`` or ``sys.stderr`` there closes nothing of orch's.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

from orchestrator.errors import ConfigError

_MOVE_HINT = ("a job file only defines SPEC (and its build function); move that code into build() or under "
              "if __name__ == '__main__':")
# os functions that end this process, start another or replace it: refused while a job file is imported
_REFUSED = ("_exit", "abort", "fork", "forkpty", "execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp",
            "execvpe", "posix_spawn", "posix_spawnp", "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl",
            "spawnle", "spawnlp", "spawnlpe", "system", "popen")


class DidAtImport(Exception):
    """Raised in place of a refused ``os`` call while a job file is imported; says what was called."""


class _ToStderr(io.TextIOBase):
    """``sys.stdout`` while a job file is imported: writes go to standard error; ``close()`` closes nothing."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def write(self, text: str) -> int:
        with contextlib.suppress(Exception):
            self._target.write(text)
        return len(text)

    def flush(self) -> None:
        with contextlib.suppress(Exception):
            self._target.flush()

    def writable(self) -> bool:
        return True

    def close(self) -> None:  # the job file's sys.stdout.close(): orch's output stays open
        pass


def _refuser(name: str) -> Callable[..., NoReturn]:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        call = f"os.{name}({', '.join(repr(a)[:40] for a in args[:2])})"
        if name in ("_exit", "abort"):
            raise DidAtImport(f"exits while it is imported ({call})")
        raise DidAtImport(f"calls {call} while it is imported (orch refuses it there)")

    return refuse


def _flush(*streams: Any) -> None:
    for stream in streams:
        with contextlib.suppress(Exception):
            stream.flush()


@contextlib.contextmanager
def _fd1_to_stderr(closed: list[str]) -> Iterator[None]:
    """File descriptor 1 is standard error's while a job file is imported: ``os.write(1, ...)``, a
    subprocess's output and ``sys.__stdout__`` reach standard error, not orch's (JSON) output. Appends
    to ``closed`` when the file closed descriptor 1 (it is reopened on orch's output afterwards)."""
    _flush(sys.stdout, sys.__stdout__)
    try:
        saved = os.dup(1)
    except OSError:  # no standard output to keep apart
        yield
        return
    try:
        os.dup2(2, 1)
    except OSError:  # no standard error to send it to
        os.close(saved)
        yield
        return
    try:
        yield
    finally:
        _flush(sys.__stdout__)
        try:
            os.fstat(1)
        except OSError:
            closed.append("closed orch's standard output (file descriptor 1) while it is imported")
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.contextmanager
def _guarded(closed: list[str]) -> Iterator[None]:
    saved_os = {name: getattr(os, name) for name in _REFUSED if hasattr(os, name)}
    saved_out, saved_err = sys.stdout, sys.stderr
    stderr = _ToStderr(saved_err)
    for name in saved_os:
        setattr(os, name, _refuser(name))
    sys.stdout, sys.stderr = stderr, stderr
    try:
        with _fd1_to_stderr(closed):
            yield
    finally:
        for name, function in saved_os.items():
            setattr(os, name, function)
        _flush(stderr)
        sys.stdout, sys.stderr = saved_out, saved_err


def _closed_output() -> str | None:
    """What the file did to orch's output behind the guard's back (``sys.__stdout__.close()``, ``os.close(1)``)."""
    for fd, name in ((1, "standard output"), (2, "standard error")):
        try:
            os.fstat(fd)
        except OSError:
            return f"closed orch's {name} (file descriptor {fd}) while it is imported"
    for stream, name in ((sys.stdout, "sys.stdout"), (sys.stderr, "sys.stderr")):
        if stream is not None and getattr(stream, "closed", False):
            return f"closed {name} while it is imported"
    return None


def import_job_file(path: Path, module_name: str) -> ModuleType:
    """Import ``path`` as ``module_name`` (registered in ``sys.modules`` only when it imported cleanly);
    ConfigError naming what the file did when anything but defining names happened at import."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import job file {path}", hint="a job file is a Python module ending in .py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    problem: str | None = None
    cause: BaseException | None = None
    closed: list[str] = []
    try:
        with _guarded(closed):
            spec.loader.exec_module(module)
    except DidAtImport as exc:
        problem = str(exc)
    except SystemExit as exc:
        problem = f"exits while it is imported (sys.exit({exc.code!r}))"
    except KeyboardInterrupt:
        del sys.modules[module_name]
        raise
    except Exception as exc:
        problem, cause = f"failed to import: {exc!r}"[:400], exc
    except BaseException as exc:  # a BaseException subclass of the file's own: still the file's error
        problem = f"raised {type(exc).__name__} (a BaseException) while it is imported: {exc!r}"[:400]
    if problem is None:
        problem = closed[0] if closed else _closed_output()
    if problem is None:
        return module
    del sys.modules[module_name]
    hint = _MOVE_HINT if cause is None else "fix the job file; its module level must not need a GPU or data"
    raise ConfigError(f"job file {path} {problem}", hint=hint) from cause
