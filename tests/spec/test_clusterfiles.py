"""Which cluster.yaml a command uses: --cluster, then $ORCH_CLUSTER, then ./cluster.yaml, and the error
that says how to give one."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.errors import ConfigError
from orchestrator.spec.clusterfiles import find_cluster_file

MINIMAL = """
name: tiny
partitions:
  - name: gpu
    nodes: n[1-4]
    gpus_per_node: 4
    cpus_per_node: 16
    mem_per_node: 64G
"""


def test_discovery_order(tmp_path: Path) -> None:
    explicit = tmp_path / "a.yaml"
    from_env = tmp_path / "b.yaml"
    in_cwd = tmp_path / "cluster.yaml"
    for path in (explicit, from_env, in_cwd):
        path.write_text(MINIMAL)
    env = {"ORCH_CLUSTER": str(from_env)}
    assert find_cluster_file(str(explicit), env, tmp_path) == explicit
    assert find_cluster_file(None, env, tmp_path) == from_env
    assert find_cluster_file(None, {}, tmp_path) == in_cwd
    assert find_cluster_file("a.yaml", {}, tmp_path) == explicit  # relative to cwd


def test_missing_cluster_file_says_how_to_provide_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        find_cluster_file(None, {"ORCH_CLUSTER": str(tmp_path / "none.yaml")}, tmp_path)
    assert "$ORCH_CLUSTER" in info.value.message
    assert info.value.hint is not None and "--cluster" in info.value.hint


def test_discovery_explicit_then_env_then_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("explicit.yaml", "env.yaml", "cluster.yaml"):
        (tmp_path / name).write_text(MINIMAL)
    env = {"ORCH_CLUSTER": "env.yaml"}
    assert find_cluster_file("explicit.yaml", env, tmp_path) == tmp_path / "explicit.yaml"
    assert find_cluster_file(None, env, tmp_path) == tmp_path / "env.yaml"
    assert find_cluster_file("", env, tmp_path) == tmp_path / "env.yaml"
    assert find_cluster_file(None, {"ORCH_CLUSTER": ""}, tmp_path) == tmp_path / "cluster.yaml"
    assert find_cluster_file(None, {}, tmp_path) == tmp_path / "cluster.yaml"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert find_cluster_file("~/explicit.yaml", {}, Path("/")) == tmp_path / "explicit.yaml"
    for explicit, env_, source in (("nope.yaml", env, "--cluster"), (None, {"ORCH_CLUSTER": "nope.yaml"},
                                                                        "$ORCH_CLUSTER")):
        with pytest.raises(ConfigError) as info:
            find_cluster_file(explicit, env_, tmp_path)
        assert info.value.message == f"no cluster file at {tmp_path / 'nope.yaml'} (from {source})"
    with pytest.raises(ConfigError, match="from the current directory"):
        find_cluster_file(None, {}, tmp_path / "empty")
    with pytest.raises(ConfigError, match="no cluster file"):
        find_cluster_file(str(tmp_path), {}, tmp_path)  # a folder is not a cluster file
