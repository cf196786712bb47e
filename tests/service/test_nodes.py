"""The service under orch nodes and orch mcp's nodes tool (orchestrator/service/nodes.py): the nodes recorded as bad
within launcher.bad_node_ttl, and forgetting them, over a real bad_nodes.jsonl. orch nodes' own output:
tests/records/restarts/test_badnodes.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.errors import ConfigError
from orchestrator.records.restarts import badnodes
from orchestrator.service.jobs import Scope, cluster_or_none
from orchestrator.service.nodes import bad_nodes, forget, recorded


def test_recorded_within_the_ttl_and_forgotten(clean_env: pytest.MonkeyPatch, tmp_path: Path,
                                               write_cluster: Callable[..., Path]) -> None:
    cluster = cluster_or_none(Scope(str(write_cluster(launcher={"bad_node_ttl": 3600}))))
    root = tmp_path / "jobs"
    root.mkdir()
    badnodes.record(root, "node1", "hang", "11", now=1000.0)
    badnodes.record(root, "node2", "signal", "12", now=5000.0)
    found = recorded(cluster, 5100.0)  # node1's record is older than the TTL
    assert (found.file, found.ttl_s, [n.node for n in found.nodes]) == (root / badnodes.FILE, 3600, ["node2"])
    assert bad_nodes(cluster, 5100.0) == found.as_dict()
    assert found.as_dict()["nodes"][0]["job_id"] == "12"
    with pytest.raises(ConfigError, match="node node9 is not recorded as bad"):
        forget(cluster, "node9")
    assert forget(cluster, "node2") == ["node2"]
    assert recorded(cluster, 5100.0).nodes == []


def test_a_ttl_of_zero_leaves_no_node_out(clean_env: pytest.MonkeyPatch, tmp_path: Path,
                                          write_cluster: Callable[..., Path]) -> None:
    cluster = cluster_or_none(Scope(str(write_cluster(launcher={"bad_node_ttl": 0}))))
    (tmp_path / "jobs").mkdir()
    badnodes.record(tmp_path / "jobs", "node1", "hang", "11")
    assert recorded(cluster, 0.0).nodes == []
