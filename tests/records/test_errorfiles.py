"""A script rank's torchelastic error file (orchestrator/records/errorfiles.py): what torch's ``@record``
writes, read back as the message and where it was raised; and, for real, a ``@record`` script whose rank 1
raises under ``orch run --nproc 2``: its file lands in the job folder, and ``orch run``, ``orch status`` and
``orch logs`` name rank 1 with the recorded message and the file and line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support import ORCH, ROOT, clean_environ

from orchestrator.records.errorfiles import ERROR_FILE_LIMIT, parse_error_file, read_error_file
from orchestrator.records.joblayout import error_file_path

SCRIPT = ROOT / "tests" / "scripts" / "record_error.py"
RAISED_AT = f"raised at {SCRIPT}:15"  # check_batch's raise
STACK = ('Traceback (most recent call last):\n  File "/src/train.py", line 40, in main\n    step()\n'
         '  File "/src/model.py", line 7, in step\n    raise ValueError("bad")\nValueError: bad\n')


def _written(message: object, stack: object = STACK) -> str:
    return json.dumps({"message": {"message": message, "extraInfo": {"py_callstack": stack, "timestamp": "1"}}})


def test_the_message_and_the_innermost_frame_are_read(tmp_path: Path) -> None:
    found = parse_error_file(_written("ValueError: bad\nsecond line"), tmp_path / "e.json")
    assert found is not None
    assert (found.message, found.file, found.line) == ("ValueError: bad", "/src/model.py", 7)
    assert found.describe() == f"ValueError: bad (raised at /src/model.py:7; torchelastic error file {tmp_path}/e.json)"


def test_a_plain_string_message_and_no_traceback(tmp_path: Path) -> None:
    found = parse_error_file(json.dumps({"message": "RuntimeError: child failed"}), tmp_path / "e.json")
    assert found is not None and (found.file, found.line) == (None, None)
    assert found.describe().startswith("RuntimeError: child failed (torchelastic error file ")


@pytest.mark.parametrize("text", ["", "not json", "[]", '{"message": 3}', _written("  "), _written(None)])
def test_what_torchelastic_does_not_write_is_no_error(tmp_path: Path, text: str) -> None:
    assert parse_error_file(text, tmp_path / "e.json") is None


def test_reading_a_rank_missing_or_oversized(tmp_path: Path) -> None:
    assert read_error_file(tmp_path, 1) is None
    path = error_file_path(tmp_path, 1)
    path.parent.mkdir()
    path.write_text(_written("ValueError: bad", "x" * ERROR_FILE_LIMIT))
    assert read_error_file(tmp_path, 1) is None
    path.write_text(_written("ValueError: bad"))
    found = read_error_file(tmp_path, 1)
    assert found is not None and found.path == tmp_path / "logs" / "rank1.error.json"


@pytest.mark.slow
def test_a_record_script_failing_in_rank_1_is_named_by_run_status_and_logs(tmp_path: Path) -> None:
    env = clean_environ(PYTHONPATH=str(ROOT), HOME=str(tmp_path / "home"))

    def orch(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([ORCH, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
                              check=False)

    run = orch("run", str(SCRIPT), "--nproc", "2", "--cpu", "--job-root", str(tmp_path / "jobs"))
    assert run.returncode == 1, run.stderr
    [job_dir] = [p for p in (tmp_path / "jobs").iterdir() if (p / "job.json").is_file()]
    error_file = job_dir / "logs" / "rank1.error.json"
    recorded = json.loads(error_file.read_text(encoding="utf-8"))["message"]
    assert recorded["message"] == "ValueError: rank 1: batch 3 has no labels"
    expected = f"ValueError: rank 1: batch 3 has no labels ({RAISED_AT}; torchelastic error file {error_file})"
    assert f"orch: error: rank 1 exited with code 1 ({expected})" in run.stderr
    status = orch("status", str(job_dir), "--json")
    [row] = json.loads(status.stdout) if status.stdout.startswith("[") else [json.loads(status.stdout)]
    assert row["failure"]["rank"] == 1 and expected in row["failure"]["message"], row["failure"]
    logs = orch("logs", str(job_dir))
    assert f"orch: look at rank 1: rank 1 exited with code 1 ({expected})" in logs.stderr, logs.stderr
