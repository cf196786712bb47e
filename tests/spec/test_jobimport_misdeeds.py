"""A job file that, at import, prints (``--json`` stays JSON), raises a ``BaseException`` subclass, calls
``os.fork``/``os.execv``/``os.system``/``os._exit``, closes ``sys.stdout`` or fd 1: one clear error naming what it
did, sbatch never called (and never twice). Run as real ``orch`` processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, ROOT, clean_environ

SMOKE = (ROOT / "jobs" / "smoke.py").read_text(encoding="utf-8")

TIMEOUT = 60


# -- ------------------------------------------------------------------------------------------

MISDEEDS = {
    "prints": ('print("hello from the job file")', None),
    "BaseException": ("class Boom(BaseException):\n    pass\nraise Boom('at import')", "Boom"),
    "fork": ("import os\nos.fork()", "os.fork"),
    "execv": ("import os\nos.execv('/bin/true', ['true'])", "os.execv"),
    "system": ("import os\nos.system('echo hi')", "os.system"),
    "_exit": ("import os\nos._exit(0)", "os._exit"),
    "closes stdout": ("import sys\nsys.stdout.close()", None),
    "closes __stdout__": ("import sys\nsys.__stdout__.close()", "closed sys.stdout"),
    "closes fd 1": ("import os\nos.close(1)", "standard output"),
    "sys.exit(0)": ("import sys\nsys.exit(0)", "sys.exit(0)"),
}


@pytest.fixture
def submit_env(tmp_path: Path, write_cluster: Any) -> dict[str, str]:
    stub_log = tmp_path / "stub-calls.jsonl"
    stubs = ROOT / "tests" / "stubs"
    return clean_environ(PATH=f"{stubs}{os.pathsep}{os.environ['PATH']}", ORCH_STUB_LOG=str(stub_log),
                         ORCH_STUB_PYTHON=sys.executable,
                         ORCH_CLUSTER=str(write_cluster()), ORCH_STATE_DIR=str(tmp_path / "state"))


@pytest.mark.parametrize("misdeed", list(MISDEEDS))
@pytest.mark.parametrize("dry", [True, False])
def test_a_job_file_that_misbehaves_at_import(misdeed: str, dry: bool, tmp_path: Path,
                                              submit_env: dict[str, str]) -> None:
    code, said = MISDEEDS[misdeed]
    job = tmp_path / "bad_job.py"
    job.write_text(SMOKE + "\n" + code + "\n", encoding="utf-8")
    argv = [ORCH, "submit", str(job), "--json"] + (["--dry-run"] if dry else [])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, env=submit_env, cwd=tmp_path)
    stub_log = Path(submit_env["ORCH_STUB_LOG"])
    calls = [json.loads(line) for line in stub_log.read_text().splitlines()] if stub_log.exists() else []
    sbatch = [c for c in calls if c.get("cmd") == "sbatch" and c.get("event", "call") == "call"]
    assert "Traceback" not in proc.stderr, proc.stderr
    if said is None:  # harmless once guarded: printing goes to stderr, the JSON stays JSON
        assert proc.returncode == 0, proc.stderr
        json.loads(proc.stdout)
        assert len(sbatch) == (0 if dry else 1), sbatch
        if misdeed == "prints":
            assert "hello from the job file" in proc.stderr
        return
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert said in proc.stderr and "bad_job.py" in proc.stderr, proc.stderr
    assert proc.stdout == "" and sbatch == []
