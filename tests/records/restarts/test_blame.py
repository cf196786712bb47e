"""Blame: the pure function over the ranks' outcome records, the records on
disk (hostile and odd ones), the task-side recorder, and ``orch status`` / ``orch logs`` naming the
rank to look at from a job folder's records (the real CLI, records written by hand)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, TESTS, clean_environ

from orchestrator.records.jobcreate import write_run_config
from orchestrator.records.joblayout import outcome_path
from orchestrator.records.restarts import nodeevidence
from orchestrator.records.restarts.blame import ROLES, blame, role
from orchestrator.records.restarts.rankoutcome import RankOutcome, current_run, parse_outcome
from orchestrator.records.restarts.seen import Seen, complete, observed
from orchestrator.restarts.policy import Ended, decide
from orchestrator.slurm.stepreport import parse, seen_from, step_lines
from orchestrator.spec.cluster import Launcher
from orchestrator.spec.runconfig import JOB_ID_FILE, LOG_DIR, RunConfig
from orchestrator.task.outcome import COLLECTIVE_TIMEOUT, INIT_TIMEOUT, Recorder, read_outcomes, remove_outcomes

T0 = 1_700_000_000.0


def rec(rank: int, kind: str, *, world: int = 2, restart: int = 0, run: str = "local", ended: float | None = None,
        **extra: Any) -> RankOutcome:
    data: dict[str, Any] = {"rank": rank, "world_size": world, "run": run, "restart": restart, "kind": kind,
                            "started": T0, "ended": ended if ended is not None or kind == "running" else T0 + 100}
    data.update(extra)
    return RankOutcome.model_validate(data)


def timed_out(rank: int, seconds: int = 6, setting: str = COLLECTIVE_TIMEOUT, **extra: Any) -> RankOutcome:
    return rec(rank, "waited", exit_code=3, how="timeout", timeout_s=seconds, timeout_setting=setting,
               reason=f"a collective timed out after {seconds} s (DistBackendError: Timed out waiting "
                      f"{seconds * 1000}ms)", **extra)


def step(epoch: int, n: int, at: float) -> dict[str, Any]:
    return {"epoch": epoch, "step": n, "time": at}


# --- the pure function ---------------------------------------------------------------------------------

def test_a_rank_stuck_in_python_is_blamed_not_the_rank_that_waited() -> None:
    found = blame([timed_out(0, last_step=step(1, 3, T0 + 90)),
                   rec(1, "signalled", exit_code=-15, signal="SIGTERM", stopped_by="Slurm",
                       last_step=step(1, 3, T0 + 90))], world_size=2)
    assert found is not None and found.kind == "stuck"
    assert found.ranks == (1,) and found.waiting == (0,)
    assert found.timeout_s == 6 and found.timeout_setting == COLLECTIVE_TIMEOUT
    assert found.message.startswith("rank 1 stopped making progress: rank 0 waited for it")
    assert "timed out after 6 s" in found.message and "stopped by Slurm (SIGTERM)" in found.message
    assert "its last step: epoch 1, step 3, 10 s before rank 0 gave up" in found.message
    assert found.exit_code == 3


def test_a_sigstopped_rank_0_is_blamed_when_rank_1_lost_the_connection() -> None:
    """SIGSTOP of rank 0 (which hosts the store): rank 1 may see a timeout or a lost connection."""
    for waiter in (timed_out(1), rec(1, "waited", exit_code=3, how="lost",
                                     reason="lost the connection to another rank in a collective")):
        found = blame([rec(0, "signalled", exit_code=-15, signal="SIGTERM", stopped_by="orch run"), waiter],
                      world_size=2)
        assert found is not None and found.ranks == (0,) and found.waiting == (1,), found
        assert "rank 0 stopped making progress: rank 1 waited for it" in found.message


def test_a_silent_rank_is_the_one_that_stopped() -> None:
    """SIGKILLed by srun, or stuck where no handler runs: its record still says running, or is missing."""
    for records in ([timed_out(0), rec(1, "running")], [timed_out(0)]):
        found = blame(records, world_size=2)
        assert found is not None and found.kind == "stuck" and found.ranks == (1,)
    missing = blame([timed_out(0)], world_size=2)
    assert missing is not None and "left no record of this run" in missing.message
    silent = blame([timed_out(0), rec(1, "running")], world_size=2)
    assert silent is not None and "ended without a word" in silent.message
    assert "it had finished no training step" in silent.message


def test_two_stuck_ranks_of_four() -> None:
    found = blame([timed_out(0, world=4), rec(1, "signalled", world=4, exit_code=-15, signal="SIGTERM"),
                   rec(2, "running", world=4), timed_out(3, world=4, ended=T0 + 101)], world_size=4)
    assert found is not None and found.ranks == (1, 2) and found.waiting == (0, 3)
    assert found.message.startswith("rank 1, 2 stopped making progress: rank 0 waited")


def test_the_rank_that_timed_out_is_preferred_over_one_that_lost_its_connection() -> None:
    lost = rec(0, "waited", exit_code=3, how="lost", reason="lost the connection", ended=T0 + 1)
    found = blame([lost, timed_out(1, world=3, ended=T0 + 50), rec(2, "running", world=3)], world_size=3)
    assert found is not None and found.waiting == (1, 0) and "rank 1 waited for it" in found.message


def test_everybody_timed_out_names_the_rank_behind() -> None:
    found = blame([timed_out(0, last_step=step(2, 41, T0 + 50)), timed_out(1, last_step=step(2, 40, T0 + 49))],
                  world_size=2)
    assert found is not None and found.kind == "all_waited" and found.ranks == (1,)
    assert "every rank gave up waiting" in found.message and "timed out after 6 s" in found.message
    same = blame([timed_out(0), timed_out(1)], world_size=2)
    assert same is not None and same.kind == "all_waited" and "fewest" not in same.message


def test_an_own_failure_wins_over_ranks_that_waited() -> None:
    found = blame([timed_out(0, ended=T0 + 10),
                   rec(1, "failed", exit_code=1, reason="RuntimeError: boom (job x, epoch 1, step 3)",
                       ended=T0 + 20)], world_size=2)
    assert found is not None and found.kind == "failed" and found.ranks == (1,)
    assert found.message.startswith("rank 1 exited with code 1 (RuntimeError: boom")
    assert "then: rank 0 exited with code 3" in found.message and found.exit_code == 1


def test_the_earliest_own_failure_is_the_cause() -> None:
    found = blame([rec(0, "failed", exit_code=2, reason="late", ended=T0 + 30),
                   rec(1, "failed", exit_code=1, reason="early", ended=T0 + 5)], world_size=2)
    assert found is not None and found.ranks == (1,) and "(early)" in found.message


def test_a_rank_that_exited_0_in_the_middle_is_blamed() -> None:
    found = blame([timed_out(0), rec(1, "completed", exit_code=0, ended=T0 + 3)], world_size=2)
    assert found is not None and found.kind == "early_exit" and found.ranks == (1,)
    assert "rank 1 had already exited with code 0" in found.message


def test_a_hang_in_build_names_the_start_up_timeout() -> None:
    found = blame([timed_out(0, seconds=20, setting=INIT_TIMEOUT), rec(1, "signalled", exit_code=-15)],
                  world_size=2)
    assert found is not None and found.timeout_s == 20 and found.timeout_setting == INIT_TIMEOUT
    assert "after 20 s" in found.message and "launcher.init_timeout" in found.message
    assert "after 30 s" not in found.message


def test_stale_records_of_a_previous_restart_are_set_aside() -> None:
    old = [rec(0, "completed", exit_code=0, restart=0), rec(1, "failed", exit_code=1, reason="old", restart=0)]
    found = blame([*old, timed_out(0, restart=1)], world_size=2)
    assert found is not None and found.kind == "stuck" and found.ranks == (1,)
    assert "left no record of this run" in found.message and "old" not in found.message
    assert any("restart 0 set aside" in note for note in found.notes)
    # Slurm says restart 2 (requeued, pending): nothing of that run is known yet
    assert blame([*old, timed_out(0, restart=1)], world_size=2, restart=2) is None
    # Slurm says restart 0: the old records are the current ones
    again = blame([*old, timed_out(0, restart=1)], world_size=2, restart=0)
    assert again is not None and again.kind == "failed" and "(old)" in again.message


def test_records_of_another_job_id_are_set_aside() -> None:
    found = blame([timed_out(0, run="77"), rec(1, "failed", exit_code=1, run="76", reason="other job")],
                  world_size=2, run="77")
    assert found is not None and found.kind == "stuck" and "other job" not in found.message
    assert any("not job 77" in note for note in found.notes)


def test_records_beyond_the_world_size_are_set_aside() -> None:
    found = blame([timed_out(0, world=9), rec(8, "failed", world=9, exit_code=1)], world_size=2)
    assert found is not None and found.ranks == (1,) and any("beyond" in note for note in found.notes)


def test_nothing_wrong_or_nothing_known_is_no_blame() -> None:
    assert blame([], world_size=2) is None
    assert blame([rec(0, "completed", exit_code=0), rec(1, "completed", exit_code=0)], world_size=2) is None
    assert blame([rec(0, "running"), rec(1, "running")], world_size=2) is None  # still running


def test_every_rank_stopped_from_outside_is_not_a_rank_failure() -> None:
    found = blame([rec(0, "signalled", exit_code=-15, signal="SIGTERM", stopped_by="Slurm"),
                   rec(1, "signalled", exit_code=-15, signal="SIGTERM", stopped_by="Slurm")], world_size=2)
    assert found is not None and found.kind == "stopped" and "scancel" in found.message


def test_observed_fills_in_what_the_runner_saw() -> None:
    records = [rec(0, "running"), timed_out(1)]
    merged = observed(records, codes={0: -9, 1: 3}, ended={0: T0 + 1, 1: T0 + 2}, stopped={0},
                      stopped_by="orch run", reasons={})
    by_rank = {r.rank: r for r in merged}
    assert by_rank[0].kind == "signalled" and by_rank[0].signal == "SIGKILL" and by_rank[0].stopped_by == "orch run"
    assert by_rank[1] == records[1]
    vanished = observed([rec(1, "running")], codes={0: 0, 1: -9}, ended={0: T0, 1: T0 + 1}, stopped=set(),
                        stopped_by="orch run", reasons={1: None})
    found = blame(vanished, world_size=2)
    assert found is not None and found.kind == "vanished" and found.message.startswith("rank 1 was killed by SIGKILL")
    early = observed([], codes={0: 2}, ended={0: T0}, stopped=set(), stopped_by="orch run",
                     reasons={0: "job.json is damaged"})
    assert early[0].kind == "failed" and early[0].reason == "job.json is damaged"


# --- records on disk -------------------------------------------------------------------------------------

HOSTILE = {
    "rank0.outcome.json": "{not json",
    "rank1.outcome.json": "[" * 50_000,
    "rank2.outcome.json": json.dumps([1, 2]),
    "rank3.outcome.json": json.dumps({"rank": True, "world_size": 2, "run": "x", "restart": 0, "kind": "running",
                                      "started": 1}),
    "rank4.outcome.json": json.dumps({"rank": 4, "world_size": 5, "run": "x", "restart": 0, "kind": "exploded",
                                      "started": 1}),
    "rank5.outcome.json": json.dumps({"rank": 5, "world_size": 6, "run": "x", "restart": -1, "kind": "running",
                                      "started": 1}),
    "rank6.outcome.json": json.dumps({"rank": 7, "world_size": 8, "run": "x", "restart": 0, "kind": "running",
                                      "started": 1}),
    "rank8.outcome.json": json.dumps({"rank": 8, "world_size": 9, "run": "x", "restart": 0, "kind": "running",
                                      "started": 1, "surprise": 1}),
    "rank9.outcome.json": json.dumps({"rank": 9, "world_size": 10, "run": "x", "restart": 0, "kind": "failed",
                                      "started": 1, "exit_code": 10**40}),
    "rank10.outcome.json": " " * 70_000,
    "rank11.outcome.json": "\udcff".encode("utf-8", "surrogateescape").decode("latin-1"),
}


def test_hostile_record_files_are_notes_not_errors(tmp_path: Path) -> None:
    logs = tmp_path / LOG_DIR
    logs.mkdir()
    for name, text in HOSTILE.items():
        (logs / name).write_text(text, encoding="utf-8", errors="surrogateescape")
    (logs / "rank12.outcome.json").mkdir()  # a folder where a record should be
    (logs / "rank-1.outcome.json").write_text("{}")  # not a record's name: not looked at
    good = rec(13, "completed", world=14, exit_code=0)
    outcome_path(tmp_path, 13).write_text(good.model_dump_json())
    records, notes = read_outcomes(tmp_path)
    assert records == [good]
    assert len(notes) == len(HOSTILE) + 1, notes
    assert any("rank6.outcome.json: holds rank 7" in n for n in notes)
    assert blame(records, world_size=14) is None  # nothing failed that a record says
    assert read_outcomes(tmp_path / "missing") == ([], [])
    remove_outcomes(tmp_path)
    assert sorted(p.name for p in logs.iterdir()) == ["rank-1.outcome.json", "rank12.outcome.json"]


# --- the recorder (task side) ------------------------------------------------------------------------------

def read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_recorder_writes_running_then_one_final_record(tmp_path: Path) -> None:
    path = tmp_path / "rank1.outcome.json"
    recorder = Recorder()
    recorder.finish("failed", 1)  # not started: nothing
    assert not path.exists()
    recorder.start(path, rank=1, world_size=2, run="55", restart=1, stopped_by="Slurm", init_timeout=20,
                   collective_timeout=6)
    assert read(path)["kind"] == "running" and read(path)["restart"] == 1 and "ended" not in read(path)
    recorder.step(1, 7)
    recorder.timeout_in_force(6, COLLECTIVE_TIMEOUT)
    recorder.finish("signalled", -15, signal_name="SIGTERM")
    recorder.finish("completed", 0)  # a second word changes nothing
    data = read(path)
    assert data["kind"] == "signalled" and data["signal"] == "SIGTERM" and data["stopped_by"] == "Slurm"
    assert data["last_step"]["epoch"] == 1 and data["last_step"]["step"] == 7
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left


def test_a_rank_killed_after_its_first_step_still_says_when_it_began_training(tmp_path: Path) -> None:
    """The running record says when the attempt's first step ended, in a real process killed (SIGKILL) later: the
    attempt before gets its recovery_s even when every rank of this one dies without a word. Not its later
    steps (a killed rank's last step is not known)."""
    path = tmp_path / "rank1.outcome.json"
    pid = os.fork()
    if pid == 0:  # the rank: it steps, then is killed where no handler runs
        try:
            recorder = Recorder()
            recorder.start(path, rank=1, world_size=2, run="55", restart=1, stopped_by="srun", init_timeout=20,
                           collective_timeout=6)
            recorder.step(1, 1)
            recorder.step(1, 2)
            os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(1)
    os.waitpid(pid, 0)
    data = read(path)
    assert data["kind"] == "running" and isinstance(data["first_step"], float), data
    assert "last_step" not in data, data


@pytest.mark.parametrize(("in_force", "named", "setting"), [
    ((20, INIT_TIMEOUT), 20, INIT_TIMEOUT),  # a hang in build: the start-up timeout
    ((6, COLLECTIVE_TIMEOUT), 6, COLLECTIVE_TIMEOUT),
    ((6, COLLECTIVE_TIMEOUT), 20, INIT_TIMEOUT),  # a collective started before the switch
    ((6, COLLECTIVE_TIMEOUT), None, COLLECTIVE_TIMEOUT),  # the error names no value: the one in force
    ((6, COLLECTIVE_TIMEOUT), 99, None),  # a value no setting has: not guessed
])
def test_recorder_names_the_timeout_that_applied(tmp_path: Path, in_force: tuple[int, str], named: int | None,
                                                  setting: str | None) -> None:
    path = tmp_path / "rank0.outcome.json"
    recorder = Recorder()
    recorder.start(path, rank=0, world_size=2, run="local", restart=0, stopped_by="orch run", init_timeout=20,
                   collective_timeout=6)
    recorder.timeout_in_force(*in_force)
    recorder.finish("waited", 3, reason="a collective timed out", how="timeout", timeout_s=named)
    data = read(path)
    assert data.get("timeout_setting") == setting
    assert data["timeout_s"] == (named if named is not None else in_force[0])


def test_recorder_in_another_process_writes_nothing(tmp_path: Path) -> None:
    """A forked DataLoader worker inherits the recorder: its SIGTERM must not rewrite the rank's record."""
    path = tmp_path / "rank0.outcome.json"
    recorder = Recorder()
    recorder.start(path, rank=0, world_size=1, run="local", restart=0, stopped_by="orch run", init_timeout=5,
                   collective_timeout=5)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        recorder.finish("signalled", -15, signal_name="SIGTERM")
        os._exit(0)
    os.waitpid(pid, 0)
    assert read(path)["kind"] == "running"


def test_recorder_survives_a_folder_it_cannot_write(tmp_path: Path) -> None:
    recorder = Recorder()
    recorder.start(tmp_path / "gone" / "rank0.outcome.json", rank=0, world_size=1, run="local", restart=0,
                   stopped_by="orch run", init_timeout=5, collective_timeout=5)
    recorder.finish("failed", 1, reason="x" * 10_000)  # too long a reason is cut, a missing folder is a warning


# --- orch status and orch logs over a folder's records (no Slurm needed: the folder says it all) ----------

def slurm_folder(root: Path, job_id: str, records: list[RankOutcome]) -> Path:
    folder = root / f"stuck-{job_id}"
    (folder / LOG_DIR).mkdir(parents=True)
    write_run_config(folder, RunConfig(mode="slurm", job_name="stuck", job_file="/x/hang.py", params={}, nodes=2,
                                       gpus_per_node=0, tasks_per_node=1, cpus_per_task=1, job_dir=str(folder),
                                       launcher=Launcher(job_root=str(root)),
                                       created=datetime.now().isoformat(timespec="seconds")))
    (folder / JOB_ID_FILE).write_text(job_id + "\n")
    for record in records:
        outcome_path(folder, record.rank).write_text(record.model_dump_json())
    (folder / LOG_DIR / f"slurm-{job_id}.out").write_text("batch shell says hello\n")
    (folder / LOG_DIR / f"{job_id}-rank1.out").write_text("".join(f"line {i}\n" for i in range(40)) + "spin_forever\n")
    return folder


def orch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *args], capture_output=True, text=True, cwd=cwd, timeout=120,
                          env=clean_environ(PATH=f"{cwd / 'nobin'}:{os.environ['PATH']}"))


