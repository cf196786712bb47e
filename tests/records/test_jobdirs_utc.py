"""Time in UTC whatever TZ says: with a TZ of any offset (huge ones included), submit and list work, folder names
and records are UTC, and newest-first holds across time zones.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import ORCH

if TYPE_CHECKING:
    from support import Stubs


def orch(stubs: Stubs, cwd: Path, *args: str, umask: int | None = None,
         **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *args], capture_output=True, text=True, cwd=cwd, timeout=120, check=False,
                          env=stubs.env(**env), preexec_fn=None if umask is None else (lambda: os.umask(umask)))


# --- time in UTC, whatever TZ says -----------------------------------------------------------

@pytest.mark.parametrize("tz", ["UTC", "Pacific/Kiritimati", "XXX-24:59:59", "XXX+24:59:59", "EST5EDT",
                                "<+99>-99", "Nowhere/Invalid"])
def test_folder_names_and_records_are_utc(tz: str, stubs: Stubs, write_cluster: Callable[..., Path],
                                          tmp_path: Path) -> None:
    cluster = write_cluster()
    before = datetime.now(timezone.utc).replace(microsecond=0)
    proc = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(cluster), "--json", TZ=tz)
    assert proc.returncode == 0, proc.stderr
    job_dir = Path(json.loads(proc.stdout)["job_dir"])
    stamp = re.search(r"-([0-9]{8}-[0-9]{6})-[0-9a-f]+$", job_dir.name)
    assert stamp is not None
    named = datetime.strptime(stamp.group(1), "%Y%m%d-%H%M%S").replace(tzinfo=timezone.utc)
    assert abs((named - before).total_seconds()) < 60, (tz, job_dir.name)
    created = json.loads((job_dir / "job.json").read_text())["created"]
    submitted = json.loads((job_dir / "submitted.json").read_text())["submitted"]
    assert created.endswith("+00:00") and submitted.endswith("+00:00")
    listed = orch(stubs, tmp_path, "list", "--cluster", str(cluster), "--json", TZ=tz)
    assert "Traceback" not in listed.stderr, listed.stderr


def test_newest_first_across_time_zones(stubs: Stubs, write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    """Two submits a second apart under TZs 14 hours apart: the later one is listed first."""
    cluster = write_cluster()
    first = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(cluster), "--json", TZ="Pacific/Kiritimati")
    import time

    time.sleep(1.1)
    second = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(cluster), "--json", TZ="Pacific/Honolulu")
    assert first.returncode == second.returncode == 0
    dirs = [json.loads(p.stdout)["job_dir"] for p in (first, second)]
    listed = orch(stubs, tmp_path, "list", "--cluster", str(cluster), "--json", TZ="UTC")
    assert listed.returncode == 0, listed.stderr
    order = [row["job_dir"] for row in json.loads(listed.stdout)]
    assert order.index(dirs[1]) < order.index(dirs[0])
