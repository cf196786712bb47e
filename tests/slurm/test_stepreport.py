"""srun's report of a failed step in the batch log: the pure parser (real srun lines of Slurm
22.05, captured on the local cluster, and hostile ones), the file reader, and the batch script's restart
helper filling attempts.json's blamed_rank/blamed_node from it when no record names a culprit."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from orchestrator.records.jobcreate import write_run_config
from orchestrator.records.joblayout import outcome_path
from orchestrator.records.restarts.rankoutcome import RankOutcome
from orchestrator.slurm import restart
from orchestrator.slurm.stepreport import StepReport, TaskEnd, parse, read_seen, seen_from, step_lines
from orchestrator.spec.cluster import Launcher
from orchestrator.spec.runconfig import JOB_ID_FILE, LOG_DIR, RunConfig

# srun -N2 --ntasks-per-node=2 --kill-on-bad-exit=1 (task 3 segfaults), then two runs without it
SEGFAULT = """srun: error: node2: task 3: Segmentation fault
srun: launch/slurm: _step_signal: Terminating StepId=4.0
slurmstepd-node1: error: *** STEP 4.0 ON node1 CANCELLED AT 2026-11-25T19:49:52 ***
srun: error: node2: task 2: Terminated
srun: error: node1: tasks 0-1: Terminated
srun: Force Terminated StepId=4.0
"""
ALL_KILLED = """srun: error: node2: tasks 2-3: Killed
srun: error: node1: tasks 0-1: Killed
srun: Force Terminated StepId=5.0
"""
ALL_EXIT_4 = """srun: error: node1: tasks 0-1: Exited with exit code 4
srun: error: node2: tasks 2-3: Exited with exit code 4
"""
# a batch log over two attempts: attempt 0's report must not be read as attempt 1's
TWO_ATTEMPTS = """orch: job 12 (restart 0) on node[1-3]: MASTER_ADDR=127.0.0.1 MASTER_PORT=41001
srun: error: node2: task 1: Killed
srun: launch/slurm: _step_signal: Terminating StepId=12.0
srun: error: node1: task 0: Terminated
srun: Force Terminated StepId=12.0
orch: attempt 0 vanished rank 1 (exit 137); restarting in the allocation (attempt 1 of at most 3)
srun: error: node3: task 1: Exited with exit code 1