@pytest.fixture
def no_slurm(tmp_path: Path) -> Path:
    """squeue/sacct that know no job: the state comes from the folder alone."""
    bin_dir = tmp_path / "nobin"
    bin_dir.mkdir()
    for name in ("squeue", "sacct", "scontrol"):
        (bin_dir / name).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / name).chmod(0o755)
    return tmp_path


def test_status_and_logs_name_the_stuck_rank_from_the_records(no_slurm: Path) -> None:
    folder = slurm_folder(no_slurm / "jobs", "4242", [
        timed_out(0, run="4242", last_step=step(1, 3, T0 + 90)),
        rec(1, "signalled", run="4242", exit_code=-15, signal="SIGTERM", stopped_by="Slurm",
            last_step=step(1, 3, T0 + 90))])
    status = orch("status", str(folder), "--json", cwd=no_slurm)
    assert status.returncode == 0, status.stderr
    failure = json.loads(status.stdout)["failure"]
    assert failure["rank"] == 1 and failure["kind"] == "stuck" and failure["waiting"] == [0]
    assert failure["timeout_s"] == 6 and failure["timeout_setting"] == COLLECTIVE_TIMEOUT
    human = orch("status", str(folder), cwd=no_slurm)
    assert "# job 4242: rank 1 stopped making progress" in human.stdout, human.stdout
    logs = orch("logs", str(folder), cwd=no_slurm)
    assert logs.returncode == 0 and logs.stdout == "batch shell says hello\n"
    assert "orch: look at rank 1: rank 1 stopped making progress" in logs.stderr, logs.stderr
    assert "4242-rank1.out (orch logs 4242 --rank 1)" in logs.stderr and "spin_forever" in logs.stderr
    assert "line 20" not in logs.stderr and "line 21" in logs.stderr  # the last 20 lines
    shown = orch("logs", str(folder), "--rank", "1", cwd=no_slurm)
    assert shown.stdout.endswith("spin_forever\n") and "orch: look at rank 1" in shown.stderr
    assert "--- last lines" not in shown.stderr  # the rank's log was just shown


