"""What earlier runs measured (records/history.py), read from a real finished local run (the conftest's
``finished_run``, copied by ``job_copy``): its own metrics.jsonl and result.json, as orch wrote them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from orchestrator.records.history import figures, job_budget, read_history
from orchestrator.records.jobcreate import write_run_config
from orchestrator.records.training import read_metrics, read_result
from orchestrator.spec.runconfig import RunConfig, read_run_config


def planned_like(job: Path, **params: object) -> RunConfig:
    """A new run of the same job (another folder), with ``params`` changed."""
    cfg = read_run_config(job)
    return cfg.model_copy(update={"job_dir": str(job.parent / "smoke-20991231-235959-abcdef"),
                                  "params": {**cfg.params, **params}})


def test_a_finished_run_gives_every_figure(job_copy: Path) -> None:
    measured, why = read_history(job_copy.parent, planned_like(job_copy))
    assert measured is not None and why == ""
    records, result = read_metrics(job_copy), read_result(job_copy)
    assert result is not None
    train = sum(r["train_samples"] / r["samples_per_s"] for r in records)
    assert measured.runs == 1 and measured.steps_per_epoch == records[-1]["steps"]
    assert measured.step_s == pytest.approx(train / sum(r["steps"] for r in records))
    assert measured.startup_s == result["goodput"]["startup_s"] > 0
    # the saves are not counted in result.json: one per epoch at least, so the totals / epochs at most each
    stall, write = result["checkpoint_stall_s"], result["checkpoint_write_s"]
    assert measured.save_s == pytest.approx(stall / result["epochs"])
    durable = stall if write <= stall else stall + write  # a synchronous save's stall holds its write
    assert measured.durable_s == pytest.approx(durable / result["epochs"])
    assert measured.save_bound


@pytest.mark.parametrize("change", [{"batch_size": 7}, {"grad_accum": 2}, {"max_steps_per_epoch": 3}])
def test_other_batch_settings_are_no_history(job_copy: Path, change: dict[str, int]) -> None:
    measured, why = read_history(job_copy.parent, planned_like(job_copy, **change))
    assert measured is None and why.startswith("no history (no earlier run of job smoke with 1 rank(s)")


def test_another_world_size_or_job_is_no_history(job_copy: Path) -> None:
    wider = planned_like(job_copy).model_copy(update={"tasks_per_node": 2})
    assert read_history(job_copy.parent, wider)[0] is None
    other = planned_like(job_copy).model_copy(update={"job_name": "other"})
    assert read_history(job_copy.parent, other)[0] is None
    budget = job_budget(wider, job_copy.parent)
    assert budget.measured is None and budget.line().startswith("no history") and budget.warnings == ()


def test_the_slowest_of_several_runs_counts(job_copy: Path) -> None:
    """A second run whose job.json (orch's writer) says it is 3 s slower to start: its start-up is kept."""
    second = job_copy.parent / "smoke-20000101-000000-000001"
    shutil.copytree(job_copy, second)
    write_run_config(second, read_run_config(job_copy).model_copy(update={"job_dir": str(second)}))
    result = json.loads((second / "result.json").read_text())
    result["goodput"]["startup_s"] += 3.0
    (second / "result.json").write_text(json.dumps(result))
    measured, _ = read_history(job_copy.parent, planned_like(job_copy))
    assert measured is not None and measured.runs == 2
    assert measured.startup_s == pytest.approx(figures(job_copy).startup_s + 3.0)  # type: ignore[operator]


def test_asynchronous_saves_split_the_stall_from_the_write(job_copy: Path) -> None:
    """A ledger that splits checkpoint_s (the stall on the training thread, the background write): the stall is
    the cost per save, stall + write the time until a save is on disk; counted saves are exact."""
    result = json.loads((job_copy / "result.json").read_text())
    result.update(checkpoint_stall_s=0.2, checkpoint_write_s=1.8, checkpoints=2)
    (job_copy / "result.json").write_text(json.dumps(result))
    found = figures(job_copy)
    assert (found.save_s, found.durable_s, found.save_bound) == (0.1, 1.0, False)


def test_a_synchronous_saves_stall_holds_its_write(job_copy: Path) -> None:
    """launcher.checkpoint_write: sync: the write is inside the stall, so it is not counted twice."""
    result = json.loads((job_copy / "result.json").read_text())
    result.update(checkpoint_stall_s=2.0, checkpoint_write_s=1.9, checkpoints=2)
    (job_copy / "result.json").write_text(json.dumps(result))
    found = figures(job_copy)
    assert (found.save_s, found.durable_s) == (1.0, 1.0)


def test_a_run_of_an_older_orch_gives_its_checkpoint_s(job_copy: Path) -> None:
    """A result.json written before the split (one ``checkpoint_s``, on the training thread) still measures."""
    result = json.loads((job_copy / "result.json").read_text())
    for key in ("checkpoint_stall_s", "checkpoint_write_s"):
        result.pop(key)
    result["checkpoint_s"] = 3.0
    (job_copy / "result.json").write_text(json.dumps(result))
    found = figures(job_copy)
    epochs = result["epochs"]
    assert (found.save_s, found.durable_s, found.save_bound) == (3.0 / epochs, 3.0 / epochs, True)


def test_a_script_has_no_history(job_copy: Path) -> None:
    from orchestrator.spec.script import ScriptTarget

    script = ScriptTarget(kind="script", target=str(job_copy / "train.py"), cwd=str(job_copy))
    measured, why = read_history(job_copy.parent, planned_like(job_copy).model_copy(update={"script": script}))
    assert measured is None and "a script" in why


def test_a_sweeps_elements_are_runs_of_the_job(job_copy: Path) -> None:
    """An element of an earlier sweep counts (its folder is <sweep>/<index>); a damaged job.json does not."""
    root = job_copy.parent
    sweep = root / "smoke-20000101-000000-abcdef"
    sweep.mkdir()
    (sweep / "array.json").write_text("{}\n")
    element = sweep / "0"
    shutil.copytree(job_copy, element)
    write_run_config(element, read_run_config(job_copy).model_copy(update={"job_dir": str(element)}))
    shutil.rmtree(job_copy)
    planned = planned_like(element)
    measured, _ = read_history(root, planned)
    assert measured is not None and measured.runs == 1
    (element / "job.json").write_text("{damaged")
    assert read_history(root, planned)[0] is None


@pytest.mark.parametrize("value", [1e308, -5.0, 10 ** 400])
def test_absurd_records_are_not_measurements(job_copy: Path, value: float) -> None:
    """A record claiming an absurd time (beyond a century, negative, too large for a float) measured nothing."""
    result = json.loads((job_copy / "result.json").read_text())
    result["goodput"]["startup_s"] = value
    result["checkpoint_stall_s"] = value
    (job_copy / "result.json").write_text(json.dumps(result))
    (job_copy / "metrics.jsonl").write_text(json.dumps({"train_samples": 1e308, "samples_per_s": 1e-300,
                                                        "seconds": 1.0, "steps": 4}) + "\n")
    found = figures(job_copy)
    assert (found.save_s, found.step_s) == (None, None)
    assert found.startup_s is None or found.startup_s == pytest.approx(  # the phases, when goodput's is absurd
        sum(v for k, v in result["startup"].items() if k not in ("queued", "import_torch")))
