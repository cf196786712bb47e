"""What Slurm's clients say about jobs, read: the job-state table, ``JobStatus`` and the parsers of
squeue, sacct and ``scontrol show job`` output.

Pure: :mod:`orchestrator.slurm.client` runs the commands (with the formats named here) and hands their
output to these functions.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from orchestrator.spec.numbers import parse_int
from orchestrator.spec.units import format_time, parse_time

log = logging.getLogger(__name__)

SHOWN_UNREAD = 3  # lines of one answer quoted in full when they cannot be read; the rest are counted
# a job id as Slurm's clients print it: 123, an array element 123_4 (pending: 123_[0-3%2]), a step 123.batch,
# a het job 123+1; ASCII only, bounded
_ID_RE = re.compile(r"[0-9]{1,20}(?:[_+.][0-9A-Za-z_.+\[\]%,-]{0,200})?", re.ASCII)


class Unread:
    """The lines of one answer orch could not read: each is reported (the first few quoted, the rest
    counted) as ``could not read Slurm's answer: <line>``; the rest of the answer is still used."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.count = 0

    def add(self, line: str) -> None:
        self.count += 1
        if self.count <= SHOWN_UNREAD:
            shown = line if len(line) <= 200 else f"{line[:200]}... ({len(line):,} characters)"
            log.warning("could not read Slurm's answer (%s): %r", self.source, shown)

    def done(self) -> None:
        if self.count > SHOWN_UNREAD:
            log.warning("could not read Slurm's answer (%s): %d more lines like these", self.source,
                        self.count - SHOWN_UNREAD)


_STATE_RE = re.compile(r"[A-Z][A-Z_]*\+?(?: by [0-9]{1,10})?", re.ASCII)  # RUNNING, CANCELLED by 0, RUNNING+


def is_slurm_id(text: str) -> bool:
    return bool(_ID_RE.fullmatch(text))


def _readable(fields: list[str] | None) -> bool:
    """A record's job id and state look like Slurm's (anything else: a line orch cannot read)."""
    return fields is not None and is_slurm_id(fields[0].strip()) and bool(_STATE_RE.fullmatch(fields[1].strip()))


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
    submit_time: str | None = None  # Slurm's SubmitTime (squeue, sacct), local time: 2026-11-25T13:04:05

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
    number = parse_int(code, digits=3)
    if number is None or number > 255:
        return None, None
    signal = parse_int(sig, digits=3)
    return number, signal if signal is not None and signal <= 255 else None


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


# squeue -O fields (``FIELD:|``: no padding, a '|' after it), in the order parsed below; the name last
# (it may contain '|'). JobArrayID prints an array element as 123_4 (JobID would print its raw id).
# SubmitTime tells a job from an older one with the same id (ids restart when a cluster is rebuilt).
SQUEUE_FIELDS = ("JobArrayID", "State", "Reason", "NodeList", "TimeUsed", "RestartCnt", "SubmitTime", "Name")
SQUEUE_FORMAT = ",".join(f"{name}:|" for name in SQUEUE_FIELDS[:-1]) + f",{SQUEUE_FIELDS[-1]}:"
_TIME_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2})?")
_BLANK_TIMES = ("", "N/A", "Unknown", "None", "(null)")


def is_time_field(text: str) -> bool:
    """Is this a SubmitTime as Slurm prints it (``2026-11-25T13:04:05``, or a blank such as ``N/A``)?"""
    value = text.strip()
    return value in _BLANK_TIMES or bool(_TIME_RE.fullmatch(value))


def submit_field(text: str) -> str | None:
    value = text.strip()
    return None if value in _BLANK_TIMES else value


def _split_with_time(line: str, count: int, at: int) -> list[str] | None:
    """``line``'s ``count`` fields (the last, a name, may hold '|'), with the time field at index ``at``.
    A line without that field (an older format, ``count - 1`` fields) gets ``""`` there; None: no record."""
    fields = line.split("|", count - 1)
    if len(fields) == count and is_time_field(fields[at]):
        return fields
    fields = line.split("|", count - 2)
    if len(fields) != count - 1:
        return None
    return [*fields[:at], "", *fields[at:]]


def parse_squeue(stdout: str) -> dict[str, JobStatus]:
    """``squeue --Format=SQUEUE_FORMAT`` lines, by job id as squeue prints it (other lines are skipped)."""
    jobs: dict[str, JobStatus] = {}
    unread = Unread("squeue")
    for line in stdout.splitlines():
        if not line.strip():
            continue
        fields = _split_with_time(line, len(SQUEUE_FIELDS), SQUEUE_FIELDS.index("SubmitTime"))
        if fields is None or not _readable(fields):
            unread.add(line)
            continue
        job_id, state, reason, nodes, elapsed, restarts, submit, name = fields
        job_id = job_id.strip()
        jobs[job_id] = JobStatus(job_id=job_id, state=state.strip(), source="squeue", name=name,
                                 reason=_none_if_blank(reason), nodes=_none_if_blank(nodes),
                                 elapsed=normalize_elapsed(elapsed), submit_time=submit_field(submit),
                                 restarts=parse_int(restarts, digits=9))
    unread.done()
    return jobs


SACCT_FORMAT = "JobID,State,ExitCode,NodeList,Elapsed,JobName"