def test_status_of_a_folder_with_damaged_records_still_answers(no_slurm: Path) -> None:
    folder = slurm_folder(no_slurm / "jobs", "4243", [])
    outcome_path(folder, 0).write_text("{torn")
    outcome_path(folder, 1).write_text(rec(1, "completed", run="4243", exit_code=0).model_dump_json())
    status = orch("status", str(folder), "--json", cwd=no_slurm)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["failure"] is None
    logs = orch("logs", str(folder), cwd=no_slurm)
    assert logs.returncode == 0 and "look at" not in logs.stderr


# --- the tasks alone, as srun starts them (real processes, gloo): the folder's records name the rank ------

HANG_JOB = TESTS / "jobs" / "hang.py"


@pytest.mark.slow
def test_as_under_srun_a_rank_stuck_in_python_is_named_by_orch_status(no_slurm: Path) -> None:
    """No orch run around the tasks: rank 0 gives up waiting by itself (exit 3), then rank 1 gets
    SIGTERM as srun --kill-on-bad-exit sends it; only the records tell orch status who stopped."""
    import signal
    import sys

    from orchestrator.env import taskenv
    from orchestrator.local.rankenv import free_port

    root = no_slurm / "jobs"
    folder = root / "hang-srun"
    (folder / LOG_DIR).mkdir(parents=True)
    (folder / "checkpoints").mkdir()
    write_run_config(folder, RunConfig(
        mode="slurm", job_name="hang", job_file=str(HANG_JOB), nodes=1, gpus_per_node=0, tasks_per_node=2,
        params={"fault": "spin", "fault_rank": 1, "fault_step": 3, "epochs": 3}, cpus_per_task=1,
        job_dir=str(folder), launcher=Launcher(job_root=str(root), init_timeout=60, collective_timeout=5),
        created=datetime.now().isoformat(timespec="seconds")))
    (folder / JOB_ID_FILE).write_text("9001\n")
    (folder / LOG_DIR / "slurm-9001.out").write_text("orch: job 9001 (restart 0) on localhost\n")
    envs = taskenv.simulate_slurm_task_envs(["localhost"], 2, "9001", 0, "127.0.0.1", free_port())
    procs = []
    for rank, task_env in enumerate(envs):
        with (folder / LOG_DIR / f"9001-rank{rank}.out").open("wb") as out:
            argv = [sys.executable, "-m", "orchestrator.runtime.launch", "--job-dir", str(folder)]
            procs.append(subprocess.Popen(argv,
                                          env=clean_environ(**task_env), stdout=out,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True))
    try:
        assert procs[0].wait(timeout=240) == 3
        assert procs[1].poll() is None  # still spinning
        procs[1].send_signal(signal.SIGTERM)
        assert procs[1].wait(timeout=30) == -signal.SIGTERM
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    status = orch("status", str(folder), "--json", cwd=no_slurm)
    assert status.returncode == 0, status.stderr
    failure = json.loads(status.stdout)["failure"]
    assert failure["kind"] == "stuck" and failure["rank"] == 1 and failure["waiting"] == [0], failure
    assert failure["timeout_s"] == 5 and failure["timeout_setting"] == COLLECTIVE_TIMEOUT
    assert "stopped by Slurm (SIGTERM)" in failure["message"] and "its last step: epoch 1" in failure["message"]
    logs = orch("logs", "9001", "--cluster", str(write_cluster(no_slurm, root)), cwd=no_slurm)
    assert logs.returncode == 0, logs.stderr
    assert "orch: look at rank 1: rank 1 stopped at hang.py:" in logs.stderr  # where (records/stacks.py)
    assert "rank 1 stopped making progress" in logs.stderr
    assert "spin_forever" in logs.stderr  # the stuck rank's stacks, dumped on SIGTERM, in its log's tail


