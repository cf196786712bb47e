"""``orch logs -f`` stops when the reader of its output is gone, and only then (records/logs/outwatch.py).

The real CLI follows a local run's folder whose log is quiet (a run ends when result.json appears):
into a pipe whose reader quits (it ends within seconds, though it writes nothing), into a file and
into a terminal (it follows as before until the run ends), into a terminal that hangs up (it ends).
The same follower through SSH, whose session goes away, is tests/remote/test_remote.py's.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest
from support import ORCH, clean_environ

from orchestrator.records.jobcreate import write_run_config
from orchestrator.records.logs import outwatch
from orchestrator.spec.runconfig import RunConfig

BOUND = 10.0  # seconds a follower may take to notice its reader is gone (it is woken at once)


def _local_job(root: Path) -> Path:
    folder = root / "quiet-20260102T030405-abc123"
    (folder / "logs").mkdir(parents=True)
    write_run_config(folder, RunConfig(
        mode="local", job_name="quiet", job_file="/jobs/x.py", params={}, nodes=1, gpus_per_node=0,
        tasks_per_node=1, cpus_per_task=1, job_dir=str(folder), created="2026-01-02T03:04:05"))
    (folder / "logs" / "local-rank0.out").write_text("first\n")
    return folder


def _follow(folder: Path, stdout: int, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([ORCH, "logs", str(folder), "-f", "--interval", "0.1"], stdout=stdout,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=cwd, env=clean_environ())


def _read_line(fd: int, timeout: float = 30) -> bytes:
    got = b""
    deadline = time.monotonic() + timeout
    while not got.endswith(b"\n"):
        assert select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0], got
        chunk = os.read(fd, 1)
        assert chunk, got
        got += chunk
    return got


def _ended_within(proc: subprocess.Popen[bytes], seconds: float) -> float:
    start = time.monotonic()
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"orch logs -f still ran {seconds:.0f} s after its reader was gone")
    return time.monotonic() - start


def test_follower_into_a_pipe_ends_when_the_reader_quits(tmp_path: Path) -> None:
    folder = _local_job(tmp_path)
    read, write = os.pipe()
    proc = _follow(folder, write, tmp_path)
    os.close(write)
    try:
        assert _read_line(read) == b"first\n"
        time.sleep(1.0)  # following now, the log quiet: nothing is written that could fail
        assert proc.poll() is None
    finally:
        os.close(read)  # the reader quits (as `orch logs -f JOB | head -1` does)
    took = _ended_within(proc, BOUND)
    assert proc.returncode == 0 and took < BOUND
    assert proc.stderr is not None and b"Traceback" not in proc.stderr.read()


def test_follower_into_a_file_follows_until_the_run_ends(tmp_path: Path) -> None:
    folder = _local_job(tmp_path)
    out = tmp_path / "out.txt"
    with out.open("wb") as fh:
        proc = _follow(folder, fh.fileno(), tmp_path)
    time.sleep(2.0)
    assert proc.poll() is None, "a file has no reader to lose: following goes on"
    with (folder / "logs" / "local-rank0.out").open("a") as log:
        log.write("second\n")
    time.sleep(1.0)
    (folder / "result.json").write_text(json.dumps({"status": "completed"}))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out.read_text() == "first\nsecond\n"


def test_follower_into_a_terminal_follows_and_ends_on_hangup(tmp_path: Path) -> None:
    folder = _local_job(tmp_path)
    master, slave = pty.openpty()
    proc = _follow(folder, slave, tmp_path)
    os.close(slave)
    try:
        assert _read_line(master).rstrip(b"\r\n") == b"first"
        with (folder / "logs" / "local-rank0.out").open("a") as log:
            log.write("second\n")
        assert _read_line(master).rstrip(b"\r\n") == b"second"
        time.sleep(1.0)
        assert proc.poll() is None  # a terminal that is there: following goes on
    finally:
        os.close(master)  # the terminal hangs up (its window closed)
    _ended_within(proc, BOUND)
    # and a terminal that stays: the run's end ends it, as before
    master, slave = pty.openpty()
    proc = _follow(folder, slave, tmp_path)
    os.close(slave)
    try:
        assert _read_line(master).rstrip(b"\r\n") == b"first"
        (folder / "result.json").write_text(json.dumps({"status": "completed"}))
        _ended_within(proc, 30)
        assert proc.returncode == 0
    finally:
        os.close(master)


def test_wait_reports_a_gone_reader_at_once_and_sleeps_otherwise(tmp_path: Path) -> None:
    import io

    read, write = os.pipe()
    try:
        start = time.monotonic()
        assert outwatch.wait(write, 0.3) is False and time.monotonic() - start >= 0.25  # reader there
        os.close(read)
        start = time.monotonic()
        assert outwatch.wait(write, 30) is True and time.monotonic() - start < 5  # woken, not timed out
        assert outwatch.gone(write)
    finally:
        os.close(write)
    with (tmp_path / "f").open("wb") as fh:
        assert outwatch.wait(fh, 0.05) is False and not outwatch.gone(fh)  # a file: never "gone"
    assert outwatch.wait(io.BytesIO(), 0.01) is False and not outwatch.gone(io.BytesIO())
