"""The service under orch plot, orch compare and orch tb (orchestrator/service/curves.py), with plain values: the
runs a sweep's id stands for, where a plot goes, its file's mode in a job folder, TensorBoard's log directories.
The verbs' own output: tests/commands/test_plot_compare_tb.py."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from orchestrator.errors import ConfigError, OrchError
from orchestrator.records.jobcreate import write_run_config
from orchestrator.service import curves
from orchestrator.service.curves import OVERLAY_FILE, PLOT_FILE, plot_path, runs, tensorboard_logdir
from orchestrator.service.jobs import Scope
from orchestrator.spec.runconfig import RunConfig


def _element(folder: Path, index: int, loss: float) -> Path:
    element = folder / str(index)
    element.mkdir(parents=True)
    write_run_config(element, RunConfig(mode="slurm", job_name="toy", job_file="/jobs/toy.py", params={"lr": index},
                                        nodes=1, gpus_per_node=1, tasks_per_node=1, cpus_per_task=1,
                                        job_dir=str(element), created="2026-01-02T03:04:05"))
    (element / "job_id").write_text(f"77_{index}\n")
    (element / "metrics.jsonl").write_text(json.dumps({"epoch": 1, "epochs": 1, "train_loss": loss}) + "\n")
    return element


@pytest.fixture
def sweep(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Scope, Path]:
    """A two-element sweep (array 77) under the job root of a named cluster file."""
    root = tmp_path / "jobs"
    folder = root / "toy-20260102-030405-abc123"
    folder.mkdir(parents=True)
    (folder / "array.json").write_text(json.dumps({"elements": [{"lr": 0}, {"lr": 1}]}))
    (folder / "job_id").write_text("77\n")
    for index, loss in ((0, 0.5), (1, 0.25)):
        _element(folder, index, loss)
    cluster = tmp_path / "c.yaml"
    cluster.write_text("name: t\npartitions:\n  - {name: debug, nodes: 'node[1-2]', gpus_per_node: 8, "
                       f"cpus_per_node: 4, mem_per_node: 4096}}\nlauncher:\n  job_root: {root}\n")
    return Scope(str(cluster)), folder


def test_a_sweeps_id_stands_for_its_elements(sweep: tuple[Scope, Path]) -> None:
    scope, folder = sweep
    found = runs(["77"], scope)
    assert [run.job.path for run in found] == [folder / "0", folder / "1"]
    assert [(row["job_id"], row["metrics"]["train_loss"]) for row in curves.final_rows(["77"], scope)] == [
        ("77_0", 0.5), ("77_1", 0.25)]


def test_where_a_plot_goes(sweep: tuple[Scope, Path], tmp_path: Path) -> None:
    scope, folder = sweep
    elements = runs(["77"], scope)
    assert plot_path("~/x.png", elements) == Path("~/x.png").expanduser()
    assert plot_path(None, elements[:1]) == folder / "0" / PLOT_FILE
    assert plot_path(None, elements) == folder / PLOT_FILE  # a sweep's elements: the sweep's folder
    other = _element(tmp_path / "elsewhere", 0, 1.0)
    mixed = [elements[0], *runs([str(other)], scope)]
    assert plot_path(None, mixed) == Path.cwd() / OVERLAY_FILE


def test_a_plot_in_a_job_folder_is_private(sweep: tuple[Scope, Path], tmp_path: Path) -> None:
    _, folder = sweep
    curves.write_plot(folder / "0" / PLOT_FILE, b"png")
    assert stat.S_IMODE((folder / "0" / PLOT_FILE).stat().st_mode) == 0o600
    with pytest.raises(OrchError, match="cannot write the plot") as info:
        curves.write_plot(tmp_path / "missing" / "x.png", b"png")
    assert info.value.hint is not None and "-o PNG" in info.value.hint


def test_tensorboards_log_directories(sweep: tuple[Scope, Path]) -> None:
    scope, folder = sweep
    with pytest.raises(ConfigError, match="no TensorBoard events there"):
        tensorboard_logdir(["77"], scope)
    for index in (0, 1):
        (folder / str(index) / "tb").mkdir()
    assert tensorboard_logdir(["77_1"], scope) == ["--logdir", str(folder / "1" / "tb")]
    spec = f"77_0:{folder / '0' / 'tb'},77_1:{folder / '1' / 'tb'}"
    assert tensorboard_logdir(["77"], scope) == ["--logdir_spec", spec]
    assert tensorboard_logdir([], scope, every=True) == ["--logdir", str(folder.parent)]