def write_cluster(where: Path, root: Path) -> Path:
    path = where / "cluster.yaml"
    path.write_text("name: t\npartitions:\n  - {name: cpu, nodes: 'n[1-2]', gpus_per_node: 0, cpus_per_node: 2, "
                    f"mem_per_node: 4G}}\nlauncher: {{job_root: '{root}'}}\n", encoding="utf-8")
    return path


# --- the rank that was killed, not the rank that lost its peer ------------------------------------------
# Records captured from real runs of tests/jobs/faulty.py (fault=kill, rank 1 SIGKILLs itself at step 40),
# just before the attempt was judged (the record files, verbatim).

# orch run, the flaky case: orch run saw rank 1 die (-9) and stopped rank 0 (SIGTERM) while rank 0 was still
# printing its lost-connection traceback; rank 1's record still says running.
LOCAL_KILLED = [
    '{"ended": 1795636044.275232, "exit_code": -15, "first_step": 1795636043.8104553, "host": "vm", "kind": '
    '"signalled", "last_step": {"epoch": 2, "step": 7, "time": 1795636044.1830182}, "pid": 32465, "rank": 0, '
    '"restart": 0, "run": "local", "signal": "SIGTERM", "started": 1795636037.9009886, "stopped_by": "orch run", '
    '"version": 1, "world_size": 2}',
    '{"host": "vm", "kind": "running", "pid": 32496, "rank": 1, "restart": 0, "run": "local", "started": '
    '1795636037.8327093, "version": 1, "world_size": 2}',
]
# srun: srun took rank 0 down before it wrote a word; both records say running (job 1 of the local cluster)
SRUN_BOTH_SILENT = [
    '{"host": "node1", "kind": "running", "pid": 2203, "rank": 0, "restart": 0, "run": "1", "started": '
    '1795636098.6836812, "version": 1, "world_size": 2}',
    '{"host": "node2", "kind": "running", "pid": 2206, "rank": 1, "restart": 0, "run": "1", "started": '
    '1795636098.7563853, "version": 1, "world_size": 2}',
]
SRUN_BOTH_SILENT_LOG = """orch: job 1 (restart 0) on node[1-2]: MASTER_ADDR=127.0.0.1 MASTER_PORT=41001
srun: error: node2: task 1: Killed
srun: launch/slurm: _step_signal: Terminating StepId=1.0
srun: error: node1: task 0: Terminated
srun: Force Terminated StepId=1.0
"""
# srun: rank 0 lost the connection and said so (job 3)
SRUN_WAITED = [
    '{"ended": 1795636114.805188, "exit_code": 3, "first_step": 1795636114.410957, "host": "node1", "how": "lost", '
    '"kind": "waited", "last_step": {"epoch": 2, "step": 7, "time": 1795636114.695796}, "pid": 2392, "rank": 0, '
    '"reason": "lost the connection to another rank in a collective (RuntimeError: [/__w/pytorch/pytorch/'
    'third_party/gloo/gloo/transport/tcp/pair.cc:545] Read error [127.0.0.1]:56530: Connection reset by peer. '
    'This is typically caused by a remote worker hanging or bugs in the application.)", "restart": 0, "run": "3", '
    '"started": 1795636101.2565863, "version": 1, "world_size": 2}',
    '{"host": "node2", "kind": "running", "pid": 2394, "rank": 1, "restart": 0, "run": "3", "started": '
    '1795636101.2481518, "version": 1, "world_size": 2}',
]
SRUN_WAITED_LOG = """srun: error: node2: task 1: Killed
srun: launch/slurm: _step_signal: Terminating StepId=3.0
srun: error: node1: task 0: Exited with exit code 3
srun: Force Terminated StepId=3.0
"""


