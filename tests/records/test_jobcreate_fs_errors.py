"""File-system errors while a job folder is created (the job root is a file, a file above it, a read-only file
system, no space left) name the job root and leave nothing half-written.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from support import ORCH, TEST_CLUSTER, assert_refused

from orchestrator.cli import main

if TYPE_CHECKING:
    from support import Stubs


# --- file-system errors -------------------------------------------------------------------------------

def _break(kind: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if kind == "job root is a file":
        root.parent.mkdir(parents=True, exist_ok=True)
        root.write_text("not a folder")
    elif kind == "a file above the job root":
        root.parent.parent.mkdir(parents=True, exist_ok=True)
        root.parent.write_text("not a folder")
    elif kind in ("read-only file system", "no space left"):
        code = errno.EROFS if kind.startswith("read") else errno.ENOSPC
        import orchestrator.records.atomic as atomic

        real_open = os.open

        def failing_open(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
            if Path(path).name.startswith(".tmp-") or (kind.startswith("read") and str(path).endswith("sbatch.sh")):
                raise OSError(code, os.strerror(code), str(path))
            return real_open(path, flags, mode, **kw)

        monkeypatch.setattr(atomic.os, "open", failing_open)

FS_CASES = ["job root is a file", "a file above the job root", "read-only file system", "no space left"]


@pytest.mark.parametrize("kind", FS_CASES)
@pytest.mark.parametrize("verb", ["submit", "run"])
def test_file_system_errors_name_the_job_root_and_leave_nothing(
        kind: str, verb: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], stubs: Stubs) -> None:
    root = tmp_path / "area" / "jobs"
    cluster = tmp_path / "cluster.yaml"
    data = {**TEST_CLUSTER, "launcher": {**TEST_CLUSTER["launcher"], "job_root": str(root)}}
    cluster.write_text(yaml.safe_dump(data), encoding="utf-8")
    _break(kind, root, monkeypatch)
    argv = (["submit", "smoke", "--cluster", str(cluster)] if verb == "submit"
            else ["run", "smoke", "--cluster", str(cluster)])
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "launcher.job_root" in err and "Traceback" not in err and "HINT:" in err, err
    assert stubs.records() == []
    if root.is_dir():
        assert list(root.iterdir()) == [], "a half-written job folder was left behind"


def test_a_real_write_error_leaves_no_half_written_folder(tmp_path: Path, stubs: Stubs) -> None:
    """The kernel refuses the write (RLIMIT_FSIZE: EFBIG, like a full disk): exit 2, no folder left."""
    import resource

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))

    cluster = tmp_path / "cluster.yaml"
    data = {**TEST_CLUSTER, "launcher": {**TEST_CLUSTER["launcher"], "job_root": str(tmp_path / "jobs")}}
    cluster.write_text(yaml.safe_dump(data), encoding="utf-8")
    proc = subprocess.run([ORCH, "submit", "smoke", "--cluster", str(cluster)], capture_output=True, text=True,
                          env=stubs.env(PYTHONPATH=os.environ.get("PYTHONPATH", "")), cwd=tmp_path,
                          preexec_fn=small_files, timeout=120)
    assert_refused(proc, "launcher.job_root")
    assert list((tmp_path / "jobs").iterdir()) == []
    assert stubs.records() == []
