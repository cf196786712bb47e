"""Run a user's script in a task, as torchrun would (``launch.py`` calls this for ``job.json`` ``script``).

By the time :func:`run` is called, ``launch.py`` has derived this task's place and exported
torchrun's variables (:func:`orchestrator.env.taskenv.script_env`). Here, in this process:

1. change to the submit directory (``script.cwd`` in ``job.json``: where ``orch submit``/``orch run``
   was started, as plain ``sbatch`` does), with or without a code snapshot: a relative path the script
   writes (``runs/a``, ``lightning_logs/``) lands there, never in the read-only snapshot;
2. on a GPU task, import torch and bind the task's GPU (``torch.cuda.set_device``), so a script
   that never calls ``set_device`` (or calls ``.cuda()``) does not open a context on GPU 0;
3. set ``sys.argv`` to ``[script, ARGS...]`` and ``sys.path[0]`` to the script's folder (for ``-m``:
   the submit directory), both in the snapshot when there is one (what was submitted is what runs),
   as ``python script.py`` does, and run it with :mod:`runpy` under the user's umask (``job.json``
   ``umask``; orch's own records keep their explicit modes, and umask 077 is back once it returns);
   A Hydra app (``@hydra.main``) gets the job's one run directory as overrides after its own arguments
   (:mod:`orchestrator.spec.hydra`: ``<job folder>/hydra`` for every rank);
4. the script's exit status is the task's. Exit code ``REQUEUE_EXIT`` (75) asks for a requeue
   after a preemption: the task leaves the job folder's ``requeue`` file and exits 0, the batch
   script requeues the job, and the next run sees ``TORCHELASTIC_RESTART_COUNT`` one higher.

The preemption handler that ``launch.py`` installed stays in place: a script that does not install
its own handler for the signal keeps running (and is ended at the time limit, as Slurm does).
When the script returns, its ``atexit`` handlers run and the task leaves with ``os._exit`` (as
orch's own tasks do): threads the script left running are not waited for.
"""

from __future__ import annotations

import atexit
import os
import runpy
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path

from orchestrator.env.devices import NVIDIA_DEVICE, VISIBLE_VAR, parse_visible_devices
from orchestrator.errors import ConfigError
from orchestrator.spec.hydra import describe as describe_hydra
from orchestrator.spec.hydra import hydra_entry, run_dir_overrides
from orchestrator.spec.launch import PLACEHOLDER_VARS, fill_placeholders, local_rank_argument
from orchestrator.spec.runconfig import REQUEUE_FILE, RunConfig
from orchestrator.spec.script import REQUEUE_EXIT, ScriptTarget
from orchestrator.spec.snapshot import relocate
from orchestrator.spec.umask import PRIVATE_UMASK, umask_value
from orchestrator.task.lines import fresh_line

DEBUG_ENV_VAR = "ORCH_DEBUG"  # =1: a script's traceback keeps orch's own frames (launch, scriptrun, runpy)
_ORCH_DIR = str(Path(__file__).resolve().parents[1]) + os.sep
_RUNPY_FILES = frozenset({"<frozen runpy>", runpy.__file__})


def should_bind(cfg: RunConfig, visible: str | None, has_nvidia: bool) -> bool:
    """Whether to import torch and bind a GPU before the script (pure)."""
    if cfg.script is not None and cfg.script.launch.style == "per-node":
        return False  # its own processes bind their GPUs; a context here would sit on GPU 0
    ids = parse_visible_devices(visible)
    if ids is not None and not ids:  # CUDA_VISIBLE_DEVICES="" (orch run --cpu, or no GPUs given)
        return False
    if cfg.mode == "slurm":
        return cfg.gpus_per_node > 0
    return has_nvidia


