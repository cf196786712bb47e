"""What orch env reads beside the task's environment (orchestrator/service/place.py): the cluster file's master
port range and the task's CPUs. orch env's own output: tests/commands/test_hosts_env.py."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.env.masterport import DEFAULT_PORT_RANGE
from orchestrator.service.jobs import Scope
from orchestrator.service.place import port_range, task_cpus


def test_the_port_range_of_the_cluster_file_else_the_default(clean_env: pytest.MonkeyPatch,
                                                             write_cluster: Callable[..., Path]) -> None:
    named = write_cluster(launcher={"port_range": [40000, 40009]}, name="named.yaml")
    assert port_range(Scope(str(named))) == (40000, 40009)
    assert port_range(Scope()) == DEFAULT_PORT_RANGE  # no --cluster, no ./cluster.yaml (clean_env's folder)


def test_the_task_cpus_slurms_else_this_process_affinity() -> None:
    assert task_cpus({"SLURM_CPUS_PER_TASK": "6"}) == 6
    assert task_cpus({}) == len(os.sched_getaffinity(0))
