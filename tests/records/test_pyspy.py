"""records/pyspy.py: py-spy's dump of a rank read into the place table, on dumps recorded from real processes
(tests/golden/pyspy/): ``unanswered-native.json`` is ``py-spy 0.4.3 dump --json --native`` of rank 1 of
tests/scripts/hang_unanswered.py under ``orch run --nproc 2`` (two threads: orch's output watcher first, then the
main thread, with native frames between the Python ones); ``block-plain.json`` is ``py-spy dump --json`` (no
``--native``) of a lone process blocked in ``pthread_mutex_lock``. Then where py-spy is found, and what a damaged
file or no py-spy leave."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from support import ROOT, TESTS

from orchestrator.records import pyspy, stacks
from orchestrator.records.restarts import places
from orchestrator.spec.runconfig import LOG_DIR

GOLDEN = TESTS / "golden" / "pyspy"
RECORDED_ROOT = "/work/main"  # the checkout the native dump was recorded in


def _job(tmp_path: Path, rank: int, text: str) -> Path:
    (tmp_path / LOG_DIR).mkdir(exist_ok=True)
    pyspy.dump_path(tmp_path, rank).write_text(text, encoding="utf-8")
    return tmp_path


def test_a_native_dump_reads_as_the_main_threads_python_frames_and_is_placed(tmp_path: Path) -> None:
    text = (GOLDEN / "unanswered-native.json").read_text(encoding="utf-8").replace(RECORDED_ROOT, str(ROOT))
    job = _job(tmp_path, 1, text)
    frames = pyspy.main_frames(json.loads(text))
    script = str(ROOT / "tests" / "scripts" / "hang_unanswered.py")
    assert frames[-2:] == [(script, 26, "<module>"), (script, 17, "block_unanswered")]  # outermost first
    assert all(file.endswith(".py") or file.startswith("<") for file, _, _ in frames)  # no shared library
    stack = pyspy.read_dump(job, 1)
    assert stack is not None and stack.startswith(pyspy.HEADER)
    place = places.classify(1, stack, None)
    assert (place.state, Path(place.file or "").name, place.line, place.function, place.call) == (
        "user", "hang_unanswered.py", 17, "block_unanswered", "libc.pthread_mutex_lock")


def test_a_plain_dump_of_one_thread_is_read_too(tmp_path: Path) -> None:
    job = _job(tmp_path, 0, (GOLDEN / "block-plain.json").read_text(encoding="utf-8"))
    place = places.classify(0, pyspy.read_dump(job, 0), None)
    assert (place.state, place.file, place.line, place.function) == (
        "user", "/tmp/h/pyspy/block.py", 11, "block_in_native_code")


def test_the_dump_is_the_last_source_a_stack_file_and_a_log_dump_come_first(tmp_path: Path) -> None:
    text = (GOLDEN / "unanswered-native.json").read_text(encoding="utf-8").replace(RECORDED_ROOT, str(ROOT))
    job = _job(tmp_path, 1, text)
    log = tmp_path / "rank1.out"
    log.write_text("rank 1 hung at 1.0\n", encoding="utf-8")  # no faulthandler dump: it did not answer
    assert stacks.read_stacks(job, [1], {1: log})[1] == pyspy.read_dump(job, 1)
    stacks.stack_path(job, 1).write_text("its own stack\n", encoding="utf-8")
    assert stacks.read_stacks(job, [1], {1: log})[1] == "its own stack\n"


def test_a_new_attempt_removes_the_last_attempts_dump(tmp_path: Path) -> None:
    job = _job(tmp_path, 1, "[]")
    stack = stacks.StackFile()
    stack.start(job, 1)
    assert not pyspy.dump_path(job, 1).exists()


@pytest.mark.parametrize("text", ["", "not json", "{}", "[1, 2]", '[{"frames": "x"}]', '[{"frames": [{"line": 3}]}]',
                                  '[{"frames": [{"filename": "a.py", "line": "3", "name": "f"}]}]',
                                  "[" * 100_000])
def test_a_damaged_dump_reads_as_no_stack(tmp_path: Path, text: str) -> None:
    assert pyspy.read_dump(_job(tmp_path, 0, text), 0) is None


def test_py_spy_is_found_on_path_else_beside_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir, venv = tmp_path / "bin", tmp_path / "venv"
    for folder in (bin_dir, venv):
        folder.mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(venv / "python"))
    assert pyspy.find() is None
    assert pyspy.capture({0: os.getpid()}, tmp_path) == []  # nothing to run: nothing kept, no error
    (venv / "py-spy").write_text("", encoding="utf-8")
    assert pyspy.find() == str(venv / "py-spy")
    on_path = bin_dir / "py-spy"
    on_path.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    on_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert pyspy.find() == str(on_path)


def test_a_refusing_py_spy_keeps_nothing(tmp_path: Path) -> None:
    """A py-spy that exits non-zero (no permission to read the process: ptrace refused) with and without
    ``--native``: no file, no error."""
    fake = tmp_path / "py-spy"
    fake.write_text("#!/bin/sh\necho 'Permission denied (os error 1)' >&2\nexit 1\n", encoding="utf-8")
    fake.chmod(0o755)
    (tmp_path / LOG_DIR).mkdir()
    assert pyspy.capture({0: os.getpid()}, tmp_path, str(fake)) == []
    assert not pyspy.dump_path(tmp_path, 0).exists()
