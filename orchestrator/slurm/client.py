"""The only module that runs Slurm's commands (sbatch, squeue, sacct, sinfo, scancel, scontrol).

Every call goes through one ``Runner``: ``(argv, timeout) -> CompletedProcess[str]``. The default,
:func:`run_command`, wraps ``subprocess.run`` and turns "command not found" and timeouts into a
SlurmError with the fix; tests inject their own runner (or put stub executables on PATH).
Here: submitting (sbatch), cancelling and requeueing, and :func:`query`, the one way to ask Slurm
something, which :mod:`orchestrator.slurm.queries` (squeue, sacct, scontrol show job: what Slurm says
about jobs) calls. Refusals are SlurmErrors with Slurm's own message.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from orchestrator.errors import SlurmError

if TYPE_CHECKING:
    import subprocess

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0  # seconds; a missing SLURM_CONF alone makes clients retry for 60 s
SBATCH_TIMEOUT = 120.0
_NOT_FOUND_HINT = ("run orch on a Slurm login node, put Slurm's client commands on PATH, "
                   "or use 'orch run' for a local run")
JOB_ID_RE = re.compile(r"[0-9]{1,20}")  # ASCII digits, bounded (\d also matches other scripts' digits)


class Runner(Protocol):
    """Runs one command and returns its result (text mode); raises SlurmError when it cannot run."""

    def __call__(self, argv: Sequence[str], timeout: float, /) -> subprocess.CompletedProcess[str]: ...


def run_command(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """The default Runner: ``subprocess.run`` with captured text output and a timeout."""
    import subprocess

    log.debug("running %s", " ".join(argv))
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL, errors="replace")
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]} not found", hint=_NOT_FOUND_HINT) from None
    except PermissionError as exc:
        raise SlurmError(f"cannot run {argv[0]}: {exc.strerror}", hint=_NOT_FOUND_HINT) from None
    except subprocess.TimeoutExpired:
        raise SlurmError(
            f"{argv[0]} did not answer within {timeout:g} s",
            hint="is slurmctld up and SLURM_CONF right? try 'scontrol ping'",
        ) from None


def command_output(argv: Sequence[str], *, runner: Runner = run_command,
                   timeout: float = DEFAULT_TIMEOUT) -> str:
    """Run a Slurm command; its stdout, or SlurmError with Slurm's own stderr when it fails."""
    result = runner(argv, timeout)
    if result.returncode != 0:
        raise SlurmError(f"{argv[0]} failed (exit {result.returncode}): {_message(result)}",
                         hint=f"the message above is Slurm's own; the command was: {' '.join(argv)}")
    return result.stdout


# sbatch reads SBATCH_<OPTION> variables (SBATCH_TIMELIMIT, SBATCH_PARTITION, ...) and lets them win
# over the #SBATCH lines, so a variable in the user's shell would silently replace a value orch
# validated. sbatch runs without them; the script's #SBATCH lines carry every option orch chose
# (site options belong in cluster.yaml defaults.sbatch or --sbatch-arg).
SBATCH_ENV_PREFIX = "SBATCH_"


