"""With ``--json`` stdout is one JSON document, whatever a job file or a script prints while orch reads,
imports or runs it (``print``, ``os.write(1, ...)``, a subprocess's output, ``sys.__stdout__``): their
output goes to standard error. Every verb that takes ``--json``, as real ``orch`` processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sharedruns
from support import ORCH, ROOT, clean_environ, cluster_file

TIMEOUT = 120

NOISE = """\
import os as _os, subprocess as _sp, sys as _sys
print("noisy: print at import")
_os.write(1, b"noisy: fd 1 at import\\n")
_sp.run(["echo", "noisy: a child at import"], check=False)
_sys.__stdout__.write("noisy: __stdout__ at import\\n")
_sys.__stdout__.flush()
"""

SCRIPT = NOISE + """\
print("noisy: rank", _os.environ.get("RANK"), flush=True)
_os.write(1, b"noisy: rank fd 1\\n")
"""

SMOKE = (ROOT / "jobs" / "smoke.py").read_text(encoding="utf-8")


def _world(folder: Path, cluster: Path) -> dict[str, Any]:
    (folder / "noisy_job.py").write_text(SMOKE + "\n" + NOISE, encoding="utf-8")
    (folder / "noisy_script.py").write_text(SCRIPT, encoding="utf-8")
    stubs = ROOT / "tests" / "stubs"
    env = clean_environ(PATH=f"{stubs}{os.pathsep}{os.environ['PATH']}", ORCH_STUB_LOG=str(folder / "stubs.jsonl"),
                        ORCH_STUB_PYTHON=sys.executable, ORCH_CLUSTER=str(cluster),
                        ORCH_STATE_DIR=str(folder / "state"))
    return {"env": env, "cwd": folder}


@pytest.fixture
def world(tmp_path: Path, write_cluster: Any) -> dict[str, Any]:
    return _world(tmp_path, write_cluster())


def _orch(world: dict[str, Any], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *argv, "--json"], capture_output=True, text=True, timeout=TIMEOUT,
                          env=world["env"], cwd=world["cwd"])


def _one_document(proc: subprocess.CompletedProcess[str]) -> Any:
    assert "Traceback" not in proc.stderr, proc.stderr
    try:
        return json.loads(proc.stdout)
    except ValueError:
        pytest.fail(f"stdout is not one JSON document:\n{proc.stdout[:2000]}\n--- stderr ---\n{proc.stderr[-2000:]}")


# The runs of the noisy job file and script (2 ranks each): both tests read them, so each is made once per
# session, in a world of its own like the tests' (``sharedruns.once``); the other verbs run on a copy.
RUNS = {"job file": ["run", "noisy_job.py", "--nproc", "2", "--job-root", "jobs", "epochs=1", "samples=64",
                     "test_samples=16"],
        "script": ["run", "noisy_script.py", "--nproc", "2", "--job-root", "jobs"]}


def _shared_run(tmp_path_factory: pytest.TempPathFactory, kind: str) -> subprocess.CompletedProcess[str]:
    def make(folder: Path) -> subprocess.CompletedProcess[str]:
        return _orch(_world(folder, cluster_file(folder)), *RUNS[kind])
    return sharedruns.once(tmp_path_factory, "noisy-" + kind.replace(" ", "-") + "-run", make)


# verb -> argv (before --json); the job folder of an `orch run` is {job}
WITH_USER_CODE = {
    "submit --dry-run, job file": ["submit", "noisy_job.py", "--dry-run"],
    "submit --dry-run, script": ["submit", "noisy_script.py", "--dry-run"],
    "submit, job file": ["submit", "noisy_job.py"],
    "submit, script": ["submit", "noisy_script.py"],
    "run, job file": RUNS["job file"],
    "run, script": RUNS["script"],
    "doctor, script": ["doctor", "noisy_script.py"],
    "doctor, job file": ["doctor", "noisy_job.py"],
}


@pytest.mark.parametrize("case", list(WITH_USER_CODE))
def test_json_stdout_is_one_document_whatever_user_code_prints(case: str, world: dict[str, Any],
                                                              tmp_path_factory: pytest.TempPathFactory) -> None:
    if case.startswith("run, "):
        proc = _shared_run(tmp_path_factory, case.removeprefix("run, "))
    else:
        proc = _orch(world, *WITH_USER_CODE[case])
    assert proc.returncode == 0, proc.stderr
    _one_document(proc)
    assert "noisy:" not in proc.stdout
    if case.startswith("run") or (case.startswith("submit") and "job file" in case):  # imported or run
        assert "noisy: fd 1 at import" in proc.stderr, proc.stderr


# the other verbs with --json, on the folder of a run of the noisy script
ON_A_RUN = {
    "status": ["status", "{job}"],
    "list": ["list"],
    "compare": ["compare", "{job}"],
    "clean": ["clean", "--dry-run"],
    "cancel": ["cancel", "4242"],
    "clusters": ["clusters"],
    "hosts": ["hosts", "n[1-3]"],
    "nodes": ["nodes"],
    "env": ["env"],
    "plot": ["plot", "{job}", "-o", "{job}/curves.png"],
}


# the resume of each kind's run (user code that prints at import)
RESUMES = {"job file": ["run", "--resume", "{job}", "epochs=2"], "script": ["run", "--resume", "{job}"]}


@pytest.mark.parametrize("kind", list(RUNS))
def test_every_other_json_verb_prints_one_document(kind: str, world: dict[str, Any], tmp_path: Path,
                                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    run = _shared_run(tmp_path_factory, kind)
    assert run.returncode == 0, run.stderr
    job = str(sharedruns.copy_job(Path(_one_document(run)["job_dir"]), tmp_path / "jobs"))  # the verbs change it
    verbs = {**ON_A_RUN, "run --resume": RESUMES[kind],
             "submit --sweep": ["submit", "noisy_job.py", "--sweep", "lr=0.1,0.2"]}
    for verb, argv in verbs.items():
        proc = _orch(world, *[word.format(job=job) for word in argv])
        assert "Traceback" not in proc.stderr, (verb, proc.stderr)
        assert "noisy:" not in proc.stdout, (verb, proc.stdout)
        if proc.stdout.strip():  # a refusal (no curves to plot, not under srun) prints nothing on stdout
            _one_document(proc)
        if verb in ("run --resume", "submit --sweep"):
            assert proc.returncode == 0, (verb, proc.stderr)