def parsed(texts: list[str]) -> list[RankOutcome]:
    out = [parse_outcome(t) for t in texts]
    assert all(isinstance(r, RankOutcome) for r in out), out
    return [r for r in out if isinstance(r, RankOutcome)]


def test_the_flaky_orch_run_case_blames_the_killed_rank_with_or_without_the_exit_codes() -> None:
    records = parsed(LOCAL_KILLED)
    # the records alone (what attempts.json was judged from before): rank 0 was named, as "stopped"
    alone = blame(records, world_size=2)
    assert alone is not None and alone.ranks == (1,) and alone.kind == "vanished", alone
    assert alone.message.startswith("rank 1 was still running and ended without a word"), alone.message
    assert "rank 0 was stopped by orch run (SIGTERM) after it" in alone.message
    # with what orch run saw: rank 1 was killed by SIGKILL, rank 0 stopped by orch run
    seen = Seen(codes={0: -15, 1: -9}, stopped=frozenset({0}), stopped_by="orch run",
                ended={0: 1795636044.29, 1: 1795636044.20})
    found = blame(complete(records, seen), world_size=2)
    assert found is not None and found.kind == "vanished" and found.ranks == (1,), found
    assert found.message.startswith("rank 1 was killed by SIGKILL without a word")
    assert nodeevidence.evidence(found, complete(records, seen)) == [("vm", "signal")]


