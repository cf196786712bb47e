"""``orch status`` and ``orch list`` without arguments show a folder whose ``orch submit`` was killed after
sbatch (its ``job_id`` still blank, its ``submit_token`` written): reconciled when Slurm holds a job of its
token, else shown as an interrupted submit with the reason, never skipped; an empty job root is said, not an
error. Canned Slurm answers (tests/conftest.py ``slurm_answers``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import CANNED_JOB_ID, cluster_for, make_job, run_cli

from orchestrator.slurm.tracking import ID_RESERVE

LOST = "smoke-20261125-113000-5e1f00"  # newer than make_job's folder


def interrupted_folder(root: Path) -> Path:
    folder = make_job(root, LOST)
    (folder / "job_id").write_text(" " * (ID_RESERVE - 1) + "\n")  # reserved before sbatch, never filled
    (folder / "submit_token").write_text(f"orch:{LOST}\n")
    return folder


@pytest.fixture
def jobs(tmp_path: Path, slurm_answers: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "jobs"
    make_job(root)
    return interrupted_folder(root), cluster_for(tmp_path, root), slurm_answers


@pytest.mark.parametrize("verb", ["status", "list"])
def test_no_argument_reconciles_an_id_less_folder_whose_job_slurm_holds(
        verb: str, jobs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    folder, cluster, answers = jobs
    (answers / "squeue.out").write_text(f"4317|2026-11-25T11:30:02|orch:{LOST} their own words\n")
    code, out, err = run_cli([verb, "--cluster", str(cluster), "--json"], capsys)
    assert code == 0, err
    rows = {row["job_dir"]: row for row in json.loads(out)}
    assert rows[str(folder)]["job_id"] == "4317", rows
    assert {r["job_id"] for r in rows.values()} == {"4317", CANNED_JOB_ID}
    assert (folder / "job_id").read_text(encoding="ascii") == "4317\n"


@pytest.mark.parametrize("verb", ["status", "list"])
def test_no_argument_shows_an_interrupted_submit_slurm_does_not_hold(
        verb: str, jobs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    folder, cluster, _ = jobs  # squeue answers nothing: no job carries the token
    code, out, err = run_cli([verb, "--cluster", str(cluster), "--json"], capsys)
    assert code == 0, err
    rows = {row["job_dir"]: row for row in json.loads(out)}
    lost = rows[str(folder)]
    assert (lost["job_id"], lost["state"]) == (None, "UNKNOWN"), lost
    assert "orch submit was stopped" in lost["reason"] and "submit it again" in lost["reason"], lost
    assert rows[str(folder.parent / "smoke-20261125-100000-abc123")]["job_id"] == CANNED_JOB_ID
    code, out, err = run_cli([verb, "--cluster", str(cluster)], capsys)  # the table too
    assert code == 0 and LOST in out and "orch submit was stopped" in out, out + err


def test_no_argument_and_no_jobs_of_yours_says_so_and_succeeds(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A new user (or one whose job root holds only other users' folders) asks ``orch status``: a line that
    says there is nothing of theirs there yet, exit 0, as ``orch list`` does; ``--json`` is an empty list."""
    root = tmp_path / "jobs"
    root.mkdir()
    cluster = cluster_for(tmp_path, root)
    code, out, err = run_cli(["status", "--cluster", str(cluster)], capsys)
    assert (code, err) == (0, ""), err
    assert out.startswith(f"# no jobs of yours under {root} yet"), out
    code, out, err = run_cli(["status", "--cluster", str(cluster), "--json"], capsys)
    assert (code, json.loads(out)) == (0, []), err
