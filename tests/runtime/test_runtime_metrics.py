"""Metrics: the per-epoch line, metrics.jsonl across resumes and torn writes, result.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.runtime.metrics import EpochMetrics, MetricsLog, write_json_atomic


def metrics(epoch: int, test: bool = True) -> EpochMetrics:
    values = {"train_loss": 0.5, "train_acc": 0.875, "test_loss": 0.25 if test else None,
              "test_acc": 0.9912 if test else None}
    return EpochMetrics(epoch=epoch, epochs=12, values=values, names=("acc",), samples_per_s=12345.6,
                        seconds=3.21, world_size=2, train_samples=60000, steps=469)


def test_line_shows_every_number_once() -> None:
    line = metrics(3).line()
    assert line == ("epoch  3/12  train loss 0.5000 acc  87.50%  test loss 0.2500 acc  99.12%  "
                    "12,346 samples/s  3.2 s")
    assert "test" not in metrics(3, test=False).line()


def test_log_appends_one_object_per_epoch_and_trims_on_resume(tmp_path: Path) -> None:
    log = MetricsLog(tmp_path / "metrics.jsonl")
    log.trim(0)  # no file yet: nothing happens
    assert not log.path.exists()
    for epoch in (1, 2, 3):
        log.append(metrics(epoch))
    with log.path.open("a") as fh:
        fh.write('{"epoch": 4, "train_lo')  # a write torn by a kill
    assert [e["epoch"] for e in log.read()] == [1, 2, 3]
    log.trim(2)  # resumed from the checkpoint after epoch 2: epoch 3 runs and logs again
    lines = log.path.read_text().splitlines()
    assert [json.loads(line)["epoch"] for line in lines] == [1, 2]
    assert json.loads(lines[0]) == metrics(1).as_dict()
    log.append(metrics(3))
    assert [e["epoch"] for e in log.read()] == [1, 2, 3]


def test_write_json_atomic(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    write_json_atomic(path, {"b": 1, "a": [1, 2]})
    write_json_atomic(path, {"c": None})
    assert json.loads(path.read_text()) == {"c": None}
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_line_names_any_metric_and_no_accuracy_for_regression() -> None:
    values = {"train_loss": 0.25, "train_mae": 0.4, "test_loss": 0.125, "test_mae": None}
    entry = EpochMetrics(epoch=1, epochs=2, values=values, names=("mae",), samples_per_s=100.0, seconds=1.0,
                         world_size=2, train_samples=10, steps=3, skipped_steps=2)
    line = entry.line()
    assert line.startswith("epoch 1/2  train loss 0.2500 mae 0.4  test loss 0.1250 mae -")
    assert "acc" not in line and "2 step(s) skipped" in line
    record = entry.as_dict()
    assert record["metrics"] == ["mae"] and "train_acc" not in record and record["test_mae"] is None


def test_files_are_strict_json_without_nan(tmp_path: Path) -> None:
    values = {"train_loss": float("nan"), "train_mae": float("inf"), "test_loss": None, "test_mae": None}
    entry = EpochMetrics(epoch=1, epochs=1, values=values, names=("mae",), samples_per_s=float("-inf"),
                         seconds=1.0, world_size=1, train_samples=1, steps=1)
    log = MetricsLog(tmp_path / "metrics.jsonl")
    log.append(entry)
    text = log.path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    record = json.loads(text, parse_constant=lambda name: pytest.fail(f"bare {name} in metrics.jsonl"))
    assert record["train_loss"] is None and record["train_mae"] is None and record["samples_per_s"] is None
    write_json_atomic(tmp_path / "result.json", {"final": entry.as_dict(), "x": [1.0, float("nan")]})
    result = json.loads((tmp_path / "result.json").read_text(), parse_constant=lambda name: pytest.fail(name))
    assert result["x"] == [1.0, None]
