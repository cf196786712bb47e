"""The ranks of ``orch run`` forked from one interpreter that imported torch once.

Each rank of a local run is ``python -m orchestrator.runtime.launch --job-dir DIR``, and each used to import
torch, and ``torch._dynamo`` (DDP's constructor needs it): some 5 CPU-seconds a rank, which N ranks on a small
machine pay one after the other. Here a server (``python -m orchestrator.runtime.forkserver``, torch's side)
imports them once and then forks each rank on request. The forked rank is that same task: its own
environment, arguments, output, session (it leads its own process group, as ``start_new_session``) and
``PR_SET_PDEATHSIG``; it runs ``orchestrator.runtime.launch`` as a started one would. The in-process restarts'
agent already forks its workers from an interpreter that imported torch: the same step, one level up.

Only orch's own entrypoint is forked (:func:`forks_ranks`): a user's script runs in a fresh interpreter, as
alone, because it may set what torch reads as it is imported (``OMP_NUM_THREADS`` at its top, say).
``ORCH_FORK_RANKS=0`` starts every rank as its own interpreter.

The protocol, over a Unix ``SOCK_SEQPACKET`` pair (one JSON message each, a descriptor by ``SCM_RIGHTS``):

- server -> client ``{"ready": true}`` once the imports are done;
- client -> server ``{"rank": R, "argv": [...], "set": {...}, "unset": [...]}`` with one descriptor, the rank's
  stdout and stderr; the environment is what differs from the server's own (the server starts with the ranks'
  common environment);
- server -> client ``{"rank": R, "pid": P}`` or ``{"rank": R, "error": "..."}`` (fork failed: EAGAIN, ENOMEM);
- server -> client ``{"pid": P, "code": C}`` when a rank has ended (C as ``Popen.returncode``: -N for signal N).

End of file on the client's side: the server is gone (its ranks got SIGTERM from the kernel): a rank not
reported ends as :data:`LOST_CODE`. On the server's: the client is done, or gone; the server leaves.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

ENV_VAR = "ORCH_FORK_RANKS"  # "0": every rank its own interpreter
SERVER_MODULE = "orchestrator.runtime.forkserver"
LOST_CODE = -signal.SIGKILL  # a rank whose end the server could not report (the server died)
MAX_MESSAGE = 1 << 16
POLL_SECONDS = 0.05
REPLY_SECONDS = 60.0  # a fork takes milliseconds once the server is ready

logger = logging.getLogger(__name__)


def forks_ranks(*, script: bool, nproc: int, environ: Mapping[str, str]) -> bool:
    """Whether a local run's ranks are forked from one server: orch's entrypoint, two ranks or more, Linux."""
    return (not script and nproc > 1 and sys.platform.startswith("linux")
            and environ.get(ENV_VAR, "1") != "0")


def die_with_parent() -> None:  # pragma: no cover - runs in a child between fork and exec (or the rank)
    """Linux: this process gets SIGTERM when its parent dies, so no rank outlives its runner."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _send(sock: socket.socket, message: Mapping[str, Any], fds: Sequence[int] = ()) -> None:
    socket.send_fds(sock, [json.dumps(message).encode()], list(fds))


# --- the client: orch run's side ------------------------------------------------------------------------


@dataclass
class ForkedRank:
    """A forked rank, as much of ``subprocess.Popen`` as :class:`orchestrator.local.runner.LocalRunner` uses."""

    pid: int
    stdout: IO[bytes] | None
    server: ForkServer
    returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.code(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"rank pid {self.pid}", timeout or 0.0)
            time.sleep(POLL_SECONDS)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)


