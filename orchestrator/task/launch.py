"""One task's process, torch-free: what ``python -m orchestrator.runtime.launch --job-dir DIR`` does
(what srun and ``orch run`` start) before and around the torch side it is handed (:class:`TaskRuntime`).

1. read ``job.json`` of the job folder (the contract written by ``orch submit``/``orch run``);
2. install the preemption handler (before torch is imported: a signal during start-up is kept);
3. derive this task's DistEnv from the environment (``distenv.derive``, the same code for Slurm
   and local runs) and export it: this module and, for a script, :mod:`orchestrator.task.scriptenv` are
   the only ones that set RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR and
   MASTER_PORT, and the cluster's ``env``;
4. import torch and run the job through the shared entrypoint, or the user's script: both through the
   :class:`TaskRuntime` the caller passes (``orchestrator.runtime.launch``; tests may pass their own).

``python -m orchestrator.runtime.launch --master-port --job-dir DIR`` prints the job's MASTER_PORT (from
SLURM_JOB_ID and SLURM_RESTART_COUNT) for the batch script and exits, without importing torch. It
checks the job folder's checkpoint first (``resumecheck``): a requeued or resubmitted job whose
checkpoint belongs to another job stops there, with the error in the batch log and no srun.

Errors print ``orch: error: rank R: ...`` and a HINT (exit 2 for bad input or environment, 1 for
a failure during training, with the traceback above it), never a bare traceback.

Each task also leaves how it ended in ``logs/rank<R>.outcome.json`` (:mod:`orchestrator.task.outcome`):
``running`` from the moment its rank is known, then completed, failed, gave up waiting in a
collective (exit 3, with the timeout that applied), or stopped by SIGTERM while running (written by
the SIGTERM handler, which then ends the task's children and lets the signal take its course). A task
whose outcome is recorded is leaving: a SIGTERM then (the other ranks of a failed run stopped while this
one's DataLoader still joins its workers) ends it with the exit code it recorded, without stack dumps.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import signal
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NoReturn, Protocol

from orchestrator.env import distenv, taskenv
from orchestrator.errors import ConfigError, DistEnvError, OrchError, RendezvousTimeout
from orchestrator.records.codetrust import check_task_code
from orchestrator.records.joblayout import outcome_path
from orchestrator.records.restarts.rankoutcome import PEER_FAILURE_EXIT, Kind  # a collective failed or timed out
from orchestrator.records.resumecheck import check_resume_folder
from orchestrator.records.stacks import STACK
from orchestrator.records.startup import CLOCK
from orchestrator.records.trust import check_job_dir
from orchestrator.spec.numbers import FULL_DISK, full_disk, parse_int
from orchestrator.spec.runconfig import CHECKPOINT_DIR, JOB_FILE, RunConfig, read_run_config
from orchestrator.spec.snapshot import relocate_paths
from orchestrator.task import hang, scripttimeout, termwake
from orchestrator.task.outcome import RECORDER
from orchestrator.task.preempt import PreemptFlag
from orchestrator.task.reaper import become_subreaper, end_children

if TYPE_CHECKING:
    from orchestrator.env.devices import DeviceChoice


class TaskRuntime(scripttimeout.Bounder, Protocol):
    """Torch's side of a task, handed to :func:`main` by ``orchestrator.runtime.launch`` (the layer above):
    this module never imports torch or the runtime itself."""

    def import_torch(self) -> None:
        """``import torch`` (timed as the ``import_torch`` start-up phase)."""

    def train(self, cfg: RunConfig, env: distenv.DistEnv, job_dir: Path, flag: PreemptFlag,
              environ: os._Environ[str]) -> int:
        """Run the job through the shared entrypoint; the exit code."""

    def bind_script_device(self, *, rank: int, local_rank: int, local_world_size: int, gpus_per_task: int,
                           visible: str | None) -> DeviceChoice:
        """Bind a script task's GPU before the script runs."""

    def host_script_store(self, addr: str, port: int, *, world_size: int, timeout: int) -> None:
        """Rank 0 of a script on one machine: host the rendezvous store on loopback (runtime.rendezvous)."""

    def watch_world(self, on_join: Callable[[int, int, str, bool | None], None], *, master_addr: str,
                    master_port: int) -> None:
        """Scripts: ``on_join(size, rank, backend, at_orch)`` after each init_process_group (runtime.worldhook)."""

    def watch_spawned_world(self, on_join: Callable[[int, int, str, bool | None], None], *, master_addr: str,
                            master_port: int) -> None:
        """Per-node scripts: the same, in each process ``torch.multiprocessing`` starts (picklable ``on_join``)."""

    # in-process restarts (orchestrator/restarts/, a layer above this one: reached through the runtime only)
    def is_agent(self, cfg: RunConfig, *, preflight: bool, loopback: bool) -> bool:
        """Whether this task is its rank's agent (``launcher.restart: in-process``; restarts/agent.py)."""

    def supervise(self, cfg: RunConfig, env: distenv.DistEnv, job_dir: Path, *, on_start: Callable[[int], None],
                  in_worker: Callable[[], None], script: Callable[[], int] | None = None) -> int:
        """This task as its rank's agent: it forks the rank's worker for each generation; the agent's exit code.
        In each worker (the forked process) ``in_worker()`` runs, then ``script()`` (a script's warm restarts) or
        orch's entrypoint generation by generation, and what that returns is returned here, in that process
        (its errors raise here): ``on_start(generation)`` starts each worker's records."""

    def describe_failure(self, exc: BaseException, timeout: int) -> tuple[str, str] | None:
        """(message, hint) when ``exc`` is a collective that failed or timed out (another rank's failure)."""

    def applied_timeout(self, text: str) -> int | None:
        """The timeout a collective's error message names, if any."""


