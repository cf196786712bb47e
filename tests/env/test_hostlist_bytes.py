"""Hostlists: the bytes of the names are bounded (a long prefix times many hosts), in ``orch hosts`` (also on
stdin), ``orch env``, cluster.yaml partitions and ``--nodelist``: refused in well under a second.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import FAST, ORCH, TEST_CLUSTER, clean_environ, refused

from orchestrator.cli import main
from orchestrator.env import hostlist

# -- hostlists ------------------------------------------------------------------------------------

@given(prefix=st.integers(min_value=600, max_value=5000), hosts=st.integers(min_value=30_000, max_value=65_536))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_long_prefix_times_many_hosts_is_refused_fast(prefix: int, hosts: int) -> None:
    expr = "x" * prefix + f"[1-{hosts}]"
    if (prefix + len(str(hosts)) + 1) * hosts <= hostlist.MAX_BYTES:
        return
    start = time.monotonic()
    with pytest.raises(hostlist.HostlistError, match="MiB"):
        hostlist.expand(expr)
    assert time.monotonic() - start < 0.5


@pytest.mark.parametrize("expr", ["x" * 3000 + "[1-60000]", "x" * 3000 + "[1-983040]",
                                  "a[1-1000]" + "b" * 1000 + "[1-1000]", ",".join(["y" * 2000 + "[1-9999]"] * 3)])
def test_orch_hosts_refuses_huge_expansions(expr: str, capsys: pytest.CaptureFixture[str]) -> None:
    refused(["hosts", expr], capsys, "invalid hostlist")


def test_orch_env_refuses_a_huge_nodelist(clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in {"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_LOCALID": "0",
                        "SLURM_NODEID": "0", "SLURM_NTASKS": "2", "SLURM_NNODES": "2",
                        "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_NUM_NODES": "2",
                        "SLURM_STEP_TASKS_PER_NODE": "1(x2)", "SLURM_TASKS_PER_NODE": "1(x2)",
                        "SLURM_STEP_NODELIST": "x" * 3000 + "[1-60000]",
                        "SLURM_JOB_NODELIST": "x" * 3000 + "[1-60000]"}.items():
        clean_env.setenv(name, value)
    start = time.monotonic()
    assert main(["env"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and time.monotonic() - start < FAST, err


def _cluster(tmp_path: Path, **changes: Any) -> Path:
    data: dict[str, Any] = {**TEST_CLUSTER, **changes,
                            "launcher": {**TEST_CLUSTER["launcher"], "job_root": str(tmp_path / "jobs")}}
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("nodes", ["n" * 3000 + "[1-60000]", "p" * 800 + "[1-65536]"])
def test_a_partition_with_a_huge_node_list_is_refused(nodes: str, tmp_path: Path, clean_env: Any,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    parts = [{**TEST_CLUSTER["partitions"][0], "nodes": nodes}, *TEST_CLUSTER["partitions"][1:]]
    cluster = _cluster(tmp_path, partitions=parts)
    refused(["submit", "smoke", "--dry-run", "--cluster", str(cluster)], capsys, "MiB")


@pytest.mark.parametrize("nodes", ["g" * 3000 + "[1-60000]", "h" * 700 + "[1-65000]"])
def test_a_huge_nodelist_option_is_refused(nodes: str, tmp_path: Path, clean_env: Any,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    refused(["submit", "smoke", "--dry-run", "--cluster", str(_cluster(tmp_path)), "--nodelist", nodes],
            capsys, "--nodelist")


def test_orch_hosts_reads_a_bounded_stdin(tmp_path: Path) -> None:
    proc = subprocess.run(f"head -c 20000000 /dev/zero | tr '\\0' 'a' | {ORCH} hosts", shell=True,
                          capture_output=True, text=True, timeout=60, env=clean_environ())
    assert proc.returncode == 2 and "longer than" in proc.stderr and "Traceback" not in proc.stderr
