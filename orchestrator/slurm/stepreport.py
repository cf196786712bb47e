"""What srun said about the training step that just ended: which task ended how.

A rank killed by SIGKILL writes no outcome record, and srun's ``--kill-on-bad-exit`` may take the other
ranks down before they write theirs: every record then still says ``running`` and names no culprit.
srun itself knows. When a task fails it prints one line per node to its stderr, which is the batch
log (``logs/slurm-<id>.out``), in the order it learnt of them::

    srun: error: node2: task 1: Killed
    srun: launch/slurm: _step_signal: Terminating StepId=12.0
    srun: error: node1: task 0: Terminated
    srun: error: node1: tasks 0-1: Exited with exit code 3

(the signal named as ``strsignal`` words it). A task reported after srun began stopping the step
(:data:`ABORT_LINES`: the ``Terminating StepId`` line, a cancelled step) ended because of it: it
counts as stopped by srun, not as a culprit. ``Node failure on NODE`` marks every task on that node.

Why this source: the batch log is there on every cluster, and is written before the batch script's
restart helper (``slurm/restart.py``) runs. ``sacct`` needs accounting (slurmdbd), which the local test
cluster and many sites' users lack, and its step records name no task: only the step's exit code.

The step's lines are the last block of srun's (and slurmstepd's) lines in the batch log: the helper
runs right after srun ended, and the batch script prints its own line before each step starts
(``orch: job ...``, ``orch: attempt N ...: restarting``). :func:`parse` and :func:`seen_from` are
pure; :func:`read_report` and :func:`read_seen` read the log's tail (bounded) and never raise. The
restart helper and ``orch status`` / ``orch logs`` (``slurm/jobstate.py``'s ``failure``, for the attempt
the helper has not judged yet) read it.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.records.joblayout import log_path
from orchestrator.records.logs.view import tail_lines
from orchestrator.records.restarts.seen import Seen

TASK_LINE = re.compile(r"^srun: error: (?P<node>[^\s:]+): tasks? (?P<tasks>\d[\d,\-]*): (?P<how>.+?)\s*$")
EXIT_CODE = re.compile(r"^Exited with exit code (\d{1,3})$")
CORE_DUMPED = re.compile(r"\s*\(core dumped\)$")
NODE_FAILURE = re.compile(r"^srun: error: Node failure on (?P<node>[^\s:]+)")
# srun began stopping the step: the tasks it reports after one of these ended because of it.
ABORT_LINES = (
    re.compile(r"^srun: launch/slurm: _step_signal: Terminating StepId="),
    re.compile(r"^srun: Job step aborted"),
    re.compile(r"^srun: forcing job termination"),
    re.compile(r"^slurmstepd\S*: error: \*\*\* STEP \S+ ON \S+ CANCELLED AT"),
)
REPORT_LINE = re.compile(r"^(srun|slurmstepd)[^\s:]*: ")  # a line of srun's (or slurmstepd's) own
# srun names a signal as strsignal() words it: "Killed" -> 9, "Terminated" -> 15, "Segmentation fault" -> 11
SIGNAL_WORDS = {text: int(sig) for sig in signal.Signals if (text := signal.strsignal(sig))}
MAX_TASKS = 1 << 16  # tasks one line may name (a range beyond it is not believed)
TAIL_LINES = 4000
TAIL_BYTES = 1024 * 1024


@dataclass(frozen=True)
class TaskEnd:
    task: int  # the step's task id: the rank
    node: str
    exit_code: int  # as Popen says it: -N killed by signal N
    after_abort: bool  # reported after srun began stopping the step: srun's doing, not the cause


@dataclass(frozen=True)
class StepReport:
    ends: tuple[TaskEnd, ...] = ()  # in srun's order; the first report of a task counts
    lost_nodes: tuple[str, ...] = ()  # "Node failure on NODE"

    def node(self, task: int) -> str | None:
        """The node srun named for ``task`` (its first report), None when it named none."""
        return next((end.node for end in self.ends if end.task == task), None)


def step_lines(lines: Sequence[str]) -> list[str]:
    """The last block of srun's and slurmstepd's lines (blank lines inside it skipped): the step just ended."""
    block: list[str] = []
    for line in reversed(lines):
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        if not REPORT_LINE.match(text):
            break
        block.append(text)
    return block[::-1]


def _tasks(spec: str) -> list[int]:
    """srun's task list: ``1``, ``0-1``, ``0,2-3`` (empty when it is not one)."""
    out: list[int] = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            return []
        first, last = int(low), int(high or low)
        if last < first or len(out) + last - first >= MAX_TASKS:
            return []
        out.extend(range(first, last + 1))
    return out


def _exit_code(how: str) -> int | None:
    """``Exited with exit code 3`` -> 3, ``Killed`` -> -9; None for words that name neither."""
    found = EXIT_CODE.match(how)
    if found:
        return int(found.group(1)) if int(found.group(1)) <= 255 else None
    number = SIGNAL_WORDS.get(CORE_DUMPED.sub("", how))
    return -number if number is not None else None


def parse(lines: Sequence[str]) -> StepReport:
    """srun's report of one step (the lines of :func:`step_lines`)."""
    ends: list[TaskEnd] = []
    lost: list[str] = []
    aborted = False
    for line in lines:
        if any(pattern.match(line) for pattern in ABORT_LINES):
            aborted = True
            continue
        failure = NODE_FAILURE.match(line)
        if failure:
            lost.append(failure.group("node"))
            continue
        found = TASK_LINE.match(line)
        code = _exit_code(found.group("how")) if found else None
        if found is None or code is None:
            continue
        ends.extend(TaskEnd(task, found.group("node"), code, aborted) for task in _tasks(found.group("tasks")))
    return StepReport(ends=tuple(ends), lost_nodes=tuple(dict.fromkeys(lost)))


def seen_from(report: StepReport, *, run: str, restart: int | None = None, nodes: Sequence[str] = (),
              tasks_per_node: int = 1) -> Seen | None:
    """The ranks' ends as srun saw them (None: it named none). ``nodes``: the step's nodes in order, for
    the tasks of a lost node (srun's block distribution: rank R on node R // tasks_per_node)."""
    codes: dict[int, int] = {}
    stopped: set[int] = set()
    for end in report.ends:
        if end.task in codes:
            continue
        codes[end.task] = end.exit_code
        if end.after_abort and end.exit_code < 0:
            stopped.add(end.task)
    per_node = max(1, tasks_per_node)
    for index, node in enumerate(nodes):
        if node in report.lost_nodes:
            for rank in range(index * per_node, (index + 1) * per_node):
                codes.setdefault(rank, -int(signal.SIGKILL))
    if not codes:
        return None
    return Seen(codes=codes, stopped=frozenset(stopped), stopped_by="srun", run=run, restart=restart)


def read_report(job_dir: Path, run: str | None) -> StepReport:
    """srun's report of the last step in the batch log, from its tail (empty: no log, no run, nothing said)."""
    if not run:
        return StepReport()
    found, _, _ = tail_lines(log_path(job_dir, run), TAIL_LINES, max_bytes=TAIL_BYTES)
    lines = b"".join(found).decode("utf-8", errors="replace").splitlines()
    return parse(step_lines(lines))


def read_seen(job_dir: Path, run: str | None, *, restart: int | None = None, nodes: Sequence[str] = (),
              tasks_per_node: int = 1) -> Seen | None:
    """What srun said about the step that just ended, from the tail of the batch log (None: nothing)."""
    if not run:
        return None
    return seen_from(read_report(job_dir, run), run=run, restart=restart, nodes=nodes, tasks_per_node=tasks_per_node)