@pytest.mark.parametrize(("texts", "log", "waited"), [(SRUN_BOTH_SILENT, SRUN_BOTH_SILENT_LOG, False),
                                                      (SRUN_WAITED, SRUN_WAITED_LOG, True)])
def test_under_srun_the_batch_log_names_the_killed_task(texts: list[str], log: str, waited: bool) -> None:
    records = parsed(texts)
    run = records[0].run
    before = blame(records, world_size=2, run=run)
    assert (before is None) if not waited else (before is not None and before.ranks == (1,))
    seen = seen_from(parse(step_lines(log.splitlines())), run=run, restart=0, nodes=["node1", "node2"])
    assert seen is not None and seen.codes == {1: -9, 0: -15 if not waited else 3}
    assert seen.stopped == (frozenset({0}) if not waited else frozenset())
    merged = complete(records, seen)
    found = blame(merged, world_size=2, run=run)
    assert found is not None and found.kind == "vanished" and found.ranks == (1,), found
    assert found.message.startswith("rank 1 was killed by SIGKILL without a word"), found.message
    assert nodeevidence.evidence(found, merged, run=run) == [("node2", "signal")]
    decision = decide(Ended(attempt=0, exit_code=137, blame=found, records=current_run(merged, run)[0]),
                      max_restarts=2)
    assert decision.restart and decision.blamed_rank == 1 and decision.blamed_node == "node2"


LOST_PEER = "rank 0 failed: RuntimeError: [gloo/transport/tcp/pair.cc:545] Read error: Connection closed by peer"


@pytest.mark.parametrize("reason", [
    LOST_PEER, "rank 0 failed: checkpoint: Connection reset by peer", "DistBackendError: Broken pipe",
    "a collective timed out after 6 s (RuntimeError: Timed out waiting 6000ms)",
])
def test_a_rank_killed_by_a_signal_wins_over_the_rank_that_only_lost_it(reason: str) -> None:
    """The consequence may end first (orch run sees the dead rank a poll later): the killed rank still wins."""
    consequence = rec(0, "failed", exit_code=1, reason=reason, ended=T0 + 1)
    killed = rec(1, "running", exit_code=-9, ended=T0 + 2)
    found = blame([consequence, killed], world_size=2)
    assert found is not None and found.ranks == (1,) and found.kind == "vanished", found
    # an exit with the waiter's code and no record says the same
    found = blame([rec(0, "running", exit_code=3, ended=T0 + 1), killed], world_size=2)
    assert found is not None and found.ranks == (1,), found


def test_a_lost_peer_failure_points_at_a_silent_peer_and_is_named_only_alone() -> None:
    consequence = rec(0, "failed", exit_code=1, reason=LOST_PEER)
    silent = blame([consequence, rec(1, "running")], world_size=2)
    assert silent is not None and silent.kind == "stuck" and silent.ranks == (1,) and silent.waiting == (0,)
    stopped = blame([consequence, rec(1, "signalled", exit_code=-15, signal="SIGTERM", stopped_by="srun")],
                    world_size=2)
    assert stopped is not None and stopped.ranks == (1,) and stopped.waiting == (0,)
    alone = blame([consequence, rec(1, "completed", exit_code=0)], world_size=2)  # nobody else to blame
    assert alone is not None and alone.kind == "failed" and alone.ranks == (0,)
    # a rank's own error still wins over a lost-peer one that ended before it
    own = blame([rec(0, "failed", exit_code=1, reason=LOST_PEER, ended=T0 + 1),
                 rec(1, "failed", exit_code=1, reason="ValueError: bad batch", ended=T0 + 2)], world_size=2)
    assert own is not None and own.kind == "failed" and own.ranks == (1,)


