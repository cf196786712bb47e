"""slurm/discover.py: sinfo's partitions read into a cluster file (pure), as ``orch clusters init`` writes it."""

from __future__ import annotations

import pytest
import yaml

from orchestrator.slurm.discover import cluster_text, gpus_of, parse_sinfo, slurm_time
from orchestrator.spec.clusterparse import validate_cluster

SINFO = """gpu*|gpu[001-004]|gpu:a100:8(S:0-1)|96|1024000|2-00:00:00
gpu*|gpu[005-006]|gpu:a100:4|64|512000|2-00:00:00
cpu|cpu[01-10]|(null)|128|256000|infinite
debug|n/a|(null)|0|0|30:00
mixed|m[1-2]|gpu:v100:2,gpu:a100:2,nvme:1|32|64000|12:00:00
garbage line without cells
"""


@pytest.mark.parametrize(("gres", "gpus", "kind"), [
    ("gpu:8", 8, None), ("gpu:a100:8(S:0-1)", 8, "a100"), ("gpu:4,nvme:1", 4, None), ("(null)", 0, None),
    ("gpu:v100:2,gpu:a100:2", 4, None), ("nvme:1", 0, None), ("gpu", 1, None),
])
def test_gpus_from_gres(gres: str, gpus: int, kind: str | None) -> None:
    assert gpus_of(gres) == (gpus, kind)


def test_time_limits() -> None:
    assert [slurm_time(t) for t in ("infinite", "UNLIMITED", "", "2-00:00:00", "30:00")] == [
        "UNLIMITED", "UNLIMITED", "UNLIMITED", "2-00:00:00", "30:00"]


def test_partitions_merge_their_node_configurations_to_the_smallest() -> None:
    found = {p.name: p for p in parse_sinfo(SINFO)}
    assert list(found) == ["gpu", "cpu", "debug", "mixed"]
    gpu = found["gpu"]
    assert (gpu.nodes, gpu.gpus, gpu.cpus, gpu.mem_mb, gpu.default) == (
        ["gpu[001-004]", "gpu[005-006]"], 4, 64, 512000, True)
    assert found["cpu"].gpus == 0 and found["cpu"].max_time == "UNLIMITED" and not found["cpu"].default
    assert found["debug"].nodes == []  # no node configured: left out of the file


def test_the_written_file_is_a_valid_cluster_file_with_the_default_partition() -> None:
    text = cluster_text("site", parse_sinfo(SINFO))
    data = yaml.safe_load(text)
    cluster = validate_cluster(data, "site.yaml")
    assert [p.name for p in cluster.partitions] == ["gpu", "cpu", "mixed"]
    gpu = cluster.partition("gpu")
    assert (gpu.nodes, gpu.gpus_per_node, gpu.cpus_per_node, gpu.gpu_type) == (
        "gpu[001-004],gpu[005-006]", 4, 64, "a100")
    assert cluster.defaults.partition == "gpu" and cluster.partition("cpu").max_time == "UNLIMITED"


def test_names_that_yaml_would_misread_stay_strings() -> None:
    text = cluster_text("yes", parse_sinfo("on*|no[1-2]|gpu:1|4|1000|1:00:00\n"))
    data = yaml.safe_load(text)
    assert data["name"] == "yes" and data["partitions"][0]["name"] == "on" and data["defaults"]["partition"] == "on"
