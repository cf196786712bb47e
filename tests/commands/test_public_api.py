"""One public import path per name users write (``from orchestrator import NAME``), the documented
alias for old job files (``from orchestrator.job import ...``), and ``orchestrator.run``."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support import ORCH, ROOT, clean_environ

import orchestrator
from orchestrator.errors import OrchError

JOB_NAMES = ("JobSpec", "Resources", "TrainParams")
OLD_STYLE_JOB = """\
from orchestrator.job import JobSpec, Resources, TrainParams


class Params(TrainParams):
    hidden: int = 8


def build(params, ctx):
    raise RuntimeError("not run in these tests")


SPEC = JobSpec(name="old_style", params=Params, build=build, resources=Resources(nodes=1, gpus=2))
"""


@pytest.mark.parametrize("name", sorted(orchestrator.PUBLIC))
def test_every_public_name_is_its_owner_object(name: str) -> None:
    owner = importlib.import_module(orchestrator.PUBLIC[name])
    assert getattr(orchestrator, name) is getattr(owner, name)
    assert name in orchestrator.__all__ and name in dir(orchestrator)


def test_the_documented_names_are_public() -> None:
    assert set(orchestrator.PUBLIC) == {"JobSpec", "Resources", "TrainParams", "TrainTask", "BuildContext",
                                        "TensorData", "submit", "run", "sweep", "JobHandle"}


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Trainer'"):
        orchestrator.Trainer  # noqa: B018


def test_importing_the_package_and_job_names_imports_no_torch() -> None:
    code = ("import sys\nimport orchestrator\nassert 'pydantic' not in sys.modules\n"
            "from orchestrator import JobSpec, Resources, TrainParams\n"
            "print(sorted(m for m in ('torch', 'submitit', 'orchestrator.api') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=clean_environ()).stdout
    assert out.strip() == "[]"


def test_the_old_job_path_is_the_same_objects() -> None:
    from orchestrator import job as alias

    for name in JOB_NAMES:
        assert getattr(alias, name) is getattr(orchestrator, name)
    assert sorted(alias.__all__) == sorted(JOB_NAMES)


def test_the_alias_module_is_the_only_one_of_its_kind() -> None:
    """No other module in the package only re-exports names (a shim for an old path); the root names
    them by a table, and the doctor package (and its ``fix`` package) and the launch-styles package present
    their own modules' API in their ``__init__``."""
    shims = []
    for path in sorted((ROOT / "orchestrator").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        imports = [n for n in body
                   if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("orchestrator")]
        rest = [n for n in body if not isinstance(n, ast.ImportFrom) and not (
            isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets))]
        if imports and not rest:
            shims.append(path.relative_to(ROOT).as_posix())
    assert shims == ["orchestrator/doctor/__init__.py", "orchestrator/doctor/fix/__init__.py", "orchestrator/job.py",
                     "orchestrator/launchstyles/__init__.py"]


def test_an_old_style_job_file_dry_runs(tmp_path: Path, write_cluster: Callable[..., Path]) -> None:
    job = tmp_path / "old_style.py"
    job.write_text(OLD_STYLE_JOB, encoding="utf-8")
    cluster = write_cluster()
    proc = subprocess.run([ORCH, "submit", str(job), "--cluster", str(cluster), "--dry-run", "hidden=16"],
                          capture_output=True, text=True, env=clean_environ(), cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "#SBATCH --job-name=old_style" in proc.stdout


def test_the_builtin_jobs_use_the_public_path() -> None:
    for path in sorted((ROOT / "jobs").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "orchestrator.job import" not in text and "orchestrator.runtime.task import" not in text, path


@pytest.mark.slow
def test_run_runs_the_job_here_and_returns_the_finished_handle(clean_env: pytest.MonkeyPatch,
                                                               write_cluster: Callable[..., Path],
                                                               tmp_path: Path) -> None:
    write_cluster()
    handle = orchestrator.run("smoke", nodes=1, gpus=2, epochs=1, samples=128, test_samples=32, timeout=180)
    assert isinstance(handle, orchestrator.JobHandle) and handle.executor == "local"
    assert handle.state == "COMPLETED" and handle.result()["world_size"] == 2


@pytest.mark.slow
def test_run_raises_when_the_job_fails(clean_env: pytest.MonkeyPatch, write_cluster: Callable[..., Path],
                                       tmp_path: Path) -> None:
    write_cluster()
    job = tmp_path / "old_style.py"
    job.write_text(OLD_STYLE_JOB, encoding="utf-8")
    with pytest.raises(OrchError, match=r"without a result\.json"):
        orchestrator.run(str(job), nodes=1, gpus=1, timeout=120)