def test_the_roles_table_gives_every_record_exactly_one_role() -> None:
    cases = {"completed": rec(0, "completed", exit_code=0), "waited": timed_out(0),
             "stopped": rec(0, "signalled", exit_code=-15), "died": rec(0, "running", exit_code=-9),
             "lost_peer": rec(0, "failed", exit_code=1, reason=LOST_PEER),
             "failed": rec(0, "failed", exit_code=1, reason="ValueError: x"),
             "silent": rec(0, "running")}
    assert {name: role(record) for name, record in cases.items()} == {name: name for name in cases}
    assert [name for name, _ in ROLES] == list(cases)


@pytest.mark.parametrize("threads", [0, 1], ids=["alone", "beside-a-thread"])
def test_a_sigterm_during_the_final_write_waits_until_the_record_is_whole(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          threads: int) -> None:
    """orch run (or srun) stops a rank that lost its peer while it writes its final record: the record lands
    whole (with its last step) before the handler ends the process, never the old ``running`` one. Also
    beside another thread (a rank has torch's and gloo's), which a signal sent to the process may reach."""
    import signal
    import threading

    quiet = threading.Event()
    for _ in range(threads):
        threading.Thread(target=quiet.wait, daemon=True).start()

    from orchestrator.task import outcome as outcome_module

    path = tmp_path / "rank0.outcome.json"
    recorder = Recorder()
    recorder.start(path, rank=0, world_size=2, run="local", restart=0, stopped_by="orch run", init_timeout=5,
                   collective_timeout=5)
    recorder.step(2, 7)
    real_write = outcome_module.write_text_atomic

    def write_after_a_sigterm(target: Path, text: str) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # lands between the decision to write and the write
        real_write(target, text)

    class Stopped(Exception):
        pass

    on_disk_when_stopped: list[str] = []

    def on_term(signum: int, frame: object) -> None:
        on_disk_when_stopped.append(json.loads(path.read_text())["kind"])
        raise Stopped

    previous = signal.signal(signal.SIGTERM, on_term)
    monkeypatch.setattr(outcome_module, "write_text_atomic", write_after_a_sigterm)
    try:
        with pytest.raises(Stopped):
            recorder.finish("waited", 3, reason="lost the connection to another rank", how="lost")
    finally:
        signal.signal(signal.SIGTERM, previous)
        quiet.set()
    assert on_disk_when_stopped == ["waited"]
    data = json.loads(path.read_text())
    assert data["kind"] == "waited" and data["last_step"]["epoch"] == 2 and data["last_step"]["step"] == 7


def test_a_rank_with_no_record_beside_stopped_ones_is_no_culprit() -> None:
    """scancel while rank 1 was still importing torch: rank 0 was stopped, rank 1 wrote nothing yet."""
    found = blame([rec(0, "signalled", exit_code=-15, signal="SIGTERM", stopped_by="Slurm")], world_size=2)
    assert found is not None and found.kind == "stopped" and found.ranks == (0,), found


# --- orch status / orch logs with srun's report: every record says running, srun knows --------

HELPER_LINE = "orch: attempt 0 vanished rank 1 on node2 (exit 137): restarts are off (--max-restarts 0)\n"


def silent_folder(root: Path, log: str) -> Path:
    """Job 1 of the local cluster as srun left it: both records say running, the batch log ends in ``log``."""
    folder = slurm_folder(root, "1", parsed(SRUN_BOTH_SILENT))
    (folder / LOG_DIR / "slurm-1.out").write_text(log)
    return folder


def test_status_and_logs_name_the_task_srun_names_when_every_record_says_running(no_slurm: Path) -> None:
    folder = silent_folder(no_slurm / "jobs", SRUN_BOTH_SILENT_LOG)
    status = orch("status", str(folder), "--json", cwd=no_slurm)
    assert status.returncode == 0, status.stderr
    failure = json.loads(status.stdout)["failure"]
    assert (failure["rank"], failure["node"], failure["kind"]) == (1, "node2", "vanished"), failure
    assert failure["message"].startswith("rank 1 was killed by SIGKILL without a word"), failure
    assert "rank 0 was killed by SIGTERM" in failure["message"]  # srun stopped it after rank 1 died
    assert any("srun's report" in note and "slurm-1.out" in note for note in failure["notes"]), failure
    human = orch("status", str(folder), cwd=no_slurm)
    assert "# job 1: rank 1 was killed by SIGKILL" in human.stdout and "rank 1 ran on node2" in human.stdout, \
        human.stdout
    logs = orch("logs", str(folder), cwd=no_slurm)
    assert logs.returncode == 0, logs.stderr
    assert "orch: look at rank 1: rank 1 was killed by SIGKILL" in logs.stderr, logs.stderr
    assert "rank 0 was killed by SIGTERM (rank 1 ran on node2)\n" in logs.stderr, logs.stderr
    assert "1-rank1.out (orch logs 1 --rank 1)" in logs.stderr  # that rank's last lines
    # srun said nothing (the batch log ends in the script's own line): as before, nobody is named
    (folder / LOG_DIR / "slurm-1.out").write_text(SRUN_BOTH_SILENT_LOG + HELPER_LINE)
    quiet = orch("status", str(folder), "--json", cwd=no_slurm)
    assert quiet.returncode == 0 and json.loads(quiet.stdout)["failure"] is None, quiet.stdout
    assert "look at" not in orch("logs", str(folder), cwd=no_slurm).stderr