FAILURE_EXIT = 1  # this rank failed (an exception in training or in the job's code)
RANK_VARS = ("RANK", *distenv.SLURM_VARS["rank"])  # to name the rank in errors raised before derivation


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.runtime.launch",
                                     description="Run one task (rank) of an orch job.")
    parser.add_argument("--job-dir", required=True, metavar="DIR", help="the job folder (holds job.json)")
    parser.add_argument("--master-port", action="store_true",
                        help="print the job's MASTER_PORT (batch script) and exit")
    parser.add_argument("--preflight", action="store_true",
                        help="run the selftest checks instead of the job (orch submit --preflight)")
    return parser


def export_environment(cfg: RunConfig, env: distenv.DistEnv, environ: os._Environ[str]) -> None:
    """The cluster's ``env`` first, then the rank variables (which nothing may override)."""
    environ.update(cfg.env)
    environ.update(env.torch_env())


def preflight_config(cfg: RunConfig, environ: Mapping[str, str]) -> RunConfig:
    """The job's configuration with the built-in selftest (quick settings) in place of its training."""
    from orchestrator.spec.job import BUILTIN_JOBS_DIR
    from orchestrator.task.selftest import selftest_params

    return cfg.model_copy(update={"job_file": str(BUILTIN_JOBS_DIR / "selftest.py"), "script": None,
                                  "params": selftest_params(environ), "data_dir": None})


def check_world(cfg: RunConfig, env: distenv.DistEnv) -> None:
    if env.world_size != cfg.world_size:
        raise DistEnvError(
            f"rank {env.rank}: the job was set up for {cfg.world_size} ranks ({cfg.nodes} node(s) x "
            f"{cfg.tasks_per_node}), but this step has {env.world_size}",
            hint="start the tasks with the job's own script (orch submit) or orch run --resume, "
                 "not with a hand-made srun/torchrun of another size")


def _rank_label(environ: Mapping[str, str], env: distenv.DistEnv | None) -> str:
    if env is not None:
        return f"rank {env.rank}"
    for var in RANK_VARS:
        if parse_int(environ.get(var), digits=9) is not None:
            return f"rank {environ[var].strip()}"
    return "rank ?"