"""


def lines(text: str) -> list[str]:
    return step_lines(text.splitlines())


def test_the_task_srun_names_first_is_the_culprit_and_the_rest_were_stopped() -> None:
    report = parse(lines(SEGFAULT))
    assert report.ends[0] == TaskEnd(task=3, node="node2", exit_code=-11, after_abort=False)
    assert [(e.task, e.exit_code, e.after_abort) for e in report.ends[1:]] == [(2, -15, True), (0, -15, True),
                                                                             (1, -15, True)]
    seen = seen_from(report, run="4")
    assert seen is not None and seen.codes == {3: -11, 2: -15, 0: -15, 1: -15}
    assert seen.stopped == frozenset({0, 1, 2}) and seen.stopped_by == "srun" and seen.run == "4"


def test_without_kill_on_bad_exit_nothing_counts_as_stopped() -> None:
    killed = seen_from(parse(lines(ALL_KILLED)), run="5")
    assert killed is not None and killed.codes == {2: -9, 3: -9, 0: -9, 1: -9} and not killed.stopped
    exited = seen_from(parse(lines(ALL_EXIT_4)), run="6")
    assert exited is not None and exited.codes == dict.fromkeys(range(4), 4)


def test_only_the_last_block_is_the_step_that_just_ended() -> None:
    assert lines(TWO_ATTEMPTS) == ["srun: error: node3: task 1: Exited with exit code 1"]
    seen = seen_from(parse(lines(TWO_ATTEMPTS)), run="12")
    assert seen is not None and seen.codes == {1: 1}
    assert lines("orch: job 1 (restart 0) on node1\n") == []  # the step said nothing (it ended well)
    assert seen_from(parse([]), run="1") is None


def test_a_lost_node_marks_its_tasks_and_the_first_word_of_a_task_counts() -> None:
    text = ("srun: error: Node failure on node2\nsrun: error: node1: task 0: Exited with exit code 3\n"
            "srun: error: node1: task 0: Killed\n")
    report = parse(lines(text))
    assert report.lost_nodes == ("node2",)
    seen = seen_from(report, run="7", nodes=["node1", "node2"], tasks_per_node=2)
    assert seen is not None and seen.codes == {0: 3, 2: -9, 3: -9}


@pytest.mark.parametrize("line", [
    "srun: error: node1: task 0: Exited with exit code 999",  # not a byte
    "srun: error: node1: task 0: Frobnicated",  # no signal of that name
    "srun: error: node1: tasks 5-2: Killed",  # backwards
    "srun: error: node1: tasks 0-99999999: Killed",  # too many
    "srun: error: node1: tasks 0,,1: Killed",
    "srun: error: node1 task 0: Killed",
    "srun: error: node1: task -1: Killed",
    "user output: srun: error: node1: task 0: Killed",
])
def test_lines_that_are_not_a_task_report_name_nobody(line: str) -> None:
    assert parse(lines(line + "\n")) == StepReport()


def test_core_dumps_and_other_signal_words() -> None:
    text = ("srun: error: node1: task 0: Aborted (core dumped)\nsrun: error: node1: task 1: Bus error\n"
            "srun: error: node2: task 2: User defined signal 2\n")
    assert [e.exit_code for e in parse(lines(text)).ends] == [-6, -7, -12]


def test_read_seen_reads_the_batch_log_tail_and_never_raises(tmp_path: Path) -> None:
    logs = tmp_path / LOG_DIR
    logs.mkdir()
    assert read_seen(tmp_path, "12") is None  # no log
    assert read_seen(tmp_path, None) is None
    (logs / "slurm-12.out").write_text("x" * 3_000_000 + "\n" + TWO_ATTEMPTS)  # a long log: the tail only
    seen = read_seen(tmp_path, "12", restart=1)
    assert seen is not None and seen.codes == {1: 1} and seen.restart == 1
    os.mkfifo(logs / "slurm-13.out")  # never blocks
    assert read_seen(tmp_path, "13") is None
    (logs / "slurm-14_2.out").write_bytes(b"srun: error: node1: task 0: Killed\n")  # an array element's log
    element = read_seen(tmp_path, "14_2")
    assert element is not None and element.codes == {0: -9} and element.run == "14_2"
    (logs / "slurm-15.out").write_bytes(b"srun: error: node1: task 0: Killed \xff\xfe\n")  # not srun's words
    assert read_seen(tmp_path, "15") is None


# --- the batch script's helper on a job folder: srun took both ranks down before either wrote a word ------

BOTH_SILENT = [
    '{"host": "node1", "kind": "running", "pid": 2203, "rank": 0, "restart": 0, "run": "1", "started": '
    '1795636098.6836812, "version": 1, "world_size": 2}',
    '{"host": "node2", "kind": "running", "pid": 2206, "rank": 1, "restart": 0, "run": "1", "started": '
    '1795636098.7563853, "version": 1, "world_size": 2}',
]
BOTH_SILENT_LOG = """orch: job 1 (restart 0) on node[1-2]: MASTER_ADDR=127.0.0.1 MASTER_PORT=41001
srun: error: node2: task 1: Killed
srun: launch/slurm: _step_signal: Terminating StepId=1.0
srun: error: node1: task 0: Terminated
srun: Force Terminated StepId=1.0
"""


def job_folder(root: Path, log: str) -> Path:
    folder = root / "faulty-1"
    (folder / LOG_DIR).mkdir(parents=True)
    (folder / "checkpoints").mkdir()
    write_run_config(folder, RunConfig(mode="slurm", job_name="faulty", job_file="/x/faulty.py", params={}, nodes=2,
                                       gpus_per_node=0, tasks_per_node=1, cpus_per_task=1, job_dir=str(folder),
                                       launcher=Launcher(job_root=str(root), max_restarts=2),
                                       created=datetime.now().isoformat(timespec="seconds")))
    (folder / JOB_ID_FILE).write_text("1\n")
    for text in BOTH_SILENT:
        record = RankOutcome.model_validate_json(text)
        outcome_path(folder, record.rank).write_text(text)
    (folder / LOG_DIR / "slurm-1.out").write_text(log)
    return folder


@pytest.mark.parametrize(("log", "rank", "node", "kind"), [
    (BOTH_SILENT_LOG, 1, "node2", "vanished"),
    ("orch: job 1 (restart 0) on node[1-2]\n", None, None, "failed"),  # srun said nothing: nobody is named
])
def test_the_restart_helper_blames_the_task_srun_names(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       log: str, rank: int | None, node: str | None,
                                                       kind: str) -> None:
    folder = job_folder(tmp_path / "jobs", log)
    env = {"SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "node[1-2]"}
    code = restart.main(["--job-dir", str(folder), "--attempt", "0", "--step-rc", "143"], environ=env)
    assert code == 0, capsys.readouterr().err  # restarted
    attempt = json.loads((folder / "attempts.json").read_text())[0]
    assert (attempt["blamed_rank"], attempt["blamed_node"], attempt["kind"]) == (rank, node, kind), attempt
    err = capsys.readouterr().err
    where = (f" rank {rank}" if rank is not None else "") + (f" on {node}" if node else "")
    assert f"orch: attempt 0 {kind}{where} (exit 143)" in err, err
    bad = tmp_path / "jobs" / "bad_nodes.jsonl"
    recorded = [json.loads(line) for line in bad.read_text().splitlines()] if bad.exists() else []
    assert [(r["node"], r["kind"]) for r in recorded] == ([(node, "signal")] if node else [])
