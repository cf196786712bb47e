"""orch run's ranks forked from a server (``LocalRunner(fork=True)``): a server that never gets ready does not cost
the run (the ranks start on their own) and does not outlive it; a SIGTERM while it imports starts no rank. The
forked ranks themselves run through every ``orch run`` of a job file (tests/local, tests/restarts, tests/runtime)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from orchestrator.local.runner import LocalRunner


def _python(tmp_path: Path, server: str) -> Path:
    """A stand-in python: the fork server runs ``server`` (shell), each started rank records its pid and exits 0,
    anything else (the watchdog) is the real python."""
    script = tmp_path / "fake-python"
    script.write_text("#!/bin/sh\n"
                      f"case \"$*\" in *orchestrator.runtime.forkserver*) echo $$ >> {tmp_path / 'server'}; {server};; "
                      f"*orchestrator.runtime.launch*) echo $$ >> {tmp_path / 'started'}; exit 0;; "
                      f"*) exec {sys.executable} \"$@\";; esac\n")
    script.chmod(0o755)
    return script


def test_a_server_that_exits_before_it_is_ready_leaves_the_ranks_to_start_on_their_own(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    runner = LocalRunner(job_dir=job_dir, nproc=2, python=str(_python(tmp_path, "echo no torch here >&2; exit 3")),
                         grace=1.0, fork=True)
    with caplog.at_level(logging.WARNING, logger="orchestrator.local.runner"):
        result = runner.run()
    assert result.exit_code == 0, result
    assert len((tmp_path / "started").read_text().split()) == 2  # each rank its own interpreter
    assert "exited before it was ready (code 3" in caplog.text
    assert "no torch here" in (job_dir / "logs" / "local-rank0.out").read_text()  # what it said is kept


def test_a_sigterm_while_the_server_imports_starts_no_rank_and_ends_the_server(tmp_path: Path) -> None:
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    runner = LocalRunner(job_dir=job_dir, nproc=4, python=str(_python(tmp_path, "exec sleep 60")), grace=1.0,
                         fork=True)
    threading.Timer(1.0, os.kill, args=(os.getpid(), signal.SIGTERM)).start()
    start = time.monotonic()
    result = runner.run()
    assert time.monotonic() - start < 20
    assert result.status == "interrupted" and result.exit_code == 128 + signal.SIGTERM
    assert not (tmp_path / "started").exists()
    (server,) = (tmp_path / "server").read_text().split()
    assert not Path(f"/proc/{server}").exists() or "zombie" in Path(f"/proc/{server}/status").read_text()
