"""The nodes recorded as bad on a cluster (``<job root>/bad_nodes.jsonl``) that ``orch submit`` leaves out for
``launcher.bad_node_ttl`` after their last record, and forgetting them (``orch nodes``, ``orch mcp``'s nodes
tool). No Slurm needed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import ConfigError
from orchestrator.records.joblayout import job_root
from orchestrator.records.restarts import badnodes
from orchestrator.records.restarts.badnodes import BadNode
from orchestrator.spec.cluster import Cluster, Launcher


@dataclass(frozen=True)
class BadNodes:
    """The nodes recorded as bad within the TTL (``ttl_s``; 0: none is left out), newest evidence each, and the
    file they are recorded in."""

    file: Path
    ttl_s: int
    nodes: list[BadNode]

    def as_dict(self) -> dict[str, Any]:
        """``orch nodes --json``: ``{"file", "ttl_s", "nodes"}``."""
        return {"file": str(self.file), "ttl_s": self.ttl_s, "nodes": [n.as_dict() for n in self.nodes]}


def recorded(cluster: Cluster | None, now: float) -> BadNodes:
    """The nodes of ``cluster``'s job root (None: the default job root and TTL) recorded as bad at ``now``."""
    root = job_root(cluster)
    ttl = (cluster.launcher if cluster is not None else Launcher()).bad_node_ttl
    nodes = badnodes.active(root, ttl, now) if ttl > 0 else []
    return BadNodes(badnodes.path(root), ttl, nodes)


def bad_nodes(cluster: Cluster | None, now: float) -> dict[str, Any]:
    """``orch nodes --json``: ``{"file", "ttl_s", "nodes"}``, the nodes recorded as bad within the TTL."""
    return recorded(cluster, now).as_dict()


def forget(cluster: Cluster | None, node: str | None) -> list[str]:
    """Forget ``node`` (None: every node) in ``cluster``'s job root so that orch submit uses it again: the nodes
    forgotten. A node named that is not recorded as bad is a ConfigError."""
    root = job_root(cluster)
    gone = badnodes.forget(root, node)
    if node is not None and not gone:
        raise ConfigError(f"node {node} is not recorded as bad in {badnodes.path(root)}",
                          hint="orch nodes lists the nodes recorded as bad")
    return gone