def exit_code(exc: SystemExit) -> int:
    """The process exit status Python gives ``raise SystemExit(code)``."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    print(code, file=sys.stderr, flush=True)
    return 1


def _while_compiling(exc: BaseException) -> bool:
    """True when ``exc`` came from compiling the script (every frame is orch's or runpy's, none the script's)."""
    return all(_orch_frame(frame.filename) for frame in traceback.extract_tb(exc.__traceback__))


def _compile_failure(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"{exc.msg} (line {exc.lineno or '?'})"
    if isinstance(exc, RecursionError):
        return "too deeply nested (the compiler ran out of recursion)"
    return "too large or too deeply nested (out of memory while compiling)"


def _orch_frame(filename: str) -> bool:
    return filename in _RUNPY_FILES or os.path.abspath(filename).startswith(_ORCH_DIR)


def _trim(error: traceback.TracebackException) -> None:
    """Drop the frames above the script's own (launch, scriptrun, runpy), in chained errors too."""
    seen: set[int] = set()
    stack = [error]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        frames = list(current.stack)
        start = 0
        while start < len(frames) and _orch_frame(frames[start].filename):
            start += 1
        if start < len(frames):  # an error raised by orch itself keeps its frames
            current.stack = traceback.StackSummary.from_list(frames[start:])
        stack += [e for e in (current.__cause__, current.__context__) if e is not None]
        stack += getattr(current, "exceptions", None) or []  # exception groups


def format_script_error(exc: BaseException, environ: Mapping[str, str]) -> str:
    """A script's uncaught exception as ``python script.py`` prints it: the traceback starts at the
    script's own frames, without orch's launcher and runpy above them (``ORCH_DEBUG=1``: all frames)."""
    error = traceback.TracebackException.from_exception(exc)
    if environ.get(DEBUG_ENV_VAR) != "1":
        _trim(error)
    return "".join(error.format())


def script_argv(target: ScriptTarget, module_file: str | None = None) -> list[str]:
    return [target.target if target.kind == "script" else (module_file or target.target), *target.args]


def styled_args(target: ScriptTarget, local_rank: int, environ: Mapping[str, str]) -> ScriptTarget:
    """The script's arguments as its launch style gives them (``orchestrator.spec.launch``): local-rank-arg,
    ``--local-rank=N`` first, as ``torch.distributed.launch`` passed it; per-node, ``{node_rank}``... filled
    with this node's values (read back from the variables the launcher exported)."""
    launch = target.launch
    if launch.style == "local-rank-arg":
        return target.model_copy(update={"args": [local_rank_argument(launch.flag, local_rank), *target.args]})
    if launch.style == "per-node":
        values = {name: environ.get(var, "") for name, var in PLACEHOLDER_VARS.items()}
        return target.model_copy(update={"args": fill_placeholders(target.args, values)})
    return target


def hydra_args(target: ScriptTarget, rank: int, job_dir: Path, first: str) -> ScriptTarget:
    """A Hydra app's arguments with orch's run directory overrides after the script's own
    (:mod:`orchestrator.spec.hydra`); any other script's unchanged."""
    path = hydra_entry(target, [Path(first)])
    if path is None:
        return target
    extra = run_dir_overrides(job_dir, rank, path.stem, target.args)
    if extra and rank == 0:
        print(f"orch: {describe_hydra(job_dir)}", file=sys.stderr, flush=True)
    return target.model_copy(update={"args": [*target.args, *extra]})


def in_snapshot(cfg: RunConfig) -> tuple[ScriptTarget, str]:
    """The job's script as this task runs it, and the folder first on ``sys.path``: with a code snapshot,
    the script's path and (``-m``) the import folder moved into the snapshot when they lie in its source
    (:func:`orchestrator.spec.snapshot.relocate`). ``cwd`` stays the submit directory: the working directory."""
    target = cfg.script
    if target is None:
        raise ConfigError("job.json has no script", hint="the job folder is damaged; submit again")
    if target.kind == "script":
        moved = relocate(target.target, cfg.snapshot)
        return target.model_copy(update={"target": moved}), str(Path(moved).parent)
    return target, relocate(target.cwd, cfg.snapshot)


def run(cfg: RunConfig, rank: int, local_rank: int, local_world_size: int, job_dir: Path,
        environ: Mapping[str, str], *, bind: Callable[..., object]) -> int:
    """Run the job's script in this process; ``bind`` binds a GPU task's device first (torch's side:
    ``orchestrator.runtime.bind.bind_script_device``, handed down by the runtime's launcher)."""
    target, first = in_snapshot(cfg)
    target = hydra_args(styled_args(target, local_rank, environ), rank, job_dir, first)
    try:
        os.chdir(target.cwd)
    except OSError as exc:
        raise ConfigError(f"cannot change to the submit directory {target.cwd}: {exc.strerror}",
                          hint="submit from a directory the compute nodes share") from None
    if target.kind == "script" and not Path(target.target).is_file():
        raise ConfigError(f"script {target.target} does not exist on this node",
                          hint="keep the script on a file system the compute nodes share")
    if should_bind(cfg, environ.get(VISIBLE_VAR), NVIDIA_DEVICE.exists()):
        bind(rank=rank, local_rank=local_rank, local_world_size=local_world_size,
                           gpus_per_task=cfg.gpus_per_task, visible=environ.get(VISIBLE_VAR))
    requeue = job_dir / REQUEUE_FILE
    os.umask(umask_value(cfg.umask))  # the script's outputs are the user's: the umask of submit time
    try:
        code = _run_target(target, first)
        atexit._run_exitfuncs()  # what a normal interpreter exit does; launch leaves with os._exit
    finally:
        os.umask(PRIVATE_UMASK)  # orch's own records again (the requeue file, the outcome record)
    if code == REQUEUE_EXIT:
        requeue.touch()
        print(f"orch: rank {rank}: the script exited with {REQUEUE_EXIT}: requeue requested", file=sys.stderr,
              flush=True)
        return 0
    return code


def _run_target(target: ScriptTarget, first: str) -> int:
    sys.argv = script_argv(target)
    if sys.path:
        sys.path[0] = first
    else:
        sys.path.insert(0, first)
    try:
        if target.kind == "script":
            runpy.run_path(target.target, run_name="__main__")
        else:
            runpy.run_module(target.target, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return exit_code(exc)
    except (SyntaxError, RecursionError, MemoryError) as exc:
        if not _while_compiling(exc):  # the script's own error, raised while it ran
            raise
        raise ConfigError(f"Python cannot compile {target.target}: {_compile_failure(exc)}",
                          hint="split the deeply nested expression or statement into smaller parts") from None
    finally:
        fresh_line()  # the script's last output goes out; orch's lines after it start on a line of their own
    return 0
