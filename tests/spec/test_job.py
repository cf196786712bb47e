"""Job specs: lookup by name or path, overrides validated against the job's own model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support import ROOT

from orchestrator.errors import ConfigError
from orchestrator.spec.job import available_jobs, job_search_path, load_job, make_params, parse_overrides

JOB_TEXT = '''
from orchestrator import JobSpec, Resources, TrainParams


class Params(TrainParams):
    width: int = 8
    dropout: float = 0.0


def build(params, ctx):
    raise AssertionError("not called in these tests")


SPEC = JobSpec(name="tiny", params=Params, build=build, resources=Resources(nodes=1, gpus=2))
'''


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "tiny.py").write_text(JOB_TEXT)
    (jobs / "broken.py").write_text("raise RuntimeError('boom')\n")
    (jobs / "nospec.py").write_text("X = 1\n")
    return tmp_path


def test_load_by_name_and_by_path(job_dir: Path) -> None:
    by_name = load_job("tiny", {}, job_dir)
    assert by_name.spec.name == "tiny"
    assert by_name.path == (job_dir / "jobs" / "tiny.py").resolve()
    by_path = load_job(str(job_dir / "jobs" / "tiny.py"), {}, Path("/"))
    assert by_path.spec.resources.gpus == 2


def test_jobs_dir_from_environment_comes_first(job_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    other = tmp_path_factory.mktemp("elsewhere")
    path = job_search_path({"ORCH_JOBS_DIR": str(job_dir / "jobs")}, other)
    assert path[0] == job_dir / "jobs"
    assert "tiny" in available_jobs(path)


def test_unknown_job_lists_the_known_ones(job_dir: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_job("tinyy", {}, job_dir)
    assert "unknown job 'tinyy'" in info.value.message
    assert info.value.hint is not None and "tiny" in info.value.hint


def test_missing_job_path(job_dir: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_job("jobs/none.py", {}, job_dir)


def test_job_file_that_fails_to_import(job_dir: Path) -> None:
    with pytest.raises(ConfigError, match=r"failed to import.*boom"):
        load_job("broken", {}, job_dir)
    with pytest.raises(ConfigError, match="defines no SPEC"):
        load_job("nospec", {}, job_dir)


def test_overrides_are_validated_against_the_jobs_model(job_dir: Path) -> None:
    spec = load_job("tiny", {}, job_dir).spec
    params = make_params(spec, parse_overrides(["width=16", "lr=0.5", "check_sync=true"]))
    assert (params.width, params.lr, params.check_sync) == (16, 0.5, True)  # type: ignore[attr-defined]
    with pytest.raises(ConfigError) as info:
        make_params(spec, parse_overrides(["widht=16"]))
    assert "unknown override 'widht'" in info.value.message
    assert info.value.hint is not None and "width (int, default 8)" in info.value.hint
    with pytest.raises(ConfigError, match="override epochs=many"):
        make_params(spec, parse_overrides(["epochs=many"]))
    with pytest.raises(ConfigError, match="override epochs=0"):
        make_params(spec, parse_overrides(["epochs=0"]))


@pytest.mark.parametrize("item", ["lr", "=3", " =3"])
def test_malformed_override(item: str) -> None:
    with pytest.raises(ConfigError, match="key=value"):
        parse_overrides([item])


def test_repeated_override() -> None:
    with pytest.raises(ConfigError, match="given twice"):
        parse_overrides(["lr=1", "lr=2"])


def test_value_may_contain_equals() -> None:
    assert parse_overrides(["note=a=b"]) == {"note": "a=b"}


def test_job_files_do_not_import_torch() -> None:
    import subprocess

    root = ROOT
    code = (
        "import sys, pathlib\n"
        "from orchestrator.spec.job import load_job, available_jobs, BUILTIN_JOBS_DIR\n"
        "names = available_jobs([BUILTIN_JOBS_DIR])\n"
        "assert {'mnist', 'smoke', 'cifar10'} <= set(names), names\n"
        "for n in names: load_job(n, {}, pathlib.Path('/'))\n"
        "bad = [m for m in ('torch', 'torchvision') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)
