"""cluster.yaml at its edges: every bound at N and N+1, every refusal with its fix, the default
partition, and ``~`` in launcher.job_root (which file: test_clusterfiles.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.errors import ConfigError
from orchestrator.records.cache import load_cluster
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.clusterparse import parse_cluster


def part(name: str, **changes: Any) -> dict[str, Any]:
    return {"name": name, "nodes": f"{name}[1-4]", "gpus_per_node": 4, "cpus_per_node": 16, "mem_per_node": "64G",
            **changes}


def cluster_text(**sections: Any) -> str:
    data: dict[str, Any] = {"name": "edge", "partitions": [part("a"), part("b"), part("c")]}
    data.update(sections)
    return yaml.safe_dump(data)


def check(ok: bool, **sections: Any) -> Cluster | None:
    if ok:
        return parse_cluster(cluster_text(**sections))
    with pytest.raises(ConfigError):
        parse_cluster(cluster_text(**sections))
    return None


@pytest.mark.parametrize(("changes", "ok"), [
    ({"gpus_per_node": 0}, True), ({"gpus_per_node": 64}, True), ({"gpus_per_node": 65}, False),
    ({"gpus_per_node": -1}, False),
    ({"cpus_per_node": 1}, True), ({"cpus_per_node": 0}, False),
    ({"mem_per_node": 0}, True), ({"mem_per_node": -1}, False), ({"mem_per_node": "1.5G"}, False),
    ({"max_time": "UNLIMITED"}, True), ({"max_time": "00:59"}, True), ({"max_time": "0"}, False),
    ({"nodes": ""}, False), ({"nodes": " "}, False), ({"nodes": "x"}, True),
    ({"name": "a.b-c_1"}, True), ({"name": "a b"}, False), ({"name": ""}, False), ({"name": "a/b"}, False),
    ({"name": "gpu\n"}, False),
    ({"gpu_type": "h100"}, True),
])
def test_partition_bounds(changes: dict[str, Any], ok: bool) -> None:
    name = changes.get("name", "a")
    data = {"name": "edge", "partitions": [part(name, **{k: v for k, v in changes.items() if k != "name"})]}
    if ok:
        parse_cluster(yaml.safe_dump(data))
    else:
        with pytest.raises(ConfigError) as info:
            parse_cluster(yaml.safe_dump(data))
        assert "partitions.0." in info.value.message


@pytest.mark.parametrize(("launcher", "ok"), [
    ({"port_range": [1024, 1024]}, True), ({"port_range": [1023, 2000]}, False),
    ({"port_range": [2000, 65535]}, True), ({"port_range": [2000, 65536]}, False),
    ({"port_range": [3000, 2999]}, False), ({"port_range": [3000, 3000]}, True),
    ({"init_timeout": 10}, True), ({"init_timeout": 9}, False),
    ({"collective_timeout": 5}, True), ({"collective_timeout": 4}, False),
    ({"srun_wait": 0}, True), ({"srun_wait": -1}, False),
    ({"preempt_before": 0}, True), ({"preempt_before": -1}, False),
    ({"preempt_signal": "USR1"}, True), ({"preempt_signal": "USR2"}, True), ({"preempt_signal": "TERM"}, True),
    ({"preempt_signal": "INT"}, True), ({"preempt_signal": "HUP"}, True), ({"preempt_signal": "URG"}, True),
    ({"preempt_signal": "KILL"}, False), ({"preempt_signal": "usr2"}, False),
    ({"gpu_flag": "gres"}, True), ({"gpu_flag": "gpus"}, False),
    ({"pass_env": ["WANDB_API_KEY", "_X", "A1"]}, True), ({"pass_env": ["1A"]}, False),
    ({"pass_env": ["A-B"]}, False), ({"pass_env": ["A\n"]}, False), ({"pass_env": [""]}, False),
    ({"requeue": False}, True), ({"requeue": "maybe"}, False),
])
def test_launcher_bounds(launcher: dict[str, Any], ok: bool) -> None:
    cluster = check(ok, launcher=launcher)
    if cluster is not None:
        for key, value in launcher.items():
            got = getattr(cluster.launcher, key)
            assert (list(got) if isinstance(got, tuple) else got) == value


def test_launcher_built_in_defaults() -> None:
    launcher = parse_cluster(cluster_text()).launcher
    assert launcher.port_range == (20000, 32767)
    assert (launcher.init_timeout, launcher.collective_timeout, launcher.srun_wait) == (300, 30, 60)
    assert (launcher.preempt_signal, launcher.preempt_before, launcher.requeue) == ("USR2", 120, True)
    assert (launcher.job_root, launcher.gpu_flag, launcher.python) == ("~/orch-jobs", "gpus-per-node", None)
    assert (launcher.setup, launcher.pass_env) == ([], [])
    defaults = parse_cluster(cluster_text()).defaults
    assert (defaults.partition, defaults.time, defaults.account, defaults.qos) == (None, "01:00:00", None, None)
    assert (defaults.cpus_per_task, defaults.mem_per_gpu) == (None, None)


@pytest.mark.parametrize(("env", "ok"), [
    ({"A": "x"}, True), ({"_": "x"}, True), ({"A1_b": ""}, True), ({"A": "tab\there, 'quotes' $x"}, True),
    ({"1A": "x"}, False), ({"A-B": "x"}, False), ({"": "x"}, False), ({"A\n": "x"}, False),
    ({"A": "nul\0byte"}, False), ({"A": "new\nline"}, False), ({"A": "\0"}, False),
])
def test_env_names_and_values(env: dict[str, str], ok: bool) -> None:
    cluster = check(ok, env=env)
    if cluster is not None:
        assert dict(cluster.env) == env


@pytest.mark.parametrize(("defaults", "ok"), [
    ({"partition": "b"}, True), ({"partition": "z"}, False), ({"cpus_per_task": 1}, True),
    ({"cpus_per_task": 0}, False), ({"mem_per_gpu": "8G"}, True), ({"mem_per_gpu": 0}, True),
    ({"mem_per_gpu": "eight"}, False), ({"time": "2-00:00:00"}, True), ({"time": "1:60"}, False),
    ({"account": "proj", "qos": "high"}, True), ({"unknown": 1}, False),
])
def test_defaults_bounds(defaults: dict[str, Any], ok: bool) -> None:
    check(ok, defaults=defaults)


def test_partition_choice_named_then_default_then_first() -> None:
    plain = parse_cluster(cluster_text())
    assert plain.partition(None).name == "a"  # no defaults.partition: the first, not the last
    assert plain.partition("").name == "a"
    assert plain.partition("c").name == "c"
    with_default = parse_cluster(cluster_text(defaults={"partition": "b"}))
    assert with_default.partition(None).name == "b"
    assert with_default.partition("c").name == "c"
    with pytest.raises(ConfigError) as info:
        with_default.partition("z")
    assert info.value.message == "unknown partition 'z'"
    assert info.value.hint == "use --partition with one of: a, b, c"


def test_duplicate_partitions_are_named_once_each_sorted() -> None:
    data = {"name": "edge", "partitions": [part("b"), part("a"), part("b"), part("a"), part("c")]}
    with pytest.raises(ConfigError) as info:
        parse_cluster(yaml.safe_dump(data))
    assert info.value.message.endswith("partition names must be unique; repeated: a, b")


@pytest.mark.parametrize(("text", "hint"), [
    (cluster_text(bogus=1), "bogus: remove it or check its spelling"),
    ('name: x\npartitions: [{name: a, nodes: "a1", gpus_per_node: 1, mem_per_node: 1}]',
     "partitions.0.cpus_per_node: add it"),
    (cluster_text(launcher={"srun_wait": "soon"}), "launcher.srun_wait: use a whole number"),
    (cluster_text(launcher={"srun_wait": 1.5}), "launcher.srun_wait: use a whole number"),
    (cluster_text(launcher={"srun_wait": [1]}), "launcher.srun_wait: use a whole number"),
    (cluster_text(launcher={"requeue": "maybe"}), "launcher.requeue: use true or false"),
    (cluster_text(launcher={"srun_wait": -1}), "launcher.srun_wait: use a larger value"),
    (cluster_text(partitions=[part("a", gpus_per_node=65)]), "partitions.0.gpus_per_node: use a smaller value"),
    (cluster_text(partitions=[]), "partitions: add at least one entry"),
    (cluster_text(launcher={"gpu_flag": "x"}), "launcher.gpu_flag: use one of the values listed"),
    (cluster_text(name=5), "name: use text (quote it in YAML)"),
    (cluster_text(launcher={"setup": "module load x"}),
     "launcher.setup: use a YAML list (one '- item' per line, or [a, b])"),
    (cluster_text(launcher={"port_range": 5}),
     "launcher.port_range: use a YAML list of two numbers, e.g. [20000, 32767]"),
    (cluster_text(env=["A"]), "env: use a mapping (one 'key: value' per line)"),
    (cluster_text(launcher={"job_root": None}), "launcher.job_root: use text (quote it in YAML)"),
])
def test_every_validation_error_type_gets_its_fix(text: str, hint: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_cluster(text, "c.yaml")
    assert info.value.message.startswith("invalid c.yaml:\n  ")
    assert info.value.hint is not None and hint in info.value.hint.split("; ")


def test_an_error_without_a_known_fix_points_to_the_reference() -> None:
    with pytest.raises(ConfigError) as info:
        parse_cluster(cluster_text(env={"1A": "x"}))
    assert info.value.hint == "see the cluster.yaml reference in README.md"
    assert "env: '1A' is not a valid environment variable name" in info.value.message
    assert "Value error" not in info.value.message


@pytest.mark.parametrize("text", ["", "null", "- a\n", "just text", "5"])
def test_top_level_must_be_a_mapping(text: str) -> None:
    with pytest.raises(ConfigError, match="must be a mapping at the top level"):
        parse_cluster(text)


def test_unreadable_cluster_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_cluster(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_bytes(b"name: \xff\xfe")
    with pytest.raises(ConfigError):
        load_cluster(tmp_path / "bad.yaml")


def test_tilde_in_job_root_is_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """orch submit --dry-run puts the job folder under $HOME, not under a folder named '~'."""
    from orchestrator.cli import main
    from orchestrator.records.joblayout import job_root

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "c.yaml"
    path.write_text(cluster_text(launcher={"job_root": "~/my-jobs"}))
    assert job_root(load_cluster(path)) == home / "my-jobs"
    assert main(["submit", "smoke", "--cluster", str(path), "--nodes", "1", "--gpus", "1", "--dry-run",
                 "--json"]) == 0
    script = json.loads(capsys.readouterr().out)["script"]
    assert f"--output={home}/my-jobs/smoke-" in script
    assert "~" not in script


def test_a_loaded_cluster_cannot_be_changed_by_accident() -> None:
    cluster = parse_cluster(cluster_text())
    for model, field in ((cluster, "name"), (cluster.launcher, "requeue"), (cluster.defaults, "time"),
                         (cluster.partitions[0], "gpus_per_node")):
        with pytest.raises(ValueError, match="frozen"):
            setattr(model, field, None)