@dataclass
class ForkServer:
    """The server process and the client's end of its socket."""

    proc: subprocess.Popen[bytes]
    sock: socket.socket
    codes: dict[int, int] = field(default_factory=dict)
    gone: bool = False

    @classmethod
    def start(cls, python: str, env: Mapping[str, str], *, name: Sequence[str], output: IO[bytes] | int,
              preexec: Callable[[], None] | None, module: str = SERVER_MODULE) -> ForkServer:
        """Start the server (``python -m module FD *name``) with the ranks' common environment; ``name`` goes on
        its command line, and so on every rank's, which are its forks: ``--job-dir DIR`` says whose they are."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            proc = subprocess.Popen([python, "-m", module, str(theirs.fileno()), *name], env=dict(env),
                                    pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=output,
                                    stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=preexec)
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        return cls(proc, ours)

    def ready(self, cancelled: Callable[[], bool]) -> bool:
        """Wait for the server's imports; False when it died first or ``cancelled()`` turned true."""
        while not cancelled() and not self.gone:
            message = self._next(POLL_SECONDS)
            if message is not None and message.get("ready"):
                return True
        return False

    def fork(self, rank: int, argv: Sequence[str], env: Mapping[str, str], out: int, *,
             common: Mapping[str, str], stdout: IO[bytes] | None) -> ForkedRank:
        """Fork rank ``rank`` with ``argv`` (after the interpreter) and ``env``, its output to ``out``.
        Raises OSError as ``Popen`` would (the server's fork failed, or the server is gone)."""
        changed = {k: v for k, v in env.items() if common.get(k) != v}
        unset = [k for k in common if k not in env]
        try:
            _send(self.sock, {"rank": rank, "argv": list(argv), "set": changed, "unset": unset}, [out])
        except OSError:
            self.gone = True
            raise
        deadline = time.monotonic() + REPLY_SECONDS
        while True:
            reply = self._next(max(0.0, deadline - time.monotonic()))
            if reply is None and not self.gone and time.monotonic() < deadline:
                continue
            if reply is None:  # gone before it answered, or stuck
                raise OSError(f"the fork server of the ranks did not fork rank {rank} (its exit code: "
                              f"{self.proc.poll()})")
            if reply.get("rank") == rank:
                if "error" in reply:
                    raise OSError(str(reply["error"]))
                return ForkedRank(int(reply["pid"]), stdout, self)

    def code(self, pid: int) -> int | None:
        """Rank ``pid``'s exit code as ``Popen.returncode``, or None while it runs."""
        while pid not in self.codes and self._next(0.0) is not None:
            pass
        if pid in self.codes:
            return self.codes[pid]
        if self.gone and not _alive(pid):
            logger.warning("the fork server of the ranks is gone: rank pid %d's end is not known", pid)
            self.codes[pid] = LOST_CODE
            return LOST_CODE
        return None

    def close(self, timeout: float) -> None:
        """No more ranks: the server leaves (its ranks have ended); killed if it has not after ``timeout``."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.gone = True
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            self.proc.wait()

    def _next(self, timeout: float | None) -> dict[str, Any] | None:
        """The next message (an exit report is also kept in ``codes``), or None: none within ``timeout``, or
        the server has gone (``gone``)."""
        if self.gone:
            return None
        readable, _, _ = select.select([self.sock], [], [], timeout)
        if not readable:
            return None
        try:
            data = self.sock.recv(MAX_MESSAGE)
        except OSError:
            data = b""
        if not data:
            self.gone = True
            return None
        message: dict[str, Any] = json.loads(data)
        if "code" in message:
            self.codes[int(message["pid"])] = int(message["code"])
        return message


def _alive(pid: int) -> bool:
    """``pid`` runs (a zombie does not: an orphan whose new parent, a subreaper, has not reaped it yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True  # no /proc: kill(0) is all there is


# --- the server: the torch side runs it after its imports ----------------------------------------------


def serve(fd: int) -> list[str] | None:
    """The server's loop on socket ``fd``. Returns in a forked rank only (its arguments, its environment and
    output in place, its own session); in the server it returns None once the client has closed."""
    sock = socket.socket(fileno=fd)
    _send(sock, {"ready": True})
    server = os.getpid()
    while True:
        _report_ended(sock)
        readable, _, _ = select.select([sock], [], [], POLL_SECONDS)
        if not readable:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 1)
        except OSError:
            data, fds = b"", []
        if not data:
            for fd_ in fds:
                os.close(fd_)
            sock.close()
            return None
        request = json.loads(data)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        try:
            pid = os.fork()
        except OSError as exc:
            for fd_ in fds:
                os.close(fd_)
            _send(sock, {"rank": request["rank"], "error": f"{exc.strerror or exc}"})
            continue
        if pid == 0:
            sock.close()
            _become(request, fds[0], server)
            return [str(a) for a in request["argv"]]
        for fd_ in fds:
            os.close(fd_)
        try:
            _send(sock, {"rank": request["rank"], "pid": pid})
        except OSError:  # the client is gone: this rank would be nobody's
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


def _report_ended(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        with contextlib.suppress(OSError):
            _send(sock, {"pid": pid, "code": os.waitstatus_to_exitcode(status)})


def _become(request: Mapping[str, Any], out: int, server: int) -> None:  # pragma: no cover - in the fork
    """In the forked rank: what ``Popen(start_new_session=True, preexec_fn=die_with_parent)`` with the rank's
    environment and output would have given it."""
    os.setsid()
    if sys.platform.startswith("linux"):
        die_with_parent()
        if os.getppid() != server:  # the server died before the line above: so does this rank
            os._exit(1)
    for target in (1, 2):
        os.dup2(out, target)
    if out > 2:
        os.close(out)
    for name in request["unset"]:
        os.environ.pop(name, None)
    os.environ.update(request["set"])
