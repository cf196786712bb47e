"""views/topapp.py through textual's own harness (App.run_test's pilot): the table, selecting a job (its
ranks, start-up and log), and the cancel and checkpoint-and-requeue keys, which ask first and then go through
orch cancel's code path to the stand-in Slurm clients (tests/support/standins.py's FakeSlurm, as tests/commands use)."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from support import FakeSlurm, training_job
from textual.widgets import DataTable

from orchestrator.commands import top
from orchestrator.records.atomic import write_text_atomic
from orchestrator.records.joblayout import outcome_path
from orchestrator.task.outcome import Recorder
from orchestrator.views.topapp import Confirm, TopApp

pytest.importorskip("textual")  # the tui extra is in the test extra: present wherever the tests run

SQUEUE = "{id}|RUNNING|None|node[1-2]|0:05|0|N/A|{name}\n"


@pytest.fixture
def root(tmp_path: Path, fake_slurm: FakeSlurm) -> Path:
    root = tmp_path / "jobs"
    (tmp_path / "cluster.yaml").write_text(
        "name: t\npartitions:\n  - {name: debug, nodes: 'node[1-2]', gpus_per_node: 0, "
        f"cpus_per_node: 4, mem_per_node: 4096}}\nlauncher:\n  job_root: {root}\n")
    first = training_job(root, "first", job_id="21", second=1)
    second = training_job(root, "second", job_id="22", second=2)
    write_text_atomic(second / "progress.json", json.dumps({"epoch": 1, "epochs": 2, "step": 3, "steps": 10,
                                                            "loss": 0.75, "samples_per_s": 10.0, "eta_s": 5.0}))
    for folder, job_id in ((first, "21"), (second, "22")):
        (folder / "logs" / f"{job_id}-rank0.out").write_text(f"hello from {job_id}\nloss [0.5] [/bold] [\n")
        recorder = Recorder()
        recorder.start(outcome_path(folder, 0), rank=0, world_size=2, run=job_id, restart=0, stopped_by="srun",
                       init_timeout=60, collective_timeout=60)
    fake_slurm.set({"squeue": {"stdout": SQUEUE.format(id=21, name="first") + SQUEUE.format(id=22, name="second")},
                    "scancel": {"stdout": ""}})
    return root


def _app() -> TopApp:
    return top.app(argparse.Namespace(limit=200, interval=0.1, slurm_interval=5.0, cluster=None))


async def _until(pilot: object, test: Callable[[], bool], seconds: float = 20.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if test():
            return
        await pilot.pause(0.05)  # type: ignore[attr-defined]
    raise AssertionError("the app never got there")


def test_select_shows_the_jobs_ranks_and_log(root: Path) -> None:
    async def drive() -> None:
        app = _app()
        async with app.run_test(size=(200, 50)) as pilot:
            await _until(pilot, lambda: len(app.rows) == 2)
            assert [r.name for r in app.rows.values()] == ["second", "first"]
            assert app.rows[next(iter(app.rows))].step == "3/10"
            await pilot.press("down", "enter")
            await _until(pilot, lambda: "hello from 21" in str(app.query_one("#detail").render()))
            detail = str(app.query_one("#detail").render())
            assert "rank 0: running" in detail and "rank 1: not started" in detail
            assert "loss [0.5] [/bold] [" in detail  # a log line is text, never markup
            cells = app.query_one(DataTable).get_row(next(iter(app.rows)))
            assert "node[1-2]" in [str(c) for c in cells]

    asyncio.run(drive())


def test_cancel_asks_then_cancels_through_orch_cancel(root: Path, fake_slurm: FakeSlurm) -> None:
    def scancels() -> list[list[str]]:
        return [c for c in fake_slurm.calls() if c[0] == "scancel"]

    async def drive() -> None:
        app = _app()
        async with app.run_test(size=(200, 50)) as pilot:
            await _until(pilot, lambda: len(app.rows) == 2)
            await pilot.press("c")
            await _until(pilot, lambda: isinstance(app.screen, Confirm))
            assert "Cancel job 22 (second)?" in app.screen.question  # type: ignore[attr-defined]
            await pilot.press("n")  # no: nothing is sent
            await _until(pilot, lambda: not isinstance(app.screen, Confirm))
            assert scancels() == [] and "not sent" in app.message
            await pilot.press("c", "y")
            await _until(pilot, lambda: bool(scancels()) and "cancelled 22" in app.message)
            assert scancels() == [["scancel", "22"]]
            await pilot.press("down", "r")
            await _until(pilot, lambda: isinstance(app.screen, Confirm))
            assert "checkpoint-and-requeue signal to job 21" in app.screen.question  # type: ignore[attr-defined]
            await pilot.press("y")
            await _until(pilot, lambda: len(scancels()) == 2)
            assert scancels()[1] == ["scancel", "--signal=USR2", "--full", "21"]  # the job's launcher.preempt_signal
            await pilot.press("q")

    asyncio.run(drive())


def test_an_action_slurm_refuses_says_why(root: Path, fake_slurm: FakeSlurm) -> None:
    async def drive() -> None:
        app = _app()
        async with app.run_test(size=(200, 50)) as pilot:
            await _until(pilot, lambda: len(app.rows) == 2)
            fake_slurm.set({"squeue": {"stdout": SQUEUE.format(id=22, name="second")},
                            "scancel": {"rc": 1, "stderr": "scancel: error: Kill job error on job id 22: denied\n"}})
            await pilot.press("c", "y")
            await _until(pilot, lambda: app.message.startswith("error:"))
            assert "denied" in app.message

    asyncio.run(drive())


def test_a_cell_that_grows_widens_its_column(root: Path) -> None:
    """A job that had no progress yet (an empty PROGRESS cell) gets its bar and ``ep 1/2 step 3/10`` later:
    the column widens to hold it, never cutting the step count (as a real terminal showed before)."""
    for progress in root.glob("*/progress.json"):  # no job has a step yet: the column starts narrow
        progress.unlink()

    async def drive() -> None:
        app = _app()
        async with app.run_test(size=(200, 50)) as pilot:
            await _until(pilot, lambda: len(app.rows) == 2)
            first = next(k for k, r in app.rows.items() if r.name == "first")
            assert not any(r.step for r in app.rows.values())
            table = app.query_one(DataTable)
            write_text_atomic(root / next(p.name for p in root.iterdir() if p.name.startswith("first")) /
                              "progress.json", json.dumps({"epoch": 1, "epochs": 2, "step": 3, "steps": 10,
                                                           "loss": 0.5, "samples_per_s": 10.0, "eta_s": 5.0}))
            await _until(pilot, lambda: app.rows[first].step == "3/10")
            cell = str(table.get_cell(first, "PROGRESS"))
            assert "step 3/10" in cell
            width = table.columns["PROGRESS"].width  # type: ignore[index]
            assert width >= len(cell)

    asyncio.run(drive())


def test_a_refresh_that_arrives_after_the_screen_is_gone_shows_nothing(root: Path) -> None:
    """A refresh thread's result handed to the app as it closes (seen in a CI run: the worker failed with NoMatches
    for #jobs, and the test with it) is dropped, not a crash."""
    app = _app()
    rows: list[object] = []

    async def drive() -> None:
        async with app.run_test(size=(200, 50)) as pilot:
            await _until(pilot, lambda: len(app.rows) == 2)
            rows.extend(app.board.refresh())

    asyncio.run(drive())
    before = app.refreshes
    app._show(rows, None)  # type: ignore[arg-type]
    app._failed("refresh failed: late")
    assert app.refreshes == before and not app._busy
