"""Fixtures shared by the test suite (add yours with a targeted edit; keep them generic).

* ``clean_env``: no Slurm/torchrun/orch variables in ``os.environ`` and cwd = ``tmp_path``.
* ``write_cluster``: write a cluster.yaml (a test cluster, sections merged with your changes).
* ``write_job``: write a small job file (planning only: its build() is never called).
* ``make_plan``: ``build_plan`` for a cluster.yaml and a job file with fixed time, token and paths.
* ``stubs``: stub ``sbatch``/``srun``/``scontrol`` first on PATH, recording every call (tests/stubs).
* ``fake_slurm``: stand-in Slurm clients first on PATH whose answers a test sets (``FakeSlurm.set``), in a
  clean environment.
* ``finished_run`` (per module): one finished local ``orch run smoke`` (1 epoch, checkpoints); ``job_copy``: a
  copy of it in a job root of the test's own, its job.json pointing at the copy.
* ``state_dir`` (autouse): ``$ORCH_STATE_DIR`` is a fresh folder, so no test writes the user's index of
  submitted jobs (``~/.local/state/orch/jobs.jsonl``) or reads the developer's.
* ``preempt_flags`` (autouse): a preemption-signal handler a test installed in the test process (the task's launch
  and the frameworks' integrations install one where they run) is restored when the test ends.

Hypothesis runs derandomized (profile ``gate``): the same examples on every run, so a test run passes
or fails by the code alone. ``ORCH_HYPOTHESIS=explore`` searches with fresh random examples (run it
when touching a lexer or parser; pin what it finds with ``@example``).
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sharedruns
import yaml
from hypothesis import settings
from support import (
    CANNED_JOB_ID,
    CANNED_SUBMIT,
    ORCH,
    ROOT,
    SCALE_STAND_IN,
    STUBS_DIR,
    TEST_CLUSTER,
    FakeSlurm,
    Stubs,
    clean_environ,
    is_leaky_var,
    orch,
)

if TYPE_CHECKING:
    from orchestrator.slurm.plan import SubmitPlan

__all__ = ["ORCH", "ROOT", "STUBS_DIR", "TEST_CLUSTER", "Stubs", "clean_environ", "is_leaky_var"]

settings.register_profile("gate", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("ORCH_HYPOTHESIS", "gate"))

# orch doctor's real corpus (public training scripts, a local copy never committed): read by tests, never collected.
collect_ignore = ["doctor/real"]
collect_ignore_glob = ["doctor/heldout*/*/*"]  # a held-out set's fetched code, judged before it joins real/


@pytest.fixture(autouse=True)
def state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's state folder (the index of submitted jobs) for this test only: ``$ORCH_STATE_DIR``."""
    folder = tmp_path_factory.mktemp("orch-state")
    monkeypatch.setenv("ORCH_STATE_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def preempt_flags() -> Iterator[None]:
    """No preemption flag outlives the test that installed it: the next test in this worker starts without one."""
    from orchestrator.task.preempt import installed

    before = installed()
    yield
    while (flag := installed()) is not None and flag is not before:
        flag.restore()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No Slurm/torchrun/orch variables, and a working directory without a cluster.yaml."""
    for name in list(os.environ):
        if is_leaky_var(name):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def _merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@pytest.fixture
def write_cluster(tmp_path: Path) -> Callable[..., Path]:
    """``write_cluster(launcher={"gpu_flag": "gres"}, ...) -> Path`` of a cluster.yaml in tmp_path.

    Sections are merged into TEST_CLUSTER (dicts recursively; lists replaced). ``launcher.job_root``
    defaults to ``tmp_path/"jobs"``. ``text="..."`` writes that text as is; ``name=`` the file name.
    """

    def write(*, text: str | None = None, name: str = "cluster.yaml", **sections: Any) -> Path:
        path = tmp_path / name
        if text is None:
            data = _merge(TEST_CLUSTER, {"launcher": {"job_root": str(tmp_path / "jobs")}})
            data = _merge(data, sections)
            text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write


JOB_TEMPLATE = """\
from pydantic import Field

from orchestrator import JobSpec, Resources, TrainParams


class Params(TrainParams):
    width: int = Field(default=8, ge=1)


def build(params, ctx):
    raise RuntimeError("this test job is for planning only")


SPEC = JobSpec(name={name!r}, params=Params, build=build,
               resources=Resources(nodes={nodes}, gpus={gpus}, time={time!r}, partition={partition!r},
                                   cpus_per_task={cpus_per_task!r}))
"""


@pytest.fixture
def write_job(tmp_path: Path) -> Callable[..., Path]:
    """``write_job(name="tiny", nodes=1, gpus=8, time=None, ...) -> Path`` of tmp_path/jobs_src/NAME.py."""

    def write(name: str = "tiny", *, nodes: int = 1, gpus: int = 8, time: str | None = None,
              partition: str | None = None, cpus_per_task: int | None = None) -> Path:
        folder = tmp_path / "jobs_src"
        folder.mkdir(exist_ok=True)
        path = folder / f"{name}.py"
        path.write_text(JOB_TEMPLATE.format(name=name, nodes=nodes, gpus=gpus, time=time, partition=partition,
                                            cpus_per_task=cpus_per_task), encoding="utf-8")
        return path

    return write


PLAN_NOW = datetime(2024, 1, 2, 3, 4, 5)
PLAN_TOKEN = "abcdef"
PLAN_PYTHON = "/opt/orch/.venv/bin/python"
PLAN_JOB_ROOT = Path("/home/user/orch-jobs")


@pytest.fixture
def make_plan(write_cluster: Callable[..., Path],
              write_job: Callable[..., Path]) -> Callable[..., SubmitPlan]:
    """``make_plan(cluster=None, job=None, python=..., job_root=..., **request) -> SubmitPlan``.

    ``cluster``/``job`` are paths (default: ``write_cluster()``/``write_job()``); ``request`` holds the
    SubmitRequest fields (nodes, gpus, job_name, overrides, ...). Time, token and paths are fixed, so
    scripts are reproducible.
    """
    from orchestrator.records.cache import load_cluster
    from orchestrator.slurm.plan import build_plan, make_request
    from orchestrator.spec.job import load_job

    def make(cluster: Path | None = None, job: Path | None = None, *, python: str = PLAN_PYTHON,
             job_root: Path = PLAN_JOB_ROOT, **request: Any) -> SubmitPlan:
        job_path = job or write_job()
        loaded = load_job(str(job_path), {}, job_path.parent)
        req = make_request({"job": str(job_path), **request})
        return build_plan(req, load_cluster(cluster or write_cluster()), loaded, python=python, now=PLAN_NOW,
                          token=PLAN_TOKEN, job_root=job_root)

    return make


@pytest.fixture
def stubs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Stubs:
    """Stub sbatch/srun/scontrol first on PATH (in os.environ too); ``stubs.records("sbatch")``."""
    found = Stubs(log=tmp_path / "stub-calls.jsonl")
    monkeypatch.setenv("PATH", f"{STUBS_DIR}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("ORCH_STUB_LOG", str(found.log))
    monkeypatch.setenv("ORCH_STUB_PYTHON", sys.executable)
    return found


@pytest.fixture
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished local smoke run (1 epoch, checkpoints), made once per session (``sharedruns.once``); tests that
    change it take ``job_copy``."""
    def make(base: Path) -> Path:
        proc = orch("run", "smoke", "--nproc", "1", "--job-root", str(base / "jobs"), "samples=64",
                    "test_samples=16", "epochs=1", cwd=base)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        (folder,) = (base / "jobs").iterdir()
        assert (folder / "checkpoints" / "latest.pt").is_file()
        return folder
    return sharedruns.once(tmp_path_factory, "finished-smoke-run", make)


@pytest.fixture
def job_copy(finished_run: Path, tmp_path: Path) -> Path:
    return sharedruns.copy_job(finished_run, tmp_path / "jobs")


@pytest.fixture
def slurm_answers(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Stand-in squeue/sacct/scontrol/scancel printing ``<dir>/<name>.out``; returns that folder."""
    answers = tmp_path / "answers"
    answers.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("squeue", "sacct", "scontrol", "scancel"):
        exe = bin_dir / name
        exe.write_text(f"#!/bin/sh\ncat {answers / name}.out 2>/dev/null\nexit 0\n")
        exe.chmod(0o755)
    clean_env.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (answers / "sacct.out").write_text(
        f"{CANNED_JOB_ID}|COMPLETED|0:0|node1|00:00:10|10|billing=1,cpu=1,node=1|{CANNED_SUBMIT}|smoke\n")
    return answers


@pytest.fixture
def scale_slurm(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Stand-in squeue/sacct/scancel/scontrol on PATH; returns the file their calls are logged in."""
    bin_dir = tmp_path / "scale-bin"
    bin_dir.mkdir()
    for name in ("squeue", "sacct", "scancel", "scontrol"):
        exe = bin_dir / name
        exe.write_text(f"#!{sys.executable}\n{SCALE_STAND_IN}")
        exe.chmod(0o755)
    log = tmp_path / "scale-calls.jsonl"
    clean_env.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    clean_env.setenv("SCALE_SLURM_LOG", str(log))
    clean_env.setenv("ORCH_STATE_DIR", str(tmp_path / "state"))
    return log


@pytest.fixture
def fake_slurm(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> FakeSlurm:
    """Stand-in Slurm clients (tests/support/standins.py's FakeSlurm) first on PATH, answering what the test sets."""
    fake = FakeSlurm(tmp_path / "fake-slurm")
    clean_env.setenv("PATH", f"{fake.bin}{os.pathsep}{os.environ['PATH']}")
    clean_env.setenv("FAKE_SLURM_SPEC", str(fake.spec))
    clean_env.setenv("FAKE_SLURM_LOG", str(fake.log))
    return fake
