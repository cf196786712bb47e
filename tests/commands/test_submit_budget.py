"""``orch submit``'s time budget from the job's history: the dry run's ``#   budget:`` line and ``budget`` in
``--dry-run --json``; a warning (never a refusal) when ``--time`` cannot reach the first checkpoint, none when it
can; ``launcher.preempt_before`` shorter than a save and a step. The history is a real finished local run of the
same job (the conftest's ``finished_run``, copied into the cluster's job root by ``job_copy``)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from orchestrator.cli import main
from orchestrator.spec.units import format_time

if TYPE_CHECKING:
    from support import Stubs

Capsys = pytest.CaptureFixture[str]
SUBMIT = ("submit", "smoke", "--nodes", "1", "--gpus", "1")  # one rank, as the local run had


def submit(capsys: Capsys, cluster: Path, *argv: str) -> tuple[int, str, str]:
    code = main([*SUBMIT, "--cluster", str(cluster), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def cluster_with(write_cluster: Callable[..., Path], preempt_before: int) -> Path:
    return write_cluster(launcher={"preempt_before": preempt_before})


def test_no_history_says_so_without_numbers(clean_env: pytest.MonkeyPatch, stubs: Stubs,
                                            write_cluster: Callable[..., Path], capsys: Capsys) -> None:
    cluster = cluster_with(write_cluster, 60)
    code, out, err = submit(capsys, cluster, "--dry-run")
    assert code == 0, err
    [line] = [line for line in out.splitlines() if line.startswith("#   budget:")]
    assert line.startswith("#   budget: no history (no earlier run of job smoke with 1 rank(s)")
    assert "# warning:" not in out
    code, out, err = submit(capsys, cluster, "--dry-run", "--json")
    budget = json.loads(out)["budget"]
    assert budget["history"] == 0 and budget["measured"] is None and budget["end_s"] is None
    assert budget["warnings"] == []


def test_history_gives_the_budget_and_a_time_that_reaches_warns_nothing(
        clean_env: pytest.MonkeyPatch, stubs: Stubs, write_cluster: Callable[..., Path], job_copy: Path,
        capsys: Capsys) -> None:
    cluster = cluster_with(write_cluster, 60)
    code, out, err = submit(capsys, cluster, "--time", "01:00:00", "--dry-run", "--json")
    assert code == 0, err
    budget = json.loads(out)["budget"]
    assert budget["history"] == 1 and budget["time_s"] == 3600 and budget["preempt_before"] == 60
    assert budget["measured"]["save_is_upper_bound"] is True and budget["lead_s"] >= 10
    assert 0 < budget["first_checkpoint_s"] <= budget["end_s"] < 3600 - 60
    assert budget["warnings"] == []
    code, out, err = submit(capsys, cluster, "--time", "01:00:00", "--dry-run")
    assert "#   budget: from 1 earlier run(s): start-up " in out and "of --time 01:00:00" in out
    assert "# warning:" not in out


def test_a_time_that_cannot_reach_the_first_checkpoint_warns(
        clean_env: pytest.MonkeyPatch, stubs: Stubs, write_cluster: Callable[..., Path], job_copy: Path,
        capsys: Capsys) -> None:
    cluster = cluster_with(write_cluster, 60)
    _, out, _ = submit(capsys, cluster, "--dry-run", "--json")
    first = json.loads(out)["budget"]["first_checkpoint_s"]
    assert first > 1  # a real run's start-up alone (import torch, the process group) takes longer
    short = format_time(60 + math.ceil(first) - 1)  # training may run for less than the first checkpoint needs
    code, out, err = submit(capsys, cluster, "--time", short, "--dry-run", "--json")
    assert code == 0, err
    warnings = json.loads(out)["budget"]["warnings"]
    assert [w["message"].split(" cannot")[0] for w in warnings[:1]] == [f"--time {short}"]
    assert "first checkpoint" in warnings[0]["message"] and "use --time " in warnings[0]["hint"]
    code, out, err = submit(capsys, cluster, "--time", short, "--dry-run")
    assert f"# warning: --time {short} cannot reach the first checkpoint" in out
    # a real submit warns on stderr and queues all the same
    code, out, err = submit(capsys, cluster, "--time", short)
    assert code == 0 and f"orch: warning: --time {short} cannot reach the first checkpoint" in err
    assert "HINT: use --time " in err and len(stubs.records("sbatch")) == 1


def test_preempt_before_shorter_than_a_save_and_a_step_warns(
        clean_env: pytest.MonkeyPatch, stubs: Stubs, write_cluster: Callable[..., Path], job_copy: Path,
        capsys: Capsys) -> None:
    cluster = cluster_with(write_cluster, 0)
    code, out, err = submit(capsys, cluster, "--time", "01:00:00", "--dry-run", "--json")
    assert code == 0, err
    budget = json.loads(out)["budget"]
    [warning] = budget["warnings"]
    assert warning["message"].startswith("launcher.preempt_before=0 s is shorter than one checkpoint")
    assert warning["hint"] == f"set launcher.preempt_before: {budget['lead_s']} in cluster.yaml"


def test_a_sweep_dry_run_shows_the_budget(clean_env: pytest.MonkeyPatch, stubs: Stubs,
                                          write_cluster: Callable[..., Path], job_copy: Path, capsys: Capsys) -> None:
    cluster = cluster_with(write_cluster, 60)
    code, out, err = submit(capsys, cluster, "--sweep", "lr=0.1,0.2", "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["budget"]["history"] == 1
    code, out, err = submit(capsys, cluster, "--sweep", "lr=0.1,0.2", "--dry-run")
    assert "#   budget: from 1 earlier run(s)" in out
