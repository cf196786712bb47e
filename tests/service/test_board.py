"""service/board.py: orch top's rows, and what a refresh reads (only what changed) and asks Slurm (batched, rarely)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from support import training_job

from orchestrator.records.atomic import write_text_atomic
from orchestrator.records.joblayout import outcome_path
from orchestrator.records.restarts.attempts import write_attempts
from orchestrator.service.board import Board
from orchestrator.task.outcome import Recorder


class FakeSlurm:
    """A Runner: squeue and sacct answers from a table of jobs (id -> state, nodes, name), every call kept."""

    def __init__(self) -> None:
        self.jobs: dict[str, tuple[str, str, str]] = {}
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], timeout: float, /) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        ids = next((a.split("=", 1)[1].split(",") for a in argv if a.startswith("--jobs=")), [])
        lines = []
        for job_id in ids:
            if job_id not in self.jobs:
                continue
            state, nodes, name = self.jobs[job_id]
            if argv[0] == "squeue":
                lines.append(f"{job_id}|{state}|None|{nodes}|1:05|0|N/A|{name}")
            else:
                lines.append(f"{job_id}|{state}|0:0|{nodes}|00:01:05|65|cpu=2|Unknown|{name}")
        return subprocess.CompletedProcess(list(argv), 0, "\n".join(lines) + "\n", "")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file os.open opened (orch's readers open through it: spec/safefile.py)."""
    paths: list[str] = []
    real = os.open

    def spy(path: Any, *args: Any, **kwargs: Any) -> int:
        paths.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    return paths


def _progress(folder: Path, step: int, loss: float) -> None:
    write_text_atomic(folder / "progress.json", json.dumps(
        {"epoch": 1, "epochs": 2, "step": step, "steps": 10, "loss": loss, "samples_per_s": 1234.0, "eta_s": 9.0,
         "time": 1.0}))


def _steps(folder: Path, *losses: float) -> None:
    with (folder / "steps.jsonl").open("a") as fh:
        for i, loss in enumerate(losses):
            fh.write(json.dumps({"step": i, "time": 1.0, "train/loss": loss}) + "\n")


