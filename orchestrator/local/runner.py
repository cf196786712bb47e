"""Local runs: start N processes of ``python -m orchestrator.runtime.launch --job-dir DIR`` on this machine,
watch them, stop them all when one fails, and hand what was seen to :func:`orchestrator.local.result.local_result`.
With ``fork`` (orch's entrypoint, 2+ ranks) they are forked from one server that imported torch once
(:mod:`orchestrator.task.forkserver`); each is the same task in its own session, seen here through ``ForkedRank``.

Each rank's environment comes from :mod:`orchestrator.local.rankenv`. Rank 0's output goes to the terminal and
every rank's to ``logs/local-rank<R>.out``. When one process exits non-zero the others get SIGTERM at once and
SIGKILL after a grace period (a rank still running then did not answer SIGTERM: py-spy, when installed, reads
its stack first, :mod:`orchestrator.records.pyspy`). Ctrl-C, SIGTERM and the preemption signal sent to orch run go
to every process.

No process outlives the run (:mod:`orchestrator.task.reaper`): each rank leads its own process group
and carries ``ORCH_RUN_TOKEN``; when the ranks have ended, what is left in their groups or carries the
token gets SIGCONT, SIGTERM and, after the grace period, SIGKILL; a watchdog does the same if orch run
itself is killed. No torch here: only the child processes import it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from orchestrator.errors import ConfigError
from orchestrator.local.rankenv import child_env, free_port
from orchestrator.local.result import LocalResult, local_result
from orchestrator.records import pyspy, stacks
from orchestrator.records.joblayout import local_log_name as log_name
from orchestrator.records.restarts.rankoutcome import PEER_FAILURE_EXIT
from orchestrator.spec.runconfig import LOG_DIR, REQUEUE_FILE
from orchestrator.task import hang, reaper
from orchestrator.task.forkserver import ForkedRank, ForkServer, die_with_parent
from orchestrator.task.outcome import remove_outcomes
from orchestrator.task.preempt import SIGNALS

GRACE_SECONDS = 5.0
POLL_SECONDS = 0.05
TASK_MODULE = "orchestrator.runtime.launch"

logger = logging.getLogger(__name__)


@dataclass
class LocalRunner:
    """Start, watch and stop the processes of one local run."""

    job_dir: Path
    nproc: int
    preempt_signal: str = "USR2"
    python: str = sys.executable
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    extra_env: Mapping[str, str] = field(default_factory=dict)
    echo: IO[str] | None = None  # where rank 0's output is shown (None: nowhere)
    all_ranks: bool = False  # show every rank's output, each line prefixed with [rank R]
    grace: float = GRACE_SECONDS
    port: int | None = None
    fork: bool = False  # the ranks forked from one server that imported torch once (task.forkserver.forks_ranks)
    _procs: list[subprocess.Popen[bytes] | ForkedRank] = field(default_factory=list, init=False)
    _server: ForkServer | None = field(default=None, init=False)
    _forwarded: list[int] = field(default_factory=list, init=False)
    _quiet: bool = field(default=False, init=False)
    _quiet_all: bool = field(default=False, init=False)  # the other ranks' stack dumps (all_ranks)

    def run(self) -> LocalResult:
        port = self.port or free_port()
        logs = self.job_dir / LOG_DIR
        os.umask(0o077)  # the logs and everything the ranks write: the user's alone (they inherit it)
        logs.mkdir(mode=0o700, parents=True, exist_ok=True)
        (self.job_dir / REQUEUE_FILE).unlink(missing_ok=True)
        remove_outcomes(self.job_dir)  # the records of an earlier run of this folder
        # every process of this run carries the token; the watchdog stops them if orch run dies (reaper)
        self._token = uuid.uuid4().hex
        self._log_error: tuple[Path, OSError] | None = None
        watchdog = self._start_watchdog()
        try:
            with self._signals_forwarded():
                self._start(port, logs)
                codes, exited_at, stopped = self._watch()
        finally:
            if self._server is not None:  # its ranks have ended: it leaves
                self._server.close(self.grace)
            reaper.stop_marked(self._token, self.grace)  # what left the ranks' groups (setsid daemons)
            if watchdog is not None:
                with contextlib.suppress(OSError):
                    if watchdog.stdin is not None:
                        watchdog.stdin.close()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    watchdog.wait(timeout=5)
        if self._log_error is not None:  # the disk filled up under a rank's log: said once, never a thread's traceback
            path, exc = self._log_error
            raise ConfigError(f"cannot write {path}: {exc.strerror or exc} (the rank's log stopped there)",
                              hint=f"free space on the file system of {self.job_dir} or point --job-root elsewhere")
        return local_result(self.job_dir, self.nproc, codes, exited_at, stopped, self._forwarded)

    # --- processes ------------------------------------------------------------------------------

    def _start_watchdog(self) -> subprocess.Popen[bytes] | None:
        if not sys.platform.startswith("linux"):
            return None
        env = {k: v for k, v in self.environ.items() if k != reaper.TOKEN_VAR}
        try:
            return subprocess.Popen([self.python, "-m", reaper.__name__, self._token, str(self.grace)],
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env,
                                    start_new_session=True)
        except OSError:
            return None

    def _start(self, port: int, logs: Path) -> None:
        argv = ["--job-dir", str(self.job_dir)]
        self._files: list[IO[bytes]] = []
        envs = [{**child_env(self.environ, rank=rank, nproc=self.nproc, port=port, extra=self.extra_env),
                 reaper.TOKEN_VAR: self._token} for rank in range(self.nproc)]
        common = {k: v for k, v in envs[0].items() if all(env.get(k) == v for env in envs)}
        self._server = self._fork_server(common, logs) if self.fork else None
        for rank, env in enumerate(envs):
            if self._forwarded:  # Ctrl-C or SIGTERM while starting: start no more ranks
                break
            log_file = (logs / log_name(rank)).open("ab")
            self._files.append(log_file)
            shown = rank == 0 or self.all_ranks
            try:
                if self._server is not None:
                    self._procs.append(self._forked(self._server, rank, argv, env, common, log_file, shown))
                    continue
                # Own session: a terminal's Ctrl-C reaches orch run only, which forwards it once.
                self._procs.append(subprocess.Popen([self.python, "-m", TASK_MODULE, *argv], env=env,
                                                    stdout=subprocess.PIPE if shown else log_file,
                                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                    start_new_session=True, preexec_fn=_preexec()))
            except OSError as exc:  # EAGAIN: the user's process limit (ulimit -u), ENOMEM
                self._send_all(signal.SIGKILL)
                for proc in self._procs:
                    proc.wait()
                for fh in self._files:
                    fh.close()
                raise ConfigError(f"could not start rank {rank} of {self.nproc}: {exc.strerror or exc} (the "
                                  f"{len(self._procs)} rank(s) started were stopped)",
                                  hint="run fewer processes (--nproc), or raise the process limit (ulimit -u)"
                                  ) from None
        self._echo_lock = threading.Lock()
        shown_ranks = range(len(self._procs)) if self.all_ranks else range(min(1, len(self._procs)))
        self._tees = [threading.Thread(target=self._copy_rank, args=(rank,), daemon=True) for rank in shown_ranks]
        for tee in self._tees:
            tee.start()

    def _fork_server(self, common: Mapping[str, str], logs: Path) -> ForkServer | None:
        """The server the ranks are forked from, once it has imported torch; None (each rank then starts its
        own interpreter) when it could not start or died first (its output is in rank 0's log)."""
        with (logs / log_name(0)).open("ab") as output:
            try:
                server = ForkServer.start(self.python, common, name=["--job-dir", str(self.job_dir)],
                                          output=output, preexec=_preexec())
            except OSError as exc:
                logger.warning("could not start the fork server of the ranks (%s): each rank starts on its own", exc)
                return None
        if server.ready(cancelled=lambda: bool(self._forwarded)):
            return server
        server.close(self.grace)
        if not self._forwarded:
            logger.warning("the fork server of the ranks exited before it was ready (code %s, see %s): each rank "
                           "starts on its own", server.proc.returncode, logs / log_name(0))
        return None

    @staticmethod
    def _forked(server: ForkServer, rank: int, argv: list[str], env: Mapping[str, str], common: Mapping[str, str],
                log_file: IO[bytes], shown: bool) -> ForkedRank:
        """Rank ``rank`` forked by ``server``, its output to a pipe (``shown``: read by a tee) or its log."""
        if not shown:
            return server.fork(rank, argv, env, log_file.fileno(), common=common, stdout=None)
        read, write = os.pipe()
        stdout = os.fdopen(read, "rb")
        try:
            return server.fork(rank, argv, env, write, common=common, stdout=stdout)
        except OSError:
            stdout.close()
            raise
        finally:
            os.close(write)

    def _copy_rank(self, rank: int) -> None:
        """Copy a rank's output to its log and show it (``[rank R]`` before each line with all_ranks)."""
        stream = self._procs[rank].stdout
        assert stream is not None
        prefix, log_only = f"[rank {rank}] " if self.all_ranks else "", hang.LogOnly()  # dump_stacks: logged only
        logging = True  # drained to the end below: a rank never blocks on its pipe
        for chunk in iter(lambda: stream.readline(), b""):
            if logging:
                try:
                    self._files[rank].write(chunk)
                    self._files[rank].flush()
                except OSError as exc:  # ENOSPC, EDQUOT: the log stops; the rank and the echo go on
                    logging = False
                    self._log_error = self._log_error or (Path(os.fsdecode(self._files[rank].name)), exc)
            if self.echo is not None and log_only.shown(chunk) and not (self._quiet and rank == 0) and not (
                    self._quiet_all and rank):
                text = chunk.decode("utf-8", errors="replace")
                with self._echo_lock, contextlib.suppress(ValueError, OSError):  # one whole line at a time
                    self.echo.write(prefix + text if text.endswith("\n") else prefix + text + "\n")
                    self.echo.flush()

    def _watch(self) -> tuple[list[int | None], dict[int, float], set[int]]:
        """Wait for every process; after the first failure stop the rest (TERM, then KILL).

        A rank whose collective failed because another rank died exits with PEER_FAILURE_EXIT; it
        may exit before the rank that caused it, so the others get a grace period to exit (and say why) before
        they are stopped (1 s when its collective timed out: stacks.grace_after). Returns the exit codes, when
        each rank exited (wall clock) and the ranks this runner stopped; records.restarts.blame names the cause.
        """
        n = len(self._procs)
        exited_at: dict[int, float] = {}
        term_at: float | None = None
        kill_at: float | None = None
        stopped_by_us: set[int] = set()
        while len(exited_at) < n:
            now = time.monotonic()
            for rank, proc in enumerate(self._procs):
                if rank not in exited_at and proc.poll() is not None:
                    exited_at[rank] = time.time()
                    for signum in (signal.SIGCONT, signal.SIGTERM):  # the rank's own children do not outlive it
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.killpg(proc.pid, signum)  # (_end_groups kills those that ignore TERM)
            bad = [r for r in exited_at if self._procs[r].returncode != 0]
            if term_at is None and (bad or self._forwarded):
                known = any(self._procs[r].returncode != PEER_FAILURE_EXIT for r in bad) and not self._forwarded
                term_at = now if known else now + stacks.grace_after(self.job_dir, bad, self.grace)  # cause unknown
            if term_at is not None and now >= term_at and kill_at is None:
                stopped_by_us = {r for r in range(n) if r not in exited_at}
                # rank 0's stack dump on SIGTERM (orchestrator.task.hang) belongs in its log, not on the terminal
                self._quiet = 0 in stopped_by_us and not self._forwarded
                self._quiet_all = not self._forwarded
                self._send_all(signal.SIGTERM)
                kill_at = now + self.grace
            if kill_at is not None and now >= kill_at:
                if not self._forwarded:  # what did not answer SIGTERM: its stack from outside, with py-spy
                    pyspy.capture({r: p.pid for r, p in enumerate(self._procs) if p.poll() is None}, self.job_dir)
                self._send_all(signal.SIGKILL)
                kill_at = float("inf")
            time.sleep(POLL_SECONDS)
        self._end_groups()
        for tee in self._tees:
            tee.join(timeout=5)
        for fh in self._files:
            try:
                fh.close()  # flushes what is left: ENOSPC here too
            except OSError as exc:
                self._log_error = self._log_error or (Path(os.fsdecode(fh.name)), exc)
        return [p.returncode for p in self._procs], exited_at, stopped_by_us

    def _send_all(self, signum: int) -> None:
        """``signum`` to every rank; TERM, INT and KILL to its whole process group (its own children:
        a data server, a ``sleep`` in build), the preemption signal to the rank process alone."""
        group = signum in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL)
        for proc in self._procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    if group:
                        os.killpg(proc.pid, signum)
                        if signum == signal.SIGTERM:
                            os.killpg(proc.pid, signal.SIGCONT)  # a SIGSTOPped rank must see its TERM
                    else:
                        proc.send_signal(signum)

    def _end_groups(self) -> None:
        """After the ranks have exited: what their process groups still hold gets TERM, then KILL."""
        alive = [p.pid for p in self._procs if _group_alive(p.pid)]
        for pgid in alive:
            for signum in (signal.SIGCONT, signal.SIGTERM):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signum)
        deadline = time.monotonic() + self.grace
        while alive and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
            alive = [pgid for pgid in alive if _group_alive(pgid)]
        for pgid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)

    @contextlib.contextmanager
    def _signals_forwarded(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        preempt = SIGNALS[self.preempt_signal]

        def forward(signum: int, frame: object) -> None:
            if signum == signal.SIGINT and signal.SIGINT in self._forwarded:
                self._send_all(signal.SIGKILL)  # a second Ctrl-C: stop now
                return
            if signum != preempt:
                self._forwarded.append(signum)
            self._send_all(signum)

        wanted = {signal.SIGINT, signal.SIGTERM, preempt}
        previous = {s: signal.signal(s, forward) for s in wanted}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)


def _preexec() -> Callable[[], None] | None:
    return die_with_parent if sys.platform.startswith("linux") else None


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True