def start_outcome(cfg: RunConfig, env: distenv.DistEnv, job_dir: Path, environ: Mapping[str, str]) -> None:
    """This task's outcome record: ``running`` from now on, for this run (job id and restart)."""
    slurm = cfg.mode == "slurm"
    RECORDER.start(outcome_path(job_dir, env.rank), rank=env.rank, world_size=env.world_size,
                   run=distenv.script_run_id(environ, "local") if slurm else "local",
                   restart=distenv.restart_count(environ, cfg.restarts), stopped_by="Slurm" if slurm else "orch run",
                   init_timeout=cfg.launcher.init_timeout, collective_timeout=cfg.launcher.collective_timeout)
    STACK.start(job_dir, env.rank)  # this attempt's stack file, once a hang ends (records/stacks.py)


def install_term_record(preempt_signal: str) -> None:
    """On SIGTERM (unless it is the preemption signal): record "stopped by SIGTERM while running"
    with the last step, end this task's own children, then die of SIGTERM as without a handler.
    Installed before :func:`hang.install_stack_dumps`, whose handler dumps the stacks and chains here."""
    if not hang.stack_dump_signals(preempt_signal):
        return
    owner = os.getpid()

    def on_term(signum: int, frame: FrameType | None) -> None:
        if not termwake.first():  # begun already: the main thread was woken (termwake) while in here
            return
        recorded = RECORDER.exit_code if RECORDER.final else None
        if os.getpid() == owner and recorded is not None and recorded >= 0:
            # the task was leaving with its own outcome (an error's frames going, a DataLoader joining its
            # workers) when orch run or srun stopped the ranks still there: nothing was stuck, so it leaves
            # now, with the exit code it recorded, not as one stopped while running
            _leave(recorded)
        if os.getpid() == owner:  # not in a forked child (a DataLoader worker inherits the handler)
            hang.say_stopped(signum, RECORDER.base.get("rank"))
            STACK.stopped(frame)  # where this rank was (the others may be waiting for it)
            RECORDER.finish("signalled", -signum, signal_name=signal.Signals(signum).name)
            end_children()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, on_term)
    termwake.install(signal.SIGTERM, on_term)  # taken by another thread: the main thread still runs on_term at once


def _reason(message: str) -> str:
    """The message without its ``rank R:`` / ``rank R failed:`` label (the record names the rank)."""
    return re.sub(r"^rank \d+( failed)?: ", "", message)


def use_snapshot(cfg: RunConfig) -> None:
    """A job with a code snapshot imports from it: ``sys.path`` entries inside its source move into it
    (the script's or job file's own path is moved by scriptrun and the entrypoint)."""
    snap = cfg.snapshot
    if snap is None:
        return
    if not Path(snap.path).is_dir():
        raise ConfigError(f"the job's code snapshot {snap.path} is missing",
                          hint="it was removed (by hand? orch clean keeps the snapshots job folders name); "
                               "submit the job again")
    sys.path[:] = relocate_paths(sys.path, snap, cfg.script.cwd if cfg.script is not None else os.getcwd())


def main(argv: Sequence[str] | None, runtime: TaskRuntime) -> int:
    code = _main(argv, runtime)
    if code == 0:
        RECORDER.finish("completed", 0)
    else:  # a script's own exit code (errors were recorded where they were caught)
        RECORDER.finish("failed", code, reason=f"the script exited with code {code}")
    return code


