"""Hydra apps in several ranks (orchestrator/spec/hydra.py): which scripts are Hydra apps (read, never
run), and the run directory overrides each rank gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.spec.hydra import SOURCE_LIMIT, hydra_entry, is_hydra_app, quoted, run_dir_overrides
from orchestrator.spec.script import ScriptTarget


@pytest.mark.parametrize("source", [
    "import hydra\n@hydra.main(version_base=None, config_path='conf')\ndef main(cfg): ...\n",
    "import hydra as h\n@h.main(config_name='c')\ndef main(cfg): ...\n",
    "from hydra import main\n@main(version_base='1.3')\ndef train(cfg): ...\n",
    "from hydra import main as hydra_main\nclass A:\n    pass\n@hydra_main()\ndef run(cfg): ...\n",
])
def test_hydra_apps_are_recognised(source: str) -> None:
    assert is_hydra_app(source)


@pytest.mark.parametrize("source", [
    "import hydra\nfrom hydra import compose, initialize\ndef main(): cfg = compose('c')\n",  # compose API
    "import click\n@click.main()\ndef main(): ...\n",
    "from argparse import main\n@main()\ndef f(): ...\n",
    "def broken(:\n",
])
def test_other_scripts_are_not(source: str) -> None:
    assert not is_hydra_app(source)


def test_every_rank_gets_the_job_folders_run_directory(tmp_path: Path) -> None:
    job = tmp_path / "my job"
    assert run_dir_overrides(job, 0, "train", ["lr=0.1"]) == [f'hydra.run.dir="{job}/hydra"']
    assert run_dir_overrides(job, 3, "train", []) == [
        f'hydra.run.dir="{job}/hydra"', "hydra.output_subdir=null", 'hydra.job.name="train_rank3"']


@pytest.mark.parametrize("value", ["/a b/c,d=e", 'x"y', "x\\y", "tail\\", 'x\\"y', 'q"\\"\\', "/plain/path"])
def test_hydras_own_parser_reads_a_quoted_value_back(value: str) -> None:
    parser = pytest.importorskip("hydra.core.override_parser.overrides_parser").OverridesParser.create()
    assert parser.parse_override(f"hydra.run.dir={quoted(value)}").value() == value


def test_an_interpolation_in_a_path_is_escaped() -> None:
    assert quoted("/jobs/${x}") == '"/jobs/\\${x}"'


@pytest.mark.parametrize("args", [["hydra.run.dir=out/x"], ["++hydra.run.dir=/tmp/r"], ["-m", "lr=0.1,0.2"],
                                  ["--multirun"]])
def test_a_run_directory_of_the_users_own_or_a_sweep_gets_nothing(tmp_path: Path, args: list[str]) -> None:
    assert run_dir_overrides(tmp_path, 1, "train", args) == []


def test_the_entry_of_a_script_or_a_module_is_found_and_read(tmp_path: Path) -> None:
    app = "import hydra\n@hydra.main(version_base=None)\ndef main(cfg): ...\n"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(app)
    (tmp_path / "plain.py").write_text("print(1)\n")
    (tmp_path / "huge.py").write_text(app + "#" * SOURCE_LIMIT)
    script = ScriptTarget(kind="script", target=str(tmp_path / "pkg" / "train.py"), cwd=str(tmp_path))
    assert hydra_entry(script, []) == tmp_path / "pkg" / "train.py"
    module = ScriptTarget(kind="module", target="pkg.train", cwd=str(tmp_path))
    assert hydra_entry(module, [tmp_path]) == tmp_path / "pkg" / "train.py"
    assert hydra_entry(module, [tmp_path / "elsewhere"]) is None
    for name in ("plain.py", "huge.py", "missing.py"):
        assert hydra_entry(script.model_copy(update={"target": str(tmp_path / name)}), []) is None