def test_attempts_json_holds_the_verdict_once_the_restart_helper_judged_the_attempt(
        no_slurm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The helper ran after the step and printed its line: the batch log's tail is no longer srun's, and
    attempts.json names the rank and node it blamed; that verdict is what status and logs say."""
    from orchestrator.slurm import restart

    folder = silent_folder(no_slurm / "jobs", SRUN_BOTH_SILENT_LOG)
    env = {"SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "node[1-2]"}
    assert restart.main(["--job-dir", str(folder), "--attempt", "0", "--step-rc", "137"], environ=env) == 1
    helper = capsys.readouterr().err
    assert "orch: attempt 0 vanished (exit 137)" in helper, helper
    with (folder / LOG_DIR / "slurm-1.out").open("a") as log:
        log.write(helper)
    attempt = json.loads((folder / "attempts.json").read_text())[0]
    assert (attempt["blamed_rank"], attempt["blamed_node"]) == (1, "node2"), attempt
    status = orch("status", str(folder), "--json", cwd=no_slurm)
    failure = json.loads(status.stdout)["failure"]
    assert (failure["rank"], failure["node"], failure["kind"]) == (1, "node2", "vanished"), failure
    assert "rank 1 ended without a word" in failure["message"] and "attempt 0" in failure["message"], failure
    logs = orch("logs", str(folder), cwd=no_slurm)
    assert "orch: look at rank 1: rank 1 ended without a word" in logs.stderr, logs.stderr
    assert "in attempts.json) (rank 1 ran on node2)\n" in logs.stderr, logs.stderr
    # the helper's verdict on its attempt wins over a report read afterwards (here: another task named)
    (folder / LOG_DIR / "slurm-1.out").write_text("srun: error: node1: task 0: Killed\n")
    again = json.loads(orch("status", str(folder), "--json", cwd=no_slurm).stdout)["failure"]
    assert (again["rank"], again["node"]) == (1, "node2"), again


def test_the_batch_log_s_last_step_is_the_last_attempt_s(no_slurm: Path) -> None:
    """Attempt 0 was judged (rank 0 on node1, restarted); attempt 1's ranks (restart 1) say running and the
    batch log ends in attempt 1's srun lines: those name attempt 1's culprit, attempt 0's verdict stays its own."""
    second = [r.model_copy(update={"restart": 1, "started": r.started + 60}) for r in parsed(SRUN_BOTH_SILENT)]
    folder = slurm_folder(no_slurm / "jobs", "1", second)  # attempt 1's records replaced attempt 0's
    judged = {"attempt": 0, "requeue": 0, "job": "1", "started": T0, "ended": second[0].started - 50,
              "exit_code": 137, "kind": "vanished", "blamed_rank": 0, "blamed_node": "node1", "restarted": True}
    (folder / "attempts.json").write_text(json.dumps([judged]))
    (folder / LOG_DIR / "slurm-1.out").write_text(
        SRUN_BOTH_SILENT_LOG.replace("task 1", "task 0").replace("node2", "node1")
        + "orch: attempt 0 vanished rank 0 on node1 (exit 137); restarting in the allocation\n"
        + SRUN_BOTH_SILENT_LOG)
    failure = json.loads(orch("status", str(folder), "--json", cwd=no_slurm).stdout)["failure"]
    assert (failure["rank"], failure["node"]) == (1, "node2"), failure
    assert failure["message"].startswith("rank 1 was killed by SIGKILL"), failure


def test_a_local_run_and_an_unreadable_batch_log_are_judged_from_the_records_alone(tmp_path: Path) -> None:
    from orchestrator.records.jobdirs import read_job_dir
    from orchestrator.slurm.jobstate import failure

    folder = silent_folder(tmp_path / "jobs", SRUN_BOTH_SILENT_LOG)
    found = failure(read_job_dir(folder))
    assert found is not None and (found.ranks, found.node) == ((1,), "node2"), found
    (folder / LOG_DIR / "slurm-1.out").unlink()
    os.mkfifo(folder / LOG_DIR / "slurm-1.out")  # never blocks, never raises
    assert failure(read_job_dir(folder)) is None
    (folder / LOG_DIR / "slurm-1.out").unlink()
    assert failure(read_job_dir(folder)) is None  # no batch log at all
    (folder / LOG_DIR / "slurm-1.out").write_text(SRUN_BOTH_SILENT_LOG)
    (folder / "attempts.json").write_text('[7, {"attempt": "0", "job": "1", "ended": 1e300, "kind": "vanished", '
                                          '"blamed_rank": 0}]')  # no attempt of these records: srun's report
    found = failure(read_job_dir(folder))
    assert found is not None and (found.ranks, found.node) == ((1,), "node2"), found
    # an orch run folder: the same records and a log of that name are never read as srun's
    local = [r.model_copy(update={"run": "local"}) for r in parsed(SRUN_BOTH_SILENT)]
    for record in local:
        outcome_path(folder, record.rank).write_text(record.model_dump_json())
    config = json.loads((folder / "job.json").read_text())
    config["mode"] = "local"
    (folder / "job.json").write_text(json.dumps(config))
    (folder / JOB_ID_FILE).unlink()
    assert blame(local, world_size=2, run="local") is None
    assert failure(read_job_dir(folder)) is None