def _main(argv: Sequence[str] | None, runtime: TaskRuntime) -> int:
    args = build_parser().parse_args(argv)
    become_subreaper()
    os.umask(0o077)  # orch's records, a job file's outputs: the user's alone (a script: scriptrun, the user's)
    job_dir = Path(args.job_dir).expanduser().absolute()
    env: distenv.DistEnv | None = None
    timeout = 0
    script = False  # the job runs a user's script (its exceptions are the script's, not orch's)
    try:
        check_job_dir(job_dir, job_file=JOB_FILE, checkpoint_dir=CHECKPOINT_DIR)
        cfg = read_run_config(job_dir)
        check_task_code(cfg.script, cfg.job_file, siblings=args.master_port)  # as at submit, again at start
        if args.master_port:  # the batch script, before srun: a checkpoint of another job stops it here
            check_resume_folder(job_dir, cfg)
            print(distenv.job_master_port(os.environ, cfg.launcher.port_range))
            return 0
        if args.preflight:
            cfg = preflight_config(cfg, os.environ)

        CLOCK.start(os.environ, job_dir)  # queued, batch, to_task: the batch script's and the kernel's times
        flag = PreemptFlag(cfg.launcher.preempt_signal).install()
        install_term_record(cfg.launcher.preempt_signal)
        hang.install_stack_dumps(cfg.launcher.preempt_signal)  # a stopped (stuck) rank shows where it was
        timeout = cfg.launcher.collective_timeout
        env = distenv.derive(os.environ, port_range=cfg.launcher.port_range)
        if not args.preflight:  # the preflight step has its own verdict (preflight.json)
            start_outcome(cfg, env, job_dir, os.environ)
        check_world(cfg, env)
        use_snapshot(cfg)
        if cfg.script is not None:  # bring your own script: run it as torchrun would
            from orchestrator.task import scriptenv, scriptrun, worldcheck

            scriptenv.export_script_environment(cfg, env, job_dir, os.environ)
            script = True
            per_node = cfg.script.launch.style == "per-node"  # its own rank 0 hosts the store
            if env.rank == 0 and taskenv.is_loopback(env.master_addr) and not per_node:  # on loopback only
                runtime.host_script_store(env.master_addr, env.master_port, world_size=env.world_size,
                                          timeout=cfg.launcher.init_timeout)

            def run_script() -> int:
                scripttimeout.bound(cfg, runtime)  # its process group: launcher.collective_timeout, unless its own
                # which world this rank joins (--strict-world: fail); a warm restart's world meets where its agent said
                settle = worldcheck.watch(cfg, scriptenv.current_master(env, os.environ), runtime)
                return settle(scriptrun.run(cfg, env.rank, env.local_rank, env.local_world_size, job_dir, os.environ,
                                            bind=runtime.bind_script_device))

            if runtime.is_agent(cfg, preflight=args.preflight, loopback=taskenv.is_loopback(env.master_addr)):
                # the agent's exit code (a warm restart forks each attempt's world from it), or a worker's
                return run_as_agent(cfg, env, job_dir, runtime, script=run_script)
            return run_script()
        export_environment(cfg, env, os.environ)
        # NCCL: last collectives, on timeout (under the names the installed torch reads)
        os.environ.update(hang.flight_recorder_env(job_dir, os.environ, hang.installed_torch_version()))
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                            format=f"%(levelname)s rank {env.rank} %(name)s: %(message)s")
        runtime.import_torch()
        CLOCK.lap("imports")
        if runtime.is_agent(cfg, preflight=args.preflight, loopback=taskenv.is_loopback(env.master_addr)):
            # this task is an agent: it forks the rank's worker per attempt, which trains generation by generation
            return run_as_agent(cfg, env, job_dir, runtime)  # the agent's exit code (its worker's), or a worker's
        return runtime.train(cfg, env, job_dir, flag, os.environ)
    except OrchError as exc:
        if args.master_port:  # the batch script's step: no rank yet
            print(exc.render(), file=sys.stderr, flush=True)
            return exc.exit_code
        return _failed(exc, env)
    except KeyboardInterrupt:
        print(f"orch: {_rank_label(os.environ, env)} interrupted", file=sys.stderr, flush=True)
        return _ended("signalled", 130, signal_name="SIGINT")
    except Exception as exc:
        if not script and isinstance(exc, OSError) and exc.errno in FULL_DISK:  # a write orch did not name
            return _failed(full_disk(Path(os.fsdecode(exc.filename or job_dir)), exc), env)
        if script:  # the script's own error: its traceback as python prints it (without orch's frames)
            from orchestrator.task.scriptrun import format_script_error

            sys.stderr.write(format_script_error(exc, os.environ))
        else:
            traceback.print_exc(file=sys.stderr)
        peer = None
        applied: int | None = None
        if "torch" in sys.modules:
            # the timeout in force (init_timeout in build and at start-up) when the error names none
            peer = runtime.describe_failure(exc, RECORDER.timeout[0] if RECORDER.timeout else timeout)
            if peer is not None:
                applied = runtime.applied_timeout(str(exc))
                hang.dump_stacks()  # which collective this rank was in, next to the stuck rank's stacks
                STACK.waited(exc)  # the same, for the table of the ranks' places (records/stacks.py)
        text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        if script and env is not None:  # what torchelastic's @record wrote: the message and where it was raised
            from orchestrator.records.errorfiles import read_error_file

            recorded = read_error_file(job_dir, env.rank)
            detail = recorded.describe() if recorded is not None else detail
        label = _rank_label(os.environ, env)
        if peer is not None:
            message, hint = f"{label} failed: {peer[0]} ({detail})", peer[1]
        else:
            message, hint = f"{label} failed: {detail}", "see the traceback above"
        # A script's own error: its traceback says it all (orch run then prints the one orch: error: line,
        # from this rank's record); orch's diagnosis of a collective that failed for a peer is still printed.
        if not (script and peer is None):
            print(OrchError(message, hint).render(), file=sys.stderr, flush=True)
        if peer is None:
            return _ended("failed", FAILURE_EXIT, reason=_reason(message))
        how = "timeout" if "timed out" in peer[0] else "lost"
        return _ended("waited", PEER_FAILURE_EXIT, reason=_reason(message), how=how, timeout_s=applied)


