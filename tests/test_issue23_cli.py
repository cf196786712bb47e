"""Issue 23, classes 8, 9 and 13: hostile command lines, job files that misbehave at import, source
the doctor cannot read.

8. ``--OPTION --`` (argparse hands the action an empty list) and 100,000-character paths for every path
   option and the JOB of status/logs/cancel/plot/doctor: exit 2 naming the option, no traceback.
9. A job file that, at import, prints (``--json`` stays JSON), raises a ``BaseException`` subclass, calls
   ``os.fork``/``os.execv``/``os.system``/``os._exit``, closes ``sys.stdout`` or fd 1: one clear error naming
   what it did, sbatch never called (and never twice). Run as real ``orch`` processes.
10. (13) The doctor skips, with a warning, a 100,000-term expression, 50,000 unary minus signs (under a
   1.5 GB address-space limit) and a FIFO instead of a script: never a traceback or a hang.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, ROOT, clean_environ

from orchestrator.cli import main

SMOKE = (ROOT / "jobs" / "smoke.py").read_text(encoding="utf-8")
TIMEOUT = 60


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], *names: str) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("orch: error:") == 1 and "Traceback" not in err, err
    for name in names:
        assert name in err, (name, err)
    return err


# -- class 8 ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("option", ["--sbatch-arg", "--env", "--sweep", "--job-name", "--container-mounts",
                                    "--constraint", "--templates", "--nodelist"])
@pytest.mark.parametrize("form", ["joined", "separate"])
def test_dash_dash_as_an_option_value(option: str, form: str, capsys: pytest.CaptureFixture[str],
                                      clean_env: Any, write_cluster: Any) -> None:
    cluster = str(write_cluster())
    argv = ["submit", "smoke", "--dry-run", "--cluster", cluster]
    argv += [f"{option}=--"] if form == "joined" else [option, "--"]
    refused(argv, capsys, option)


LONG = "p" * 100_000
PATH_OPTIONS = [
    (["submit", "smoke", "--dry-run", "--templates", LONG], "--templates"),
    (["submit", "smoke", "--dry-run", "--data-dir", LONG], "--data-dir"),
    (["submit", "smoke", "--dry-run", "--cluster", LONG], "--cluster"),
    (["submit", "--dry-run", "-m", LONG], "-m"),
    (["run", "-m", LONG], "-m"),
    (["run", "smoke", "--job-root", LONG], "--job-root"),
    (["run", "--resume", LONG], "--resume"),
    (["submit", LONG, "--dry-run"], "JOB"),
    (["status", LONG], "JOBID|DIR"),
    (["logs", LONG], "JOB"),
    (["cancel", LONG], "JOBID|DIR"),
    (["plot", LONG], "JOB"),
    (["plot", "1", "-o", LONG], "-o"),
    (["doctor", LONG], "FILE"),
    (["status", "a/" + "b" * 300], "JOBID|DIR"),
    (["doctor", "c" * 256 + ".py"], "FILE"),
]


@pytest.mark.parametrize(("argv", "name"), PATH_OPTIONS)
def test_overlong_paths_name_the_option(argv: list[str], name: str, capsys: pytest.CaptureFixture[str],
                                        clean_env: Any) -> None:
    refused(argv, capsys, name)


# -- class 9 ------------------------------------------------------------------------------------------

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


# -- class 13 -----------------------------------------------------------------------------------------

def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))


def _sources(tmp_path: Path) -> dict[str, Path]:
    terms = tmp_path / "terms.py"
    terms.write_text("x = " + " + ".join(["1"] * 100_000) + "\n")
    unary = tmp_path / "unary.py"
    unary.write_text("x = " + "-" * 50_000 + "1\n")
    calls = tmp_path / "calls.py"
    calls.write_text("x = f" + "()" * 100_000 + "\nimport os\n")
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    nots = tmp_path / "nots.py"
    nots.write_text("x = " + "not " * 100_000 + "1\n")
    return {"terms": terms, "unary": unary, "calls": calls, "nots": nots, "fifo": fifo}


@pytest.mark.parametrize("which", ["terms", "unary", "calls", "nots", "fifo"])
def test_the_doctor_skips_what_it_cannot_read(which: str, tmp_path: Path) -> None:
    path = _sources(tmp_path)[which]
    good = tmp_path / "good.py"
    good.write_text("import torch.distributed as dist\ndist.init_process_group('nccl')\n")
    start = time.monotonic()
    proc = subprocess.run([ORCH, "doctor", str(path), str(good)], capture_output=True, text=True, timeout=TIMEOUT,
                          env=clean_environ(), cwd=tmp_path, preexec_fn=_limit_memory)
    assert time.monotonic() - start < 30
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr
    assert f"{path.name}" in proc.stderr and "not checked" in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr  # the good file's findings decide


@pytest.mark.parametrize("which", ["terms", "unary", "fifo"])
def test_submitting_source_the_doctor_cannot_read(which: str, tmp_path: Path, write_cluster: Any) -> None:
    path = _sources(tmp_path)[which]
    argv = [ORCH, "submit", str(path), "--dry-run", "--cluster", str(write_cluster())]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, env=clean_environ(), cwd=tmp_path,
                          preexec_fn=_limit_memory)
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr
    if which == "fifo":
        assert proc.returncode == 2 and "FIFO" in proc.stderr, proc.stderr
    else:
        assert proc.returncode == 0 and "not checked" in proc.stderr, proc.stderr
