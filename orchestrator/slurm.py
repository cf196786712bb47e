"""The only module that runs Slurm's commands (sbatch, squeue, sacct, scancel, scontrol).

Every call goes through one ``Runner``: ``(argv, timeout) -> CompletedProcess[str]``. The default,
:func:`run_command`, wraps ``subprocess.run`` and turns "command not found" and timeouts into a
SlurmError with the fix; tests inject their own runner (or put stub executables on PATH).
Functions here return parsed values and raise SlurmError with Slurm's own message on refusal.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from orchestrator.errors import SlurmError
from orchestrator.units import format_time, parse_time

if TYPE_CHECKING:
    import subprocess

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0  # seconds; a missing SLURM_CONF alone makes clients retry for 60 s
SBATCH_TIMEOUT = 120.0
_NOT_FOUND_HINT = ("run orch on a Slurm login node, put Slurm's client commands on PATH, "
                   "or use 'orch run' for a local run")
_JOB_ID_RE = re.compile(r"\d+")


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
           environ: Mapping[str, str] | None = None) -> str:
    """Queue ``script_path`` with ``sbatch --parsable``; the job id (``jobid[;cluster]`` -> jobid).

    Without a ``runner``, sbatch runs in ``environ`` (default: this process's) minus SBATCH_* variables.
    """
    argv = ["sbatch", "--parsable", str(script_path)]
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
    if not _JOB_ID_RE.fullmatch(job_id):
        raise SlurmError(f"sbatch printed no job id (output: {stdout.strip()!r})",
                         hint="check with squeue whether the job was queued; is this a real sbatch?")
    return job_id


def _message(result: subprocess.CompletedProcess[str]) -> str:
    text = (result.stderr or "").strip() or (result.stdout or "").strip()
    return text or f"no message (exit {result.returncode})"


# ---------------------------------------------------------------------------------------------
# Job state: squeue, sacct, scontrol show job, scancel (follow-up verbs and the Python API).
# ---------------------------------------------------------------------------------------------

QUERY_TIMEOUT = 20.0  # seconds for one squeue/sacct/scontrol/scancel call (a bad SLURM_CONF stalls 60 s)


@dataclass(frozen=True)
class StateInfo:
    """orch's reading of a Slurm job state: a coarse name and whether the job can still change."""

    orch: str
    terminal: bool


# Slurm's job state names (squeue %T, sacct State, scontrol JobState) -> orch's view. One table.
JOB_STATES: dict[str, StateInfo] = {
    "PENDING": StateInfo("queued", False),
    "REQUEUED": StateInfo("queued", False),
    "REQUEUE_FED": StateInfo("queued", False),
    "REQUEUE_HOLD": StateInfo("queued", False),
    "RESV_DEL_HOLD": StateInfo("queued", False),
    "CONFIGURING": StateInfo("starting", False),
    "RUNNING": StateInfo("running", False),
    "RESIZING": StateInfo("running", False),
    "SIGNALING": StateInfo("running", False),
    "COMPLETING": StateInfo("ending", False),
    "STAGE_OUT": StateInfo("ending", False),
    "SUSPENDED": StateInfo("suspended", False),
    "STOPPED": StateInfo("suspended", False),
    "SPECIAL_EXIT": StateInfo("held", False),
    "COMPLETED": StateInfo("completed", True),
    "CANCELLED": StateInfo("cancelled", True),
    "REVOKED": StateInfo("cancelled", True),
    "FAILED": StateInfo("failed", True),
    "BOOT_FAIL": StateInfo("failed", True),
    "NODE_FAIL": StateInfo("failed", True),
    "OUT_OF_MEMORY": StateInfo("failed", True),
    "TIMEOUT": StateInfo("timeout", True),
    "DEADLINE": StateInfo("timeout", True),
    "PREEMPTED": StateInfo("preempted", True),
}
UNKNOWN = StateInfo("unknown", False)
_ACCOUNTING_DISABLED = "accounting storage is disabled"
_INVALID_JOB = "Invalid job id"


def state_info(slurm_state: str) -> StateInfo:
    """The table entry for a state as any client prints it (``CANCELLED by 0``, ``RUNNING+``)."""
    words = slurm_state.split()
    return JOB_STATES.get(words[0].rstrip("+").upper(), UNKNOWN) if words else UNKNOWN


@dataclass(frozen=True)
class JobStatus:
    """What Slurm says about one job. ``state`` is Slurm's own name (``COMPLETED``)."""

    job_id: str
    state: str
    source: str  # which client said so: squeue, sacct, jobcomp (sacct -c), scontrol
    name: str | None = None
    reason: str | None = None
    nodes: str | None = None
    elapsed: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    restarts: int | None = None
    gpu_hours: float | None = None  # from accounting (sacct TRES), every run of a requeued job included

    @property
    def orch_state(self) -> str:
        return state_info(self.state).orch

    @property
    def terminal(self) -> bool:
        return state_info(self.state).terminal

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(orch_state=self.orch_state, terminal=self.terminal)
        return data


def parse_exit_code(text: str) -> tuple[int | None, int | None]:
    """``"3:0"`` (exit code : signal, as sacct and scontrol print it) -> ``(3, 0)``."""
    code, _, sig = text.strip().partition(":")
    if not code.isdigit():
        return None, None
    return int(code), int(sig) if sig.isdigit() else None


def _none_if_blank(value: str) -> str | None:
    value = value.strip()
    return None if value in ("", "(null)", "None", "Unknown") else value


def normalize_elapsed(text: str | None) -> str | None:
    """One format for elapsed times: ``[D-]HH:MM:SS`` (squeue prints ``0:16``, sacct ``00:00:16``)."""
    if text is None or not text.strip():
        return None
    if not text.strip().strip("0:-"):  # 0:00 (a job that has not started): parse_time refuses a zero time
        return format_time(0)
    try:
        seconds = parse_time(text.strip())
    except ValueError:
        return text.strip()
    return None if seconds is None else format_time(seconds)


def check_slurm_conf(environ: Mapping[str, str]) -> None:
    """A SLURM_CONF that names no file makes every client retry for 60 s: say so at once."""
    conf = environ.get("SLURM_CONF")
    if conf and not Path(conf).is_file():
        raise SlurmError(f"SLURM_CONF={conf} does not exist",
                         hint="unset SLURM_CONF or point it at the cluster's slurm.conf "
                              "(for the test cluster: eval \"$(tests/slurm/cluster.sh env)\")")


def _query(argv: Sequence[str], runner: Runner) -> subprocess.CompletedProcess[str]:
    """Run one client (the runner turns a missing binary or a hang into a SlurmError); a failure
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


# squeue -O fields (``FIELD:|``: no padding, a '|' after it), in the order parsed below; the name last
# (it may contain '|'). JobArrayID prints an array element as 123_4 (JobID would print its raw id).
SQUEUE_FIELDS = ("JobArrayID", "State", "Reason", "NodeList", "TimeUsed", "RestartCnt", "Name")
SQUEUE_FORMAT = ",".join(f"{name}:|" for name in SQUEUE_FIELDS[:-1]) + f",{SQUEUE_FIELDS[-1]}:"


def squeue(job_ids: Sequence[str] = (), *, runner: Runner = run_command) -> dict[str, JobStatus]:
    """Live jobs (and those finished less than MinJobAge ago), by job id as squeue prints it, with
    their restart count and pending reason (``BeginTime`` after a requeue), in one call.

    Text output, filtered by Slurm: ``squeue --json`` ignores ``--jobs`` in 22.05. Ids Slurm
    no longer knows are simply absent (squeue fails with "Invalid job id" when all are unknown).
    """
    argv = ["squeue", "--noheader", "--states=all", f"--Format={SQUEUE_FORMAT}"]
    if job_ids:
        argv.append("--jobs=" + ",".join(job_ids))
    proc = _query(argv, runner)
    jobs: dict[str, JobStatus] = {}
    for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
        fields = line.split("|", len(SQUEUE_FIELDS) - 1)
        if len(fields) != len(SQUEUE_FIELDS):
            continue
        job_id, state, reason, nodes, elapsed, restarts, name = fields
        job_id = job_id.strip()
        jobs[job_id] = JobStatus(job_id=job_id, state=state.strip(), source="squeue", name=name,
                                 reason=_none_if_blank(reason), nodes=_none_if_blank(nodes),
                                 elapsed=normalize_elapsed(elapsed),
                                 restarts=int(restarts) if restarts.strip().isdigit() else None)
    return jobs


_SACCT_FORMAT = "JobID,State,ExitCode,NodeList,Elapsed,JobName"


def _parse_sacct(stdout: str, source: str, wanted: Sequence[str]) -> dict[str, JobStatus]:
    jobs: dict[str, JobStatus] = {}
    for line in stdout.splitlines():
        fields = line.split("|", 5)
        if len(fields) != 6:
            continue
        job_id, state, exit_code, nodes, elapsed, name = (f.strip() for f in fields)
        if wanted and job_id not in wanted and job_id.partition("_")[0] not in wanted:
            continue
        code, sig = parse_exit_code(exit_code)
        # later lines win: a rebuilt test cluster reuses job ids, and its newest record comes last
        jobs[job_id] = JobStatus(job_id=job_id, state=state.split()[0] if state else "UNKNOWN", source=source,
                                 name=name, nodes=_none_if_blank(nodes), elapsed=normalize_elapsed(elapsed),
                                 exit_code=code, signal=sig)
    return jobs


# accounting: each run of a requeued job is a record of its own (--duplicates); the name last
_SACCT_TRES_FORMAT = "JobID,State,ExitCode,NodeList,Elapsed,ElapsedRaw,AllocTRES,JobName"
GPU_TRES = "gres/gpu"  # AllocTRES "billing=8,cpu=8,gres/gpu=4,mem=64G,node=1" (typed: gres/gpu:a100=4 too)


def tres_gpus(tres: str) -> int:
    """The GPUs an ``AllocTRES`` string holds (0 when none)."""
    for item in tres.split(","):
        key, _, value = item.partition("=")
        if key.strip() == GPU_TRES and value.strip().isdigit():
            return int(value)
    return 0


def _parse_sacct_runs(stdout: str, wanted: Sequence[str]) -> dict[str, JobStatus]:
    """``sacct --duplicates`` records: the last run's state, GPU-hours summed over all runs."""
    gpu_seconds: dict[str, int] = {}
    kept: list[str] = []
    for line in stdout.splitlines():
        fields = line.split("|", 7)
        if len(fields) != 8:
            continue
        job_id, raw, tres = fields[0].strip(), fields[5].strip(), fields[6]
        gpu_seconds[job_id] = gpu_seconds.get(job_id, 0) + (int(raw) if raw.isdigit() else 0) * tres_gpus(tres)
        kept.append("|".join([*fields[:5], fields[7]]))
    jobs = _parse_sacct("\n".join(kept), "sacct", wanted)
    return {i: replace(s, gpu_hours=round(gpu_seconds.get(i, 0) / 3600, 3)) for i, s in jobs.items()}


def sacct(job_ids: Sequence[str], *, runner: Runner = run_command) -> dict[str, JobStatus] | None:
    """Finished (and live) jobs from accounting in one call; None when accounting is disabled.

    Text, not ``--json``: in 22.05.8 the JSON exit code says 0 for failed jobs.
    """
    argv = ["sacct", "--noheader", "--parsable2", "--allocations", "--duplicates",
            f"--format={_SACCT_TRES_FORMAT}", "--jobs=" + ",".join(job_ids)]
    try:
        proc = _query(argv, runner)
    except SlurmError as exc:
        if _ACCOUNTING_DISABLED in exc.message:
            return None
        raise
    if _ACCOUNTING_DISABLED in proc.stdout + proc.stderr:
        return None
    return _parse_sacct_runs(proc.stdout, job_ids)


def jobcomp(job_ids: Sequence[str], *, runner: Runner = run_command) -> dict[str, JobStatus]:
    """Finished jobs from the job completion log (``sacct --completion``), for clusters without
    accounting. Empty when no completion log is configured."""
    argv = ["sacct", "--completion", "--noheader", "--parsable2", f"--format={_SACCT_FORMAT}",
            "--jobs=" + ",".join(job_ids)]
    try:
        proc = _query(argv, runner)
    except SlurmError as exc:
        log.debug("sacct --completion failed: %s", exc.message)
        return {}
    return _parse_sacct(proc.stdout, "jobcomp", job_ids)


_SCONTROL_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=")


def parse_scontrol(text: str) -> dict[str, str]:
    """``Key=Value`` pairs of one ``scontrol show`` record (a value may contain spaces)."""
    matches = list(_SCONTROL_KEY.finditer(text))
    out: dict[str, str] = {}
    for this, nxt in zip(matches, [*matches[1:], None], strict=True):
        end = nxt.start() if nxt else len(text)
        out.setdefault(this.group(1), text[this.end():end].strip())
    return out


def show_job(job_id: str, *, runner: Runner = run_command) -> JobStatus | None:
    """``scontrol show job``: restarts, exit code and reason of a job Slurm still holds, else None."""
    proc = _query(["scontrol", "show", "job", job_id], runner)
    if proc.returncode != 0:
        return None
    fields = parse_scontrol(proc.stdout.split("\n\n")[0])
    if "JobState" not in fields:
        return None
    code, sig = parse_exit_code(fields.get("ExitCode", ""))
    restarts = fields.get("Restarts", "")
    # the id as asked: for an array element (123_4) scontrol's JobId is the element's raw job id
    return JobStatus(job_id=job_id, state=fields["JobState"], source="scontrol",
                     name=fields.get("JobName"), reason=_none_if_blank(fields.get("Reason", "")),
                     nodes=_none_if_blank(fields.get("NodeList", "")),
                     elapsed=normalize_elapsed(fields.get("RunTime")),
                     exit_code=code, signal=sig, restarts=int(restarts) if restarts.isdigit() else None)


def job_status(job_ids: Sequence[str], *, runner: Runner = run_command, details: bool = True,
               raw_ids: Mapping[str, str] | None = None) -> dict[str, JobStatus]:
    """The best-known status of each job, with as few calls as possible.

    One batched squeue for all jobs (live and recently finished); then, for jobs that are finished
    or unknown to squeue, one batched ``sacct`` (accounting) or else ``sacct --completion`` (the job
    completion log) for their final state and exit code. The completion log files array elements
    under their raw job id: ``raw_ids`` (element id -> raw id, from the element folders) maps them
    back, with one more batched call. With ``details``, a single job squeue still holds also gets
    ``scontrol show job`` (restart count, exit code). An empty answer means ``UNKNOWN``, never "gone".
    """
    ids = list(dict.fromkeys(job_ids))
    found = squeue(ids, runner=runner) if ids else {}
    statuses: dict[str, JobStatus | None] = {i: found.get(i) for i in ids}
    settled = [i for i, s in statuses.items() if s is None or s.terminal]
    if settled:
        final = sacct(settled, runner=runner)
        if final is None:
            final = jobcomp(settled, runner=runner)
            raw = {i: (raw_ids or {})[i] for i in settled if i not in final and i in (raw_ids or {})}
            if raw:
                by_raw = jobcomp(sorted(set(raw.values())), runner=runner)
                final.update({i: replace(by_raw[r], job_id=i) for i, r in raw.items() if r in by_raw})
        # accounting and the completion log have no restart count: keep squeue's while it still knows the job
        statuses.update({i: _with_restarts(final[i], statuses[i]) for i in settled if i in final})
    only = statuses[ids[0]] if len(ids) == 1 else None
    if details and only is not None and only.source == "squeue":
        try:
            statuses[ids[0]] = show_job(ids[0], runner=runner) or only
        except SlurmError as exc:  # the details are a bonus; squeue's answer stands
            log.debug("scontrol show job %s: %s", ids[0], exc.message)
    return {i: s or JobStatus(job_id=i, state="UNKNOWN", source="none") for i, s in statuses.items()}


def _with_restarts(final: JobStatus, live: JobStatus | None) -> JobStatus:
    return final if final.restarts is not None or live is None else replace(final, restarts=live.restarts)


def scancel(job_ids: Sequence[str], *, signal: str | None = None, full: bool = False,
            runner: Runner = run_command) -> None:
    """Cancel (or, with ``signal``, only signal) jobs; Slurm's refusal is a SlurmError."""
    argv = ["scancel"]
    if signal:
        argv.append(f"--signal={signal}")
    if full:
        argv.append("--full")
    proc = _query([*argv, *job_ids], runner)
    if proc.returncode != 0:
        raise client_error("scancel", proc)


def requeue(job_id: str, *, runner: Runner = run_command) -> None:
    """``scontrol requeue`` (array-aware: pass ``123_4`` for an array element)."""
    proc = _query(["scontrol", "requeue", job_id], runner)
    if proc.returncode != 0:
        raise client_error("scontrol", proc)
