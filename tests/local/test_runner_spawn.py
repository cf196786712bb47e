"""Spawning the local ranks stops at SIGTERM; a spawn refused by the process limit (``ulimit -u``, as a second
user) stops the ranks already started and is one clear error.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support import clean_environ

from orchestrator.local.runner import LocalRunner

# -- spawning stops --------------------------------------------------------------------------------

def _sleeper(tmp_path: Path) -> Path:
    """A stand-in python for the ranks: records its pid, sleeps until signalled."""
    script = tmp_path / "fake-python"
    script.write_text(f"#!/bin/sh\ncase \"$*\" in *orchestrator.runtime.launch*) ;; "
                      f"*) exec {sys.executable} \"$@\";; esac\n"
                      f"echo $$ >> {tmp_path / 'started'}\nexec sleep 60\n")  # the watchdog: the real python
    script.chmod(0o755)
    return script


def test_spawning_stops_at_sigterm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    real_popen = subprocess.Popen
    calls: list[int] = []

    def popen(argv: Any, *args: Any, **kwargs: Any) -> Any:
        if "orchestrator.runtime.launch" in argv:
            calls.append(1)
            if len(calls) == 3:  # SIGTERM arrives while orch run is starting the third of 8 ranks
                os.kill(os.getpid(), signal.SIGTERM)
        return real_popen(argv, *args, **kwargs)

    monkeypatch.setattr("orchestrator.local.runner.subprocess.Popen", popen)
    runner = LocalRunner(job_dir=job_dir, nproc=8, python=str(_sleeper(tmp_path)), grace=1.0)
    start = time.monotonic()
    result = runner.run()
    assert time.monotonic() - start < 30
    assert result.status == "interrupted" and result.exit_code == 128 + signal.SIGTERM
    assert len(calls) == 3, calls  # not one rank more
    for pid in (tmp_path / "started").read_text().split():
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()

PIDS_CGROUP = Path("/sys/fs/cgroup/pids")  # cgroup v1; the v2 mount has pids.max in every group too

CGROUP_V2 = Path("/sys/fs/cgroup/cgroup.controllers")


def _pids_group(name: str) -> Path | None:
    """A fresh pids cgroup (v1 or v2), or None where this test may not make one."""
    base = PIDS_CGROUP if PIDS_CGROUP.is_dir() else Path("/sys/fs/cgroup") if CGROUP_V2.exists() else None
    if base is None:
        return None
    group = base / name
    try:
        group.mkdir()
        (group / "pids.max").write_text("8\n")
    except OSError:
        return None
    return group


@pytest.mark.parametrize("limit", [4, 6])
def test_a_spawn_refused_by_the_process_limit_is_one_clear_error(limit: int, tmp_path: Path) -> None:
    """Under a pids cgroup (the kernel refuses fork with EAGAIN, as under ``ulimit -u``): orch run stops
    the ranks it started, starts no more, and says why (exit 2, no traceback)."""
    group = _pids_group(f"orch-h23-{os.getpid()}-{limit}")
    if group is None:
        pytest.skip("no pids cgroup can be made here")
    fake = tmp_path / "fake-python"
    fake.write_text(f"#!/bin/sh\ncase \"$*\" in *orchestrator.runtime.launch*) exec sleep 60;; esac\n"
                    f"exec {sys.executable} \"$@\"\n")
    fake.chmod(0o755)
    code = ("import sys; from pathlib import Path; from orchestrator.local.runner import LocalRunner\n"
            "from orchestrator.errors import OrchError\n"
            f"r = LocalRunner(job_dir=Path({str(tmp_path / 'job')!r}), nproc=8, python={str(fake)!r}, grace=1.0)\n"
            "try:\n    r.run()\nexcept OrchError as e:\n"
            "    print(e.render(), file=sys.stderr); sys.exit(e.exit_code)\n")
    procs = group / ("cgroup.procs" if (group / "cgroup.procs").exists() else "tasks")
    try:
        (group / "pids.max").write_text(f"{limit}\n")
        proc = subprocess.run(["sh", "-c", f'echo $$ > {procs} && exec "$0" -c "$1"', sys.executable, code],
                              capture_output=True, text=True, timeout=60, env=clean_environ())
        assert proc.returncode == 2, proc.stderr
        assert "could not start rank" in proc.stderr and "ulimit -u" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        assert not procs.read_text().split()  # every rank it started was stopped
    finally:
        for pid in procs.read_text().split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.2)
        with contextlib.suppress(OSError):
            group.rmdir()
