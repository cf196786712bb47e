"""``orch plot`` (per-step curves, overlays of several runs and of a sweep), ``orch compare``, ``orch tb``
and the SAMPLES/S and ETA of ``orch status``, through the real CLI (``main``), on job folders laid out
as the runtime and ``orch submit --sweep`` write them."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from orchestrator.cli import main
from orchestrator.records.jobcreate import write_run_config
from orchestrator.records.training import eta_cell
from orchestrator.spec.runconfig import RunConfig

STEPS = 60  # optimizer steps per run, 2 epochs of 30


@pytest.fixture
def job_root(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    root = tmp_path / "jobs"
    root.mkdir()
    (tmp_path / "cluster.yaml").write_text(
        "name: t\npartitions:\n  - {name: debug, nodes: 'node[1-2]', gpus_per_node: 8, cpus_per_node: 4, "
        f"mem_per_node: 4096}}\nlauncher:\n  job_root: {root}\n")
    clean_env.chdir(tmp_path)
    return root


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def make_run(folder: Path, params: dict[str, Any], *, job_id: str | None, final_acc: float,
             steps: bool = True) -> Path:
    folder.mkdir(parents=True)
    write_run_config(folder, RunConfig(mode="slurm", job_name="toy", job_file="/jobs/toy.py", params=params, nodes=1,
                                       gpus_per_node=1, tasks_per_node=1, cpus_per_task=1, job_dir=str(folder),
                                       created="2026-01-02T03:04:05"))
    if job_id:
        (folder / "job_id").write_text(job_id + "\n")
    lr = float(params["lr"])
    if steps:
        lines = [{"step": s, "time": 0.0, "train/loss": 2.0 / (1 + lr * s), "train/lr": lr, "train/grad_norm": 1.0}
                 for s in range(1, STEPS + 1)]
        lines += [{"step": 30 * e, "time": 0.0, "epoch/test_loss": 1.0 / e, "epoch/test_acc": final_acc * e / 2}
                  for e in (1, 2)]
        (folder / "steps.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    epochs = [{"epoch": e, "epochs": 2, "train_loss": 1.2 / e, "test_loss": 1.0 / e, "test_acc": final_acc * e / 2,
               "train_acc": final_acc * e / 2, "metrics": ["acc"], "samples_per_s": 1000.0, "global_step": 30 * e}
              for e in (1, 2)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in epochs))
    return folder


def make_sweep(root: Path, lrs: list[float], accs: list[float]) -> Path:
    array = root / "toy-20260102-030405-abc123"
    array.mkdir()
    (array / "array.json").write_text(json.dumps({"elements": [{"lr": lr} for lr in lrs]}))
    (array / "job_id").write_text("77\n")
    for index, (lr, acc) in enumerate(zip(lrs, accs, strict=True)):
        make_run(array / str(index), {"lr": lr, "epochs": 2, "seed": 0}, job_id=f"77_{index}", final_acc=acc)
    return array


def test_plot_of_a_sweep_has_one_labelled_line_per_element(job_root: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.commands import plot

    array = make_sweep(job_root, [0.1, 0.01, 0.001], [0.9, 0.8, 0.7])
    figures: list[Any] = []
    real = plot.step_figure
    monkeypatch.setattr(plot, "step_figure", lambda runs, title: figures.append(real(runs, title)) or figures[-1])
    for ref in (str(array), "77"):  # the sweep's folder, or its array id
        code, out, err = cli(capsys, "plot", ref, "--json")
        assert code == 0, err
        data = json.loads(out)
        png = array / "metrics.png"
        assert data["plot"] == str(png) and data["x"] == "step"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
        assert data["runs"] == ["lr=0.1", "lr=0.01", "lr=0.001"]
        assert data["panels"]["train/loss"] == data["runs"]
    # the figure's own data: 3 labelled (smoothed) lines, each over steps 1..60, plus 3 faint raw ones
    [ax] = [a for a in figures[-1].axes if a.get_title() == "train/loss"]
    labelled = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert [line.get_label() for line in labelled] == ["lr=0.1", "lr=0.01", "lr=0.001"]
    for line, lr in zip(labelled, [0.1, 0.01, 0.001], strict=True):
        assert list(line.get_xdata()) == list(range(1, STEPS + 1))
        assert line.get_ydata()[-1] == pytest.approx(2.0 / (1 + lr * STEPS), rel=0.5)
    raw = [line for line in ax.get_lines() if line.get_label().startswith("_raw")]
    assert len(raw) == 3 and raw[0].get_alpha() < 0.5
    assert list(raw[2].get_ydata()) == pytest.approx([2.0 / (1 + 0.001 * s) for s in range(1, STEPS + 1)])
    [acc] = [a for a in figures[-1].axes if a.get_title() == "epoch/test_acc"]
    assert [list(line.get_ydata()) for line in acc.get_lines()] == [[0.45, 0.9], [0.4, 0.8], [0.35, 0.7]]


def test_plot_of_one_run_marks_its_epochs_and_of_two_jobs_overlays_them(job_root: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    one = make_run(job_root / "a", {"lr": 0.1, "seed": 0}, job_id="5", final_acc=0.9)
    two = make_run(job_root / "b", {"lr": 0.1, "seed": 1}, job_id="6", final_acc=0.8)
    code, out, err = cli(capsys, "plot", "5", "--json")
    assert code == 0 and json.loads(out)["plot"] == str(one / "metrics.png") and json.loads(out)["x"] == "step", err
    code, out, err = cli(capsys, "plot", str(one), "6", "-o", str(tmp_path / "both.png"), "--json")
    data = json.loads(out)
    assert code == 0 and data["runs"] == ["seed=0", "seed=1"] and (tmp_path / "both.png").stat().st_size > 20_000
    assert data["jobs"] == [str(one), str(two)]
    code, out, err = cli(capsys, "plot", "5", "--epochs", "--json")  # the per-epoch picture, as before
    assert code == 0 and json.loads(out)["epochs"] == 2


def test_plot_without_steps_overlays_epochs(job_root: Path, capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    make_run(job_root / "a", {"lr": 0.1}, job_id="5", final_acc=0.9, steps=False)
    make_run(job_root / "b", {"lr": 0.2}, job_id="6", final_acc=0.8, steps=False)
    code, out, err = cli(capsys, "plot", "5", "6", "--json")
    data = json.loads(out)
    assert code == 0 and data["x"] == "epoch" and data["plot"] == str(tmp_path / "orch-plot.png"), err
    assert "lr=0.1 test_acc" in data["panels"]["accuracy"] and "lr=0.2 train_loss" in data["panels"]["loss"]


def test_compare_a_sweep_sorted_by_a_metric(job_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_sweep(job_root, [0.1, 0.01, 0.001], [0.7, 0.9, 0.8])
    code, out, err = cli(capsys, "compare", "77", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["sort"] == "test_acc"  # the default when the runs have it; highest first
    assert [r["label"] for r in data["runs"]] == ["lr=0.01", "lr=0.001", "lr=0.1"]
    assert [r["metrics"]["test_acc"] for r in data["runs"]] == [0.9, 0.8, 0.7]
    code, out, _ = cli(capsys, "compare", "77", "--sort", "test_acc", "--reverse", "--json")
    assert [r["metrics"]["test_acc"] for r in json.loads(out)["runs"]] == [0.7, 0.8, 0.9]
    code, out, _ = cli(capsys, "compare", "77", "--sort", "test_loss")
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["JOB", "RUN", "EPOCH", "TEST_LOSS"]
    assert lines[1].split()[:3] == ["77_0", "lr=0.1", "2"]
    code, _, err = cli(capsys, "compare", "77", "--sort", "bleu")
    assert code == 2 and "no run has that metric" in err and "test_acc" in err


def test_tb_prints_the_tensorboard_command(job_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    array = make_sweep(job_root, [0.1, 0.01], [0.7, 0.9])
    code, _, err = cli(capsys, "tb", "77_0", "--print")
    assert code == 2 and "no TensorBoard events" in err
    for index in (0, 1):
        (array / str(index) / "tb").mkdir()
    code, out, _ = cli(capsys, "tb", "77_0", "--print")
    argv = shlex.split(out)
    assert code == 0 and argv[-4:] == ["--logdir", str(array / "0" / "tb"), "--port", "6006"]
    code, out, _ = cli(capsys, "tb", "77", "--print", "--port", "7007")
    argv = shlex.split(out)
    assert argv[-4:] == ["--logdir_spec", f"77_0:{array / '0' / 'tb'},77_1:{array / '1' / 'tb'}", "--port", "7007"]
    code, out, _ = cli(capsys, "tb", "--all", "--print")
    assert shlex.split(out)[-4:-2] == ["--logdir", str(job_root)]
    code, _, err = cli(capsys, "tb", "--print")
    assert code == 2 and "--all" in err


def test_eta_adds_the_epochs_still_to_come() -> None:
    record = {"epoch": 2, "epochs": 3, "step": 120, "steps": 469, "eta_s": 349.0, "samples_per_s": 1000.0}
    assert eta_cell(record) == "0:13:38"  # 349 s for this epoch + 469 s for the last one
    assert eta_cell({**record, "epoch": 3}) == "0:05:49"
    assert eta_cell({**record, "eta_s": None}) is None and eta_cell({**record, "step": "x"}) is None