@pytest.fixture
def jobs(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "jobs"
    running = training_job(root, "train", job_id="11", second=3)
    _progress(running, 5, 0.5)
    _steps(running, 2.0, 1.0, 0.5)
    done = training_job(root, "done", job_id="10", second=2)
    write_text_atomic(done / "result.json", json.dumps({"goodput": {"goodput": 0.87}}))
    failed = training_job(root, "failed", job_id="9", second=1)
    for rank, kind in ((0, "waited"), (1, "failed")):
        recorder = Recorder()
        recorder.start(outcome_path(failed, rank), rank=rank, world_size=2, run="9", restart=1,
                       stopped_by="srun", init_timeout=60, collective_timeout=60)
        reason = "ValueError: boom" if kind == "failed" else "lost the connection to another rank"
        recorder.finish(kind, 1, reason=reason, how="lost" if kind == "waited" else None)
    write_attempts(failed, [{"attempt": 0, "requeue": 0, "job": "9", "kind": "failed", "exit_code": 1},
                            {"attempt": 1, "requeue": 0, "job": "9", "kind": "failed", "exit_code": 1}])
    local = training_job(root, "here", mode="local", second=0)
    return {"root": root, "running": running, "done": done, "failed": failed, "local": local}


def _board(jobs: dict[str, Path], slurm: FakeSlurm, clock: Clock) -> Board:
    slurm.jobs.update({"11": ("RUNNING", "node[1-2]", "train"), "10": ("COMPLETED", "node1", "done"),
                       "9": ("FAILED", "node2", "failed")})
    return Board(jobs["root"], runner=slurm, clock=clock, remote=False)


def test_rows_say_what_orch_status_says(jobs: dict[str, Path]) -> None:
    rows = {r.name: r for r in _board(jobs, FakeSlurm(), Clock()).refresh()}
    assert list(rows) == ["train", "done", "failed", "here"]  # newest first
    train = rows["train"]
    assert (train.state, train.nodes, train.epoch, train.step) == ("RUNNING", "node[1-2]", "1/2", "5/10")
    assert train.loss == 0.5
    assert train.done == pytest.approx(0.25) and train.trend == (2.0, 1.0, 0.5)
    assert train.rate == "1,234" and train.eta is not None and not train.terminal
    assert (rows["done"].state, rows["done"].goodput, rows["done"].done) == ("COMPLETED", 0.87, 1.0)
    failed = rows["failed"]
    assert failed.state == "FAILED" and failed.restarts == "1+0" and failed.blamed == "rank 1"
    assert failed.failure is not None and "boom" in failed.failure["message"]
    assert failed.rate is None and failed.eta is None  # a pace only while it runs
    assert rows["here"].mode == "local" and rows["here"].nodes == "local" and rows["here"].job_id is None


def test_a_refresh_without_changes_opens_nothing_and_asks_slurm_nothing(jobs: dict[str, Path],
                                                                         opened: list[str]) -> None:
    slurm, clock = FakeSlurm(), Clock()
    board = _board(jobs, slurm, clock)
    board.refresh()
    assert [c[0] for c in slurm.calls] == ["squeue", "sacct"]  # one batched call each, every job in it
    assert "--jobs=11,10,9" in slurm.calls[0]
    reads, tails = board.memo.reads, board.tail_reads()
    opened.clear()
    clock.now += 1
    board.refresh()
    assert opened == [] and board.memo.reads == reads and board.tail_reads() == tails
    assert len(slurm.calls) == 2  # within slurm_every: Slurm is not asked


def test_one_changed_folder_reads_only_its_changed_files(jobs: dict[str, Path], opened: list[str]) -> None:
    slurm, clock = FakeSlurm(), Clock()
    board = _board(jobs, slurm, clock)
    board.refresh()
    running = jobs["running"]
    _progress(running, 7, 0.25)
    _steps(running, 0.25)
    opened.clear()
    row = next(r for r in board.refresh() if r.name == "train")
    assert (row.step, row.loss, row.trend[-1]) == ("7/10", 0.25, 0.25)
    assert sorted(Path(p).name for p in opened) == ["progress.json", "steps.jsonl"]
    assert all(Path(p).parent == running for p in opened)


def test_slurm_is_asked_again_only_for_jobs_that_have_not_ended(jobs: dict[str, Path]) -> None:
    slurm, clock = FakeSlurm(), Clock()
    board = _board(jobs, slurm, clock)
    board.refresh()
    clock.now += board.slurm_every
    slurm.jobs["11"] = ("COMPLETED", "node[1-2]", "train")
    rows = {r.name: r for r in board.refresh()}
    assert slurm.calls[2][-1] == "--jobs=11" and rows["train"].state == "COMPLETED" and rows["train"].terminal
    clock.now += board.slurm_every
    board.refresh()
    assert len(slurm.calls) == 4  # squeue + sacct for job 11 once; then nothing is left to ask


def test_a_new_folder_shows_at_the_next_refresh(jobs: dict[str, Path]) -> None:
    board = _board(jobs, FakeSlurm(), Clock())
    assert len(board.refresh()) == 4
    training_job(jobs["root"], "later", job_id="12", second=9)
    rows = board.refresh()
    assert rows[0].name == "later" and rows[0].state == "UNKNOWN"  # Slurm asked at its next turn


def test_a_killed_rank_is_blamed_once_its_record_changes(jobs: dict[str, Path]) -> None:
    slurm, clock = FakeSlurm(), Clock()
    board = _board(jobs, slurm, clock)
    recorders = []
    for rank in (0, 1):
        recorder = Recorder()
        recorder.start(outcome_path(jobs["running"], rank), rank=rank, world_size=2, run="11", restart=0,
                       stopped_by="srun", init_timeout=60, collective_timeout=60)
        recorders.append(recorder)
    assert next(r for r in board.refresh() if r.name == "train").blamed is None
    recorders[1].finish("failed", 1, reason="RuntimeError: killed")
    assert next(r for r in board.refresh() if r.name == "train").blamed == "rank 1"


def test_slurm_refusing_keeps_the_rows_and_says_why(jobs: dict[str, Path]) -> None:
    def down(argv: Sequence[str], timeout: float, /) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(list(argv), 1, "", "Unable to contact slurm controller (connect failure)")

    board = Board(jobs["root"], runner=down, clock=Clock(), remote=False)
    rows = board.refresh()
    assert len(rows) == 4 and {r.state for r in rows if r.mode == "slurm"} <= {"UNKNOWN", "COMPLETED"}
    assert board.slurm_error is not None and "slurm controller" in board.slurm_error


def test_an_ended_job_whose_folder_changes_is_asked_about_again(jobs: dict[str, Path]) -> None:
    slurm, clock = FakeSlurm(), Clock()
    board = _board(jobs, slurm, clock)
    slurm.jobs["10"] = ("PREEMPTED", "node1", "done")
    board.refresh()
    clock.now += board.slurm_every
    board.refresh()
    assert all("10" not in c[-1].split("=")[1].split(",") for c in slurm.calls[2:])  # ended: not asked again
    slurm.jobs["10"] = ("PENDING", "", "done")  # it requeued itself, and wrote its folder
    (jobs["done"] / "requeue").write_text("")
    clock.now += board.slurm_every
    board.refresh()  # the folder moved: its id is asked at Slurm's next turn
    clock.now += board.slurm_every
    rows = {r.name: r for r in board.refresh()}
    assert rows["done"].state == "PENDING" and not rows["done"].terminal
