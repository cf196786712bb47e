"""Submit options -> one request with its values settled once (orchestrator/service/request.py): the doctor gate,
the bad-node exclusion (slurm/nodememory.py) and the plan (slurm/plan.py build_plan) each read the same nodes,
partition, GPUs and launch style, whichever of the flags and the job's resources gave them. Each reader is
watched where it is called (a wrapper records its arguments and calls the real one)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import TESTS

from orchestrator.records.restarts import badnodes
from orchestrator.service.plan import prepare
from orchestrator.service.request import SubmitOptions, request_of, with_cluster
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.clusterparse import parse_cluster


@pytest.fixture
def cluster(clean_env: pytest.MonkeyPatch, tmp_path: Path, write_cluster: Callable[..., Path]) -> Cluster:
    """The test cluster, with dbg1 recorded as bad (so the exclusion has something to leave out)."""
    path = write_cluster(launcher={"bad_node_ttl": 3600}, doctor={"ignore": ["DDP005"]})
    cluster = parse_cluster(path.read_text(encoding="utf-8"))
    root = tmp_path / "jobs"
    root.mkdir()
    badnodes.record(root, "dbg1", "hang", "41")
    return cluster


@pytest.fixture
def readers(monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, Any]]:
    """What the doctor gate and the bad-node exclusion were called with (the real ones still run)."""
    from orchestrator.slurm import nodememory

    gate = importlib.import_module("orchestrator.doctor.gate")  # the package's gate() shadows the module's name

    seen: dict[str, dict[str, Any]] = {}
    check_script, leave_out = gate.check_script, nodememory.leave_out

    def gate_spy(target: Any, **kwargs: Any) -> Any:
        seen["gate"] = kwargs
        return check_script(target, **kwargs)

    def leave_out_spy(extra: Any, cluster: Cluster, partition: str | None, nodes: int, root: Path) -> Any:
        seen["leave_out"] = {"partition": partition, "nodes": nodes}
        return leave_out(extra, cluster, partition, nodes, root)

    monkeypatch.setattr(gate, "check_script", gate_spy)
    monkeypatch.setattr(nodememory, "leave_out", leave_out_spy)
    return seen


def test_a_scripts_values_are_read_alike_by_the_gate_the_exclusion_and_the_plan(
        cluster: Cluster, readers: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    options = SubmitOptions(job=str(TESTS / "scripts" / "spawn_per_node.py"), nodes=2, gpus=4, partition="debug",
                            script_args=["-n", "{nnodes}", "-g", "{nproc_per_node}", "-nr", "{node_rank}"])
    planned = prepare(options, cluster, tmp_path, dry_run=True)
    settled, plan = planned.resolved, planned.plan
    assert (settled.nodes, settled.partition, settled.gpus, settled.gpus_per_task) == (2, "debug", 4, None)
    assert settled.launch is not None and settled.launch.style == "per-node"  # the gate settled it
    gate = readers["gate"]
    assert (gate["nodes"], gate["gpus"], gate["gpus_per_task"]) == (settled.nodes, settled.gpus,
                                                                    settled.gpus_per_task)
    assert readers["leave_out"] == {"partition": settled.partition, "nodes": settled.nodes}
    assert plan.resolved is settled
    assert (plan.context.nodes, plan.context.partition, plan.context.gpus_per_node) == (2, "debug", 4)
    assert plan.request.script is not None and plan.request.script.launch == settled.launch
    assert plan.run_config.script is not None and plan.run_config.script.launch.style == "per-node"
    assert plan.left_out is not None and [b.node for b in plan.left_out.nodes] == ["dbg1"]
    assert "--exclude=dbg1" in plan.script


def test_a_job_files_own_resources_are_settled_once(cluster: Cluster, readers: dict[str, dict[str, Any]],
                                                    tmp_path: Path, write_job: Callable[..., Path]) -> None:
    """No --nodes/--partition: the job file's (3 nodes on debug) win, for the exclusion and the plan alike; a job
    file passes no gate (the doctor stays unimported)."""
    job = write_job(nodes=3, gpus=2, partition="debug")
    planned = prepare(SubmitOptions(job=str(job)), cluster, tmp_path, dry_run=True)
    settled = planned.resolved
    assert (settled.nodes, settled.partition, settled.gpus, settled.launch) == (3, "debug", None, None)
    assert "gate" not in readers
    assert readers["leave_out"] == {"partition": "debug", "nodes": 3}
    assert (planned.plan.context.nodes, planned.plan.context.partition, planned.plan.context.gpus_per_node) == (
        3, "debug", 2)


def test_the_flags_win_over_the_job_file(cluster: Cluster, tmp_path: Path, write_job: Callable[..., Path]) -> None:
    job = write_job(nodes=3, gpus=2, partition="debug")
    asked = request_of(SubmitOptions(job=str(job), nodes=1, partition="gpu"), cwd=tmp_path, environ=os.environ,
                       search=[])
    assert (asked.resolved.nodes, asked.resolved.partition) == (1, "gpu")
    assert asked.findings == ()


def test_cluster_yaml_adds_its_doctor_ignore(cluster: Cluster) -> None:
    assert with_cluster(SubmitOptions(ignore=["DDP001"]), cluster).ignore == ["DDP001", "DDP005"]
    assert with_cluster(SubmitOptions(ignore=["DDP001"]), None).ignore == ["DDP001"]