def run_as_agent(cfg: RunConfig, env: distenv.DistEnv, job_dir: Path, runtime: TaskRuntime,
                 script: Callable[[], int] | None = None) -> int:
    """This task as an agent (orchestrator/restarts/, through ``runtime``): its exit code; in each worker it forks,
    the worker's (``script``: a script's run; None: orch's entrypoint, trained generation by generation)."""
    def start(_: int) -> None:
        if cfg.script is not None:  # torchrun's count: the world's restarts, one higher in each generation
            os.environ["TORCHELASTIC_RESTART_COUNT"] = str(distenv.restart_count(os.environ, cfg.restarts))
        start_outcome(cfg, env, job_dir, os.environ)

    def in_worker() -> None:  # the worker's own handlers
        install_term_record(cfg.launcher.preempt_signal)
        hang.install_stack_dumps(cfg.launcher.preempt_signal)

    return runtime.supervise(cfg, env, job_dir, on_start=start, in_worker=in_worker, script=script)


def _failed(exc: OrchError, env: distenv.DistEnv | None) -> int:
    """This rank's one error line (and HINT), and its outcome record."""
    label = _rank_label(os.environ, env)
    message = exc.message if exc.message.startswith("rank ") else f"{label}: {exc.message}"
    print(OrchError(message, exc.hint).render(), file=sys.stderr, flush=True)
    if isinstance(exc, RendezvousTimeout):
        return _ended("waited", exc.exit_code, reason=_reason(message), how="timeout", timeout_s=exc.timeout_s)
    return _ended("failed", exc.exit_code, reason=_reason(message))


def _ended(kind: Kind, code: int, *, reason: str | None = None, how: str | None = None,
           timeout_s: int | None = None, signal_name: str | None = None) -> int:
    """This rank's final record; from here on it is leaving: a SIGTERM now dumps no stacks (nothing is stuck) and
    ends it with ``code`` (install_term_record). Returns ``code``."""
    RECORDER.finish(kind, code, reason=reason, how=how, timeout_s=timeout_s, signal_name=signal_name)
    hang.remove_stack_dumps()
    return code


def entrypoint(runtime: TaskRuntime) -> None:
    """Run ``main`` and leave without interpreter teardown: once the process group is destroyed
    and the output flushed, nothing is left to do, and torch's C++ threads can abort a normal exit
    ("terminate called without an active exception") after an error, changing the exit code."""
    code = main(None, runtime)
    hang.remove_stack_dumps()
    logging.shutdown()
    _leave(code)


def _leave(code: int) -> NoReturn:
    """The output flushed and this task's children ended, exit with ``code`` at once (no interpreter teardown)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    end_children()
    os._exit(code)
