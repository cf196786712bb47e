"""``orch plot`` of a job folder whose metrics.jsonl / steps.jsonl is mostly garbage: the damaged lines are
skipped cheaply (a line that cannot be a JSON object is never parsed), counted, and warned about once per
file; the good records are still drawn. Bounded, not timed: a generous alarm and counts.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from support import no_hang

from orchestrator.cli import main
from orchestrator.records import training
from orchestrator.records.jobcreate import write_run_config
from orchestrator.spec.runconfig import RunConfig

JUNK = 150_000  # lines that cannot be a JSON object (never parsed)
TORN = 50_000  # lines that start like one but are cut off (parsed once, then skipped)
EPOCHS = [{"epoch": e, "epochs": 3, "train_loss": 1.0 / e, "test_loss": 1.5 / e, "test_acc": 0.3 * e,
           "metrics": ["acc"]} for e in (1, 2, 3)]


def garbage(good: list[dict[str, Any]]) -> str:
    lines = [json.dumps(good[0])]
    lines += ["\x00\x17]]}} not a record ~~~" if i % 3 else "nan,nan,[[[" for i in range(JUNK)]
    lines += ['{"epoch": 9, "train_lo' for _ in range(TORN)]
    lines += [json.dumps(record) for record in good[1:]]
    return "\n".join(lines) + "\n"


@pytest.fixture
def folder(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    clean_env.chdir(tmp_path)
    job = tmp_path / "jobs" / "toy-20261128-040000-abc123"
    job.mkdir(parents=True)
    write_run_config(job, RunConfig(mode="slurm", job_name="toy", job_file="/jobs/toy.py", params={}, nodes=1,
                                    gpus_per_node=1, tasks_per_node=1, cpus_per_task=1, job_dir=str(job),
                                    created="2026-11-28T04:00:00"))
    return job


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every line handed to the JSON parser (raising=False: on a reader without the early skip it stays empty)."""
    seen: list[str] = []
    real = getattr(training, "_object", None)

    def counting(line: str) -> dict[str, Any] | None:
        seen.append(line)
        return real(line) if real else None

    monkeypatch.setattr(training, "_object", counting, raising=False)
    return seen


def plot(folder: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    with no_hang():  # generous: reading the good records takes well under a second
        code = main(["plot", str(folder), "-o", str(folder / "p.png"), "--json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert (folder / "p.png").stat().st_size > 0
    result: dict[str, Any] = json.loads(out)
    return result


def warnings_about(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and name in r.getMessage()]


def test_metrics_with_200000_damaged_lines_plot_the_good_epochs_with_one_warning(
        folder: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
        parsed: list[str]) -> None:
    (folder / "metrics.jsonl").write_text(garbage(EPOCHS))
    with caplog.at_level(logging.WARNING):
        result = plot(folder, capsys)
    warned = warnings_about(caplog, "metrics.jsonl")
    assert len(warned) == 1, warned[:3]
    assert f"{JUNK + TORN} damaged line(s) skipped" in warned[0] and "line 2" in warned[0]
    assert result["epochs"] == 3 and "test_acc" in result["metrics"]
    assert len(parsed) == TORN + len(EPOCHS)  # the junk lines never reach the parser; the file is read once


def test_steps_with_damaged_lines_plot_the_good_steps_with_one_warning(
        folder: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    steps = [{"step": s, "time": 0.0, "train/loss": 1.0 / s} for s in range(1, 21)]
    (folder / "steps.jsonl").write_text(garbage(steps))
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in EPOCHS))
    with caplog.at_level(logging.WARNING):
        result = plot(folder, capsys)
    warned = warnings_about(caplog, "steps.jsonl")
    assert len(warned) == 1 and f"{JUNK + TORN} damaged line(s)" in warned[0], warned[:3]
    assert result["x"] == "step" and any("train/loss" in title for title in result["panels"])