def sbatch_environment(environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """(the environment for sbatch, the SBATCH_* names left out of it)."""
    dropped = sorted(name for name in environ if name.startswith(SBATCH_ENV_PREFIX))
    return {k: v for k, v in environ.items() if not k.startswith(SBATCH_ENV_PREFIX)}, dropped


def run_sbatch_command(environ: Mapping[str, str]) -> Runner:
    """A Runner like :func:`run_command` whose commands see ``environ``."""
    import subprocess

    def run(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        log.debug("running %s", " ".join(argv))
        try:
            return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False,
                                  stdin=subprocess.DEVNULL, errors="replace", env=dict(environ))
        except FileNotFoundError:
            raise SlurmError(f"{argv[0]} not found", hint=_NOT_FOUND_HINT) from None
        except PermissionError as exc:
            raise SlurmError(f"cannot run {argv[0]}: {exc.strerror}", hint=_NOT_FOUND_HINT) from None
        except subprocess.TimeoutExpired:
            raise SlurmError(f"{argv[0]} did not answer within {timeout:g} s",
                             hint="is slurmctld up and SLURM_CONF right? try 'scontrol ping'") from None

    return run


def sbatch(script_path: Path, *, runner: Runner | None = None, timeout: float = SBATCH_TIMEOUT,
           environ: Mapping[str, str] | None = None, comment: str | None = None, options: Sequence[str] = ()) -> str:
    """Queue ``script_path`` with ``sbatch --parsable``; the job id (``jobid[;cluster]`` -> jobid).

    Without a ``runner``, sbatch runs in ``environ`` (default: this process's) minus SBATCH_* variables.
    ``comment``: the job's ``--comment``; ``options``: more sbatch options (``--array=1,3``); on the command
    line, both win over the script's ``#SBATCH`` lines.
    """
    argv = ["sbatch", "--parsable", *([f"--comment={comment}"] if comment is not None else []), *options,
            str(script_path)]
    if runner is None:
        import os

        clean, dropped = sbatch_environment(os.environ if environ is None else environ)
        if dropped:
            log.warning("ignoring %s from the environment: the script's #SBATCH lines hold the values orch "
                        "checked (use --sbatch-arg or cluster.yaml defaults.sbatch for other options)",
                        ", ".join(dropped))
        runner = run_sbatch_command(clean)
    result = runner(argv, timeout)
    if result.returncode != 0:
        raise SlurmError(f"sbatch refused the job: {_message(result)}",
                         hint="the message above is Slurm's own; fix the request (or cluster.yaml) "
                              "and submit again")
    return parse_sbatch_output(result.stdout)


def parse_sbatch_output(stdout: str) -> str:
    """``sbatch --parsable`` prints ``jobid`` or ``jobid;cluster`` (the last non-empty line)."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    job_id = lines[-1].split(";", 1)[0].strip() if lines else ""
    if not JOB_ID_RE.fullmatch(job_id):
        raise SlurmError(f"sbatch printed no job id (output: {stdout.strip()!r})",
                         hint="check with squeue whether the job was queued; is this a real sbatch?")
    return job_id


def _message(result: subprocess.CompletedProcess[str]) -> str:
    text = (result.stderr or "").strip() or (result.stdout or "").strip()
    return text or f"no message (exit {result.returncode})"


# ---------------------------------------------------------------------------------------------
# Asking and acting on jobs: query (squeue, sacct, scontrol: slurm/queries.py reads their answers),
# sinfo, scancel, scontrol requeue.
# ---------------------------------------------------------------------------------------------

QUERY_TIMEOUT = 20.0  # seconds for one squeue/sacct/scontrol/scancel call (a bad SLURM_CONF stalls 60 s)
# Many job ids are asked for in batches: Linux bounds one argument to 128 KiB (MAX_ARG_STRLEN) and
# the whole command line to about 2 MiB; 15,000 ids on one ``--jobs=`` died with E2BIG. Each call
# carries ids worth at most ID_BATCH_BYTES (about 3,000 ids of 7 digits), so a query of N ids makes
# ceil(N / 3000)-ish calls, each well under both limits and under the controller's RPC size.
ID_BATCH_BYTES = 24 * 1024
_INVALID_JOB = "Invalid job id"


def check_slurm_conf(environ: Mapping[str, str]) -> None:
    """A SLURM_CONF that names no file makes every client retry for 60 s: say so at once."""
    conf = environ.get("SLURM_CONF")
    if conf and not Path(conf).is_file():
        raise SlurmError(f"SLURM_CONF={conf} does not exist",
                         hint="unset SLURM_CONF or point it at the cluster's slurm.conf "
                              "(for the test cluster: eval \"$(tests/slurm/cluster.sh env)\")")


def query(argv: Sequence[str], runner: Runner) -> subprocess.CompletedProcess[str]:
    """Run one Slurm client (the runner turns a missing binary or a hang into a SlurmError); a failure
    other than "Invalid job id" (which callers read as "Slurm no longer knows it") is a SlurmError."""
    import os

    check_slurm_conf(os.environ)
    proc = runner(list(argv), QUERY_TIMEOUT)
    if proc.returncode != 0 and _INVALID_JOB not in (proc.stderr or ""):
        raise client_error(argv[0], proc)
    return proc


def client_error(tool: str, proc: subprocess.CompletedProcess[str]) -> SlurmError:
    """Slurm's own message (its last line) as a SlurmError, with the fix for the usual causes."""
    lines = [ln.strip() for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip()]
    message = lines[-1] if lines else f"{tool} exited with {proc.returncode}"
    if any("contact slurm controller" in ln or "Connection refused" in ln for ln in lines):
        return SlurmError(f"cannot reach slurmctld: {message}",
                          hint="start Slurm (for the test cluster: tests/slurm/cluster.sh up) and check "
                               "SLURM_CONF")
    return SlurmError(message, hint=f"{tool} refused the request; see Slurm's message above")


def sinfo(*, runner: Runner = run_command) -> str:
    """sinfo's partitions, a line per partition and node configuration (``slurm/discover.py`` reads them)."""
    from orchestrator.slurm.discover import SINFO_FORMAT

    return query(["sinfo", "--noheader", "-o", SINFO_FORMAT], runner).stdout


def id_batches(job_ids: Sequence[str], limit: int = ID_BATCH_BYTES) -> Iterator[list[str]]:
    """``job_ids`` in order, cut into lists whose comma-joined length stays within ``limit`` bytes
    (an id longer than the limit alone is its own batch: ids are bounded to 40 characters upstream)."""
    batch: list[str] = []
    size = 0
    for job_id in job_ids:
        cost = len(job_id.encode("utf-8", "surrogatepass")) + 1
        if batch and size + cost > limit:
            yield batch
            batch, size = [], 0
        batch.append(job_id)
        size += cost
    if batch:
        yield batch


def scancel(job_ids: Sequence[str], *, signal: str | None = None, full: bool = False,
            runner: Runner = run_command) -> None:
    """Cancel (or, with ``signal``, only signal) jobs; Slurm's refusal is a SlurmError."""
    argv = ["scancel"]
    if signal:
        argv.append(f"--signal={signal}")
    if full:
        argv.append("--full")
    for batch in id_batches(job_ids):  # one argument per id: the same bound on the command line
        proc = query([*argv, *batch], runner)
        if proc.returncode != 0:
            raise client_error("scancel", proc)


def requeue(job_id: str, *, runner: Runner = run_command) -> None:
    """``scontrol requeue`` (array-aware: pass ``123_4`` for an array element)."""
    proc = query(["scontrol", "requeue", job_id], runner)
    if proc.returncode != 0:
        raise client_error("scontrol", proc)