def parse_sacct(stdout: str, source: str, wanted: Sequence[str]) -> dict[str, JobStatus]:
    """``sacct --parsable2 --format=SACCT_FORMAT`` lines of the ``wanted`` jobs (array elements too); a
    line may carry a SubmitTime before the name (``parse_sacct_runs`` passes it on)."""
    jobs: dict[str, JobStatus] = {}
    wanted_set = frozenset(wanted)  # a set: thousands of ids against thousands of lines stay linear
    unread = Unread(source)
    for line in stdout.splitlines():
        if not line.strip():
            continue
        fields = _split_with_time(line, 7, 5)
        if fields is None or not _readable(fields):
            unread.add(line)
            continue
        job_id, state, exit_code, nodes, elapsed = (f.strip() for f in fields[:5])
        submit, name = fields[5], fields[6].strip()
        if wanted_set and job_id not in wanted_set and job_id.partition("_")[0] not in wanted_set:
            continue
        code, sig = parse_exit_code(exit_code)
        # later lines win: a rebuilt test cluster reuses job ids, and its newest record comes last
        jobs[job_id] = JobStatus(job_id=job_id, state=state.split()[0] if state else "UNKNOWN", source=source,
                                 name=name, nodes=_none_if_blank(nodes), elapsed=normalize_elapsed(elapsed),
                                 exit_code=code, signal=sig, submit_time=submit_field(submit))
    unread.done()
    return jobs


# accounting: each run of a requeued job is a record of its own (--duplicates); the name last
SACCT_TRES_FORMAT = "JobID,State,ExitCode,NodeList,Elapsed,ElapsedRaw,AllocTRES,Submit,JobName"
GPU_TRES = "gres/gpu"  # AllocTRES "billing=8,cpu=8,gres/gpu=4,mem=64G,node=1" (typed: gres/gpu:a100=4 too)


def tres_gpus(tres: str) -> int:
    """The GPUs an ``AllocTRES`` string holds (0 when none)."""
    for item in tres.split(","):
        key, _, value = item.partition("=")
        count = parse_int(value, digits=6) if key.strip() == GPU_TRES else None
        if count is not None:
            return count
    return 0


def parse_sacct_runs(stdout: str, wanted: Sequence[str]) -> dict[str, JobStatus]:
    """``sacct --duplicates --format=SACCT_TRES_FORMAT`` records: the last run's state, GPU-hours
    summed over all runs."""
    gpu_seconds: dict[str, int] = {}
    # A requeue moves Submit: the job's submission is the Submit of the first run of the last chain of
    # runs (each earlier run of a requeued job ends REQUEUED); an older job with the same id came before.
    first_submit: dict[str, str | None] = {}
    last_state: dict[str, str] = {}
    kept: list[str] = []
    unread = Unread("sacct")
    for line in stdout.splitlines():
        if not line.strip():
            continue
        fields = _split_with_time(line, 9, 7)
        if fields is None or not _readable(fields):
            unread.add(line)
            continue
        job_id, raw, tres = fields[0].strip(), fields[5].strip(), fields[6]
        gpu_seconds[job_id] = gpu_seconds.get(job_id, 0) + (parse_int(raw, digits=12) or 0) * tres_gpus(tres)
        if not last_state.get(job_id, "").startswith("REQUEUED"):
            first_submit[job_id] = submit_field(fields[7])
        last_state[job_id] = fields[1].strip()
        kept.append("|".join([*fields[:5], fields[7], fields[8]]))
    unread.done()
    jobs = parse_sacct("\n".join(kept), "sacct", wanted)
    return {i: replace(s, gpu_hours=round(gpu_seconds.get(i, 0) / 3600, 3), submit_time=first_submit.get(i))
            for i, s in jobs.items()}


_SCONTROL_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=")


def parse_scontrol(text: str) -> dict[str, str]:
    """``Key=Value`` pairs of one ``scontrol show`` record (a value may contain spaces)."""
    matches = list(_SCONTROL_KEY.finditer(text))
    out: dict[str, str] = {}
    for index, this in enumerate(matches):  # an empty answer has no pairs (zip(strict) raised here)
        nxt = matches[index + 1] if index + 1 < len(matches) else None
        end = nxt.start() if nxt else len(text)
        out.setdefault(this.group(1), text[this.end():end].strip())
    return out


def parse_show_job(job_id: str, stdout: str) -> JobStatus | None:
    """``scontrol show job JOB_ID`` output: restarts, exit code and reason; None without a job record."""
    fields = parse_scontrol(stdout.split("\n\n")[0])
    if "JobState" not in fields:
        return None
    code, sig = parse_exit_code(fields.get("ExitCode", ""))
    restarts = fields.get("Restarts", "")
    # the id as asked: for an array element (123_4) scontrol's JobId is the element's raw job id
    return JobStatus(job_id=job_id, state=fields["JobState"], source="scontrol",
                     name=fields.get("JobName"), submit_time=submit_field(fields.get("SubmitTime", "")),
                     reason=_none_if_blank(fields.get("Reason", "")),
                     nodes=_none_if_blank(fields.get("NodeList", "")),
                     elapsed=normalize_elapsed(fields.get("RunTime")),
                     exit_code=code, signal=sig, restarts=parse_int(restarts, digits=9))
