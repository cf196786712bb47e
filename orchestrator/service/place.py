"""What ``orch env`` reads besides the task's own environment: the master port range of the cluster file in use
(``launcher.port_range``) and the CPUs this task may use when Slurm does not say."""

from __future__ import annotations

from collections.abc import Mapping

from orchestrator.env.masterport import DEFAULT_PORT_RANGE
from orchestrator.service.jobs import Scope, cluster_or_none
from orchestrator.spec.numbers import parse_int


def port_range(scope: Scope) -> tuple[int, int]:
    """``launcher.port_range`` of the cluster file in use; the default range without one."""
    cluster = cluster_or_none(scope)
    return cluster.launcher.port_range if cluster is not None else DEFAULT_PORT_RANGE


def task_cpus(environ: Mapping[str, str]) -> int:
    """The CPUs of this task: ``SLURM_CPUS_PER_TASK``, else those this process may run on."""
    count = parse_int(environ.get("SLURM_CPUS_PER_TASK"), digits=6)
    if count is not None:
        return count
    from orchestrator.local.plan import available_cpus

    return available_cpus()
