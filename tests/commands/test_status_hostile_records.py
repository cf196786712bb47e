"""What orch reads that it did not write: a job folder's records (``job_id``, ``result.json``, ``progress.json``,
``metrics.jsonl``, outcome records, ``preflight_attempts.json``, the batch and rank logs) that are a FIFO,
``/dev/zero``, a folder, JSON of the wrong shape or with 400-digit numbers: ``orch status``, ``list``, ``logs``,
``logs -f`` and ``plot`` finish (an alarm fails a hang), never a traceback, and a FIFO/device/folder is named in
a warning; the safe reader refuses what is not a regular file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from support import CANNED_JOB_ID, CANNED_SUBMIT, cluster_for, make_job, no_hang, run_cli

from orchestrator.spec.safefile import read_json, read_text

JOB_ID = CANNED_JOB_ID
SUBMIT = CANNED_SUBMIT


@pytest.fixture
def slurm(slurm_answers: Path) -> Path:
    """The canned Slurm answers (tests/conftest.py), under the name these tests use."""
    return slurm_answers


# -- files that are not what they claim ------------------------------------------------------

RECORDS = ["job_id", "result.json", "progress.json", "metrics.jsonl", "logs/rank0.outcome.json",
           "preflight_attempts.json", f"logs/slurm-{JOB_ID}.out", f"logs/{JOB_ID}-rank0.out"]

NOT_FILES = ["fifo", "devzero", "folder"]

WRONG_JSON = {
    "result.json": ["[1, 2]", '"done"', '{"final": [1], "startup": {"total": ' + "9" * 400 + "}}", "null", "[" * 5000],
    "progress.json": ["[]", '{"epoch": "x", "loss": ' + "9" * 400 + "}", '{"epoch": ' + "9" * 400 + ', "epochs": 2}'],
    "metrics.jsonl": ['{"epoch": ' + "9" * 400 + ', "train_loss": 1}\n', "[1]\n", '{"train_loss": "x"}\n'],
    "logs/rank0.outcome.json": ['{"rank": "zero"}', "[]", '{"rank": 0, "exit_code": ' + "9" * 400 + "}"],
    "preflight_attempts.json": ['{"attempts": 5}', '{"attempts": [1, 2], "excluded": "n1"}', "7"],
    "job_id": ["١٢٣", "12|34", "9" * 500, "x\x00y"],
}


def plant(path: Path, kind: str) -> None:
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "devzero":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    else:
        path.write_text(kind)


def commands(folder: Path, cluster: Path) -> list[list[str]]:
    return [["status", str(folder)], ["status", "--json", str(folder)], ["list", "--cluster", str(cluster)],
            ["logs", str(folder)], ["logs", "--all-ranks", str(folder)], ["logs", "--batch", str(folder)]]


@pytest.mark.parametrize("kind", NOT_FILES)
@pytest.mark.parametrize("record", RECORDS)
def test_a_record_that_is_no_file_is_named_never_read(record: str, kind: str, slurm: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    folder = make_job(tmp_path / "jobs")
    plant(folder / record, kind)
    cluster = cluster_for(tmp_path, tmp_path / "jobs")
    named = False
    for argv in commands(folder, cluster):
        _, _, err = run_cli(argv, capsys)
        named = named or Path(record).name in err + caplog.text  # the warning (logging, or stderr)
    if record == "metrics.jsonl":
        code, _, err = run_cli(["plot", str(folder), "-o", str(tmp_path / "m.png")], capsys)
        assert code == 2 and "no records" in err
        named = True
    if record in ("preflight_attempts.json", "logs/rank0.outcome.json"):
        named = True  # read only after a preflight exclusion / a failure: test_outcomes_that_are_no_files
    assert named, f"no warning names {record}"


@pytest.mark.parametrize("kind", NOT_FILES)
def test_outcomes_and_preflight_records_that_are_no_files(kind: str, tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    from orchestrator.slurm.preflight import read_record, read_verdict
    from orchestrator.task.outcome import read_outcomes

    folder = make_job(tmp_path / "jobs")
    for name in ("logs/rank0.outcome.json", "preflight_attempts.json", "preflight.json"):
        plant(folder / name, kind)
    with no_hang(5):
        records, notes = read_outcomes(folder)
        assert records == [] and len(notes) == 1 and "rank0.outcome.json" in notes[0]
        assert read_record(folder) is None and read_verdict(folder) is None
    assert "preflight_attempts.json" in caplog.text and "preflight.json" in caplog.text


@pytest.mark.parametrize(("record", "text"), [(r, t) for r, texts in WRONG_JSON.items() for t in texts])
def test_records_of_the_wrong_shape_or_with_huge_numbers(record: str, text: str, slurm: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_job(tmp_path / "jobs")
    plant(folder / record, text)
    for argv in commands(folder, cluster_for(tmp_path, tmp_path / "jobs")):
        run_cli(argv, capsys)
    if record == "metrics.jsonl":
        run_cli(["plot", str(folder), "-o", str(tmp_path / "m.png")], capsys)


@pytest.mark.parametrize("record", [f"logs/slurm-{JOB_ID}.out", f"logs/{JOB_ID}-rank0.out"])
@pytest.mark.parametrize("kind", ["fifo", "devzero"])
def test_logs_follow_ends_when_a_log_is_no_file(record: str, kind: str, slurm: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                caplog: pytest.LogCaptureFixture) -> None:
    folder = make_job(tmp_path / "jobs")
    plant(folder / record, kind)
    code, _, err = run_cli(["logs", "-f", "--interval", "0.05", str(folder)], capsys)
    assert code == 0 and Path(record).name in err + caplog.text


def test_the_reader_refuses_what_is_not_a_regular_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    (tmp_path / "d").mkdir()
    (tmp_path / "z").symlink_to("/dev/zero")
    (tmp_path / "big").write_bytes(b"x" * 2048)
    (tmp_path / "list.json").write_text("[1]")
    start = time.monotonic()
    with no_hang(5):
        assert read_text(fifo) is None and read_text(tmp_path / "d") is None and read_text(tmp_path / "z") is None
        assert read_text(tmp_path / "big", limit=1024) is None and read_text(tmp_path / "missing") is None
        assert read_json(tmp_path / "list.json", dict) is None and read_json(tmp_path / "list.json", list) == [1]
    assert time.monotonic() - start < 2
    said = caplog.text
    for what in ("a FIFO", "a folder", "a character device", "larger than", "a JSON list, not a JSON object"):
        assert what in said, (what, said)
