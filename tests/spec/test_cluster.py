"""cluster.yaml: the shipped example and errors that name the field and the fix (which file: test_clusterfiles.py)."""

from __future__ import annotations

import pytest
from support import ROOT

from orchestrator.errors import ConfigError
from orchestrator.records.cache import load_cluster
from orchestrator.spec.clusterparse import parse_cluster

MINIMAL = """
name: tiny
partitions:
  - name: gpu
    nodes: n[1-4]
    gpus_per_node: 4
    cpus_per_node: 16
    mem_per_node: 64G
"""


def test_shipped_cluster_yaml_is_valid() -> None:
    cluster = load_cluster(ROOT / "cluster.yaml")
    gpu = cluster.partition(None)
    assert gpu.name == cluster.defaults.partition == "gpu"
    assert gpu.gpus_per_node == 8
    assert gpu.max_time_seconds == 2 * 86400
    assert cluster.launcher.preempt_signal == "USR2"
    assert cluster.partition("cpu").gpus_per_node == 0


def test_minimal_cluster_gets_defaults() -> None:
    cluster = parse_cluster(MINIMAL)
    assert cluster.partition(None).name == "gpu"  # no default partition: the first one
    assert cluster.launcher.port_range == (20000, 32767)
    assert cluster.partition("gpu").mem_mb == 65536
    assert cluster.partition("gpu").max_time_seconds is None


def test_unknown_partition_names_the_known_ones() -> None:
    cluster = parse_cluster(MINIMAL)
    with pytest.raises(ConfigError) as info:
        cluster.partition("gpux")
    assert "unknown partition 'gpux'" in info.value.message
    assert info.value.hint is not None and "--partition" in info.value.hint and "gpu" in info.value.hint


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (MINIMAL + "bogus: 1\n", ["bogus", "Extra inputs are not permitted", "remove it"]),
        (MINIMAL.replace("gpus_per_node: 4", "gpus_per_node: -1"), ["partitions.0.gpus_per_node", "larger"]),
        (MINIMAL.replace("gpus_per_node: 4", "gpus_per_node: four"), ["partitions.0.gpus_per_node", "whole number"]),
        (MINIMAL.replace("mem_per_node: 64G", "mem_per_node: lots"), ["mem_per_node", "invalid memory"]),
        (MINIMAL.replace("nodes: n[1-4]", "nodes: n[4-1]"), ["partitions.0.nodes"]),
        (MINIMAL.replace("nodes: n[1-4]", "nodes: n[1-4"), ["partitions.0.nodes"]),
        (MINIMAL + "    max_time: 1:99\n", ["max_time", "invalid time"]),
        (MINIMAL + "defaults:\n  partition: nope\n", ["defaults.partition 'nope'", "gpu"]),
        (MINIMAL + "defaults:\n  time: soon\n", ["defaults.time", "invalid time"]),
        (MINIMAL + "launcher:\n  port_range: [80, 90]\n", ["launcher.port_range", "1024"]),
        (MINIMAL + "launcher:\n  preempt_signal: KILL\n", ["launcher.preempt_signal", "USR2"]),
        (MINIMAL + "env:\n  1BAD: x\n", ["env", "1BAD"]),
        (MINIMAL + "env:\n  GOOD: \"a\\nb\"\n", ["env", "newline"]),
        ("name: x\npartitions: []\n", ["partitions", "at least 1", "add at least one"]),
        ("name: x\n", ["partitions", "Field required", "add it"]),
        ("name: [unclosed\n", ["not valid YAML"]),
        ("- just\n- a list\n", ["mapping at the top level"]),
        ("", ["mapping at the top level"]),
    ],
)
def test_bad_cluster_yaml_names_field_and_fix(text: str, fragments: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        parse_cluster(text, "cluster.yaml")
    rendered = info.value.render()
    assert rendered.startswith("orch: error: ")
    assert "HINT: " in rendered
    for fragment in fragments:
        assert fragment in rendered


def test_duplicate_partitions_are_refused() -> None:
    doubled = "name: tiny\npartitions:\n" + MINIMAL.split("partitions:\n")[1] * 2
    with pytest.raises(ConfigError, match="unique; repeated: gpu"):
        parse_cluster(doubled)
