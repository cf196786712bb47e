"""Named clusters: ``~/.config/orch/clusters/NAME.yaml`` (``$XDG_CONFIG_HOME``) beside
./cluster.yaml, picked by ``--cluster NAME`` or ``ORCH_CLUSTER=NAME`` (a path still works), and
``orch clusters [--json]``: each file, its partitions, whether Slurm answers here. Real CLI, real files."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import ORCH, TEST_CLUSTER, clean_environ


@pytest.fixture
def home(tmp_path: Path) -> dict[str, Any]:
    """XDG_CONFIG_HOME with clusters alpha and beta, a work folder with its own cluster.yaml."""
    config = tmp_path / "xdg"
    named = config / "orch" / "clusters"
    named.mkdir(parents=True)
    for name, partition in (("alpha", "a100"), ("beta", "h100")):
        data = {**TEST_CLUSTER, "name": name, "launcher": {"job_root": str(tmp_path / f"jobs-{name}")},
                "partitions": [{"name": partition, "nodes": "g[1-2]", "gpus_per_node": 4, "cpus_per_node": 32,
                                "mem_per_node": "100G"}], "defaults": {}}
        (named / f"{name}.yaml").write_text(yaml.safe_dump(data))
    (named / "broken.yaml").write_text("name: [unclosed\n")
    (named / "notes.txt").write_text("not a cluster file\n")
    work = tmp_path / "work"
    work.mkdir()
    local = {**TEST_CLUSTER, "name": "here", "launcher": {"job_root": str(tmp_path / "jobs-here")}}
    (work / "cluster.yaml").write_text(yaml.safe_dump(local))
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    return {"config": config, "work": work, "tmp": tmp_path, "bin": empty_bin}


def orch(home: dict[str, Any], *args: str, path: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    environ = clean_environ(XDG_CONFIG_HOME=str(home["config"]), **env)
    environ.pop("ORCH_CLUSTER", None)
    environ.update(env)
    if path is not None:
        environ["PATH"] = path
    return subprocess.run([ORCH, *args], cwd=home["work"], env=environ, capture_output=True, text=True, timeout=60,
                          check=False)


def dry_run_root(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["script"].split("JOB_DIR=")[1].split("\n")[0])


def test_cluster_name_option_and_variable_pick_a_named_file(home: dict[str, Any], write_job: Callable[..., Path],
                                                            tmp_path: Path) -> None:
    job = str(write_job(gpus=4))
    by_name = orch(home, "submit", job, "--cluster", "alpha", "--dry-run", "--json")
    assert "jobs-alpha" in dry_run_root(by_name)
    assert "a100" in json.loads(by_name.stdout)["script"]
    by_var = orch(home, "submit", job, "--dry-run", "--json", ORCH_CLUSTER="beta")
    assert "jobs-beta" in dry_run_root(by_var)
    assert "jobs-here" in dry_run_root(orch(home, "submit", job, "--dry-run", "--json"))
    by_path = orch(home, "submit", job, "--cluster", str(home["config"] / "orch" / "clusters" / "beta.yaml"),
                   "--dry-run", "--json")
    assert "jobs-beta" in dry_run_root(by_path)
    # a file named like a cluster in the current folder still works when no named file has that name
    (home["work"] / "gamma").write_text((home["work"] / "cluster.yaml").read_text())
    assert "jobs-here" in dry_run_root(orch(home, "submit", job, "--cluster", "gamma", "--dry-run", "--json"))


def test_an_unknown_name_is_one_error_listing_the_names(home: dict[str, Any], write_job: Callable[..., Path]) -> None:
    proc = orch(home, "submit", str(write_job()), "--cluster", "nosuch", "--dry-run")
    assert proc.returncode == 2
    named = home["config"] / "orch" / "clusters"
    assert f"no cluster file at {home['work'] / 'nosuch'} nor {named}/nosuch.yaml (from --cluster)" in proc.stderr
    assert "named clusters: alpha, beta, broken" in proc.stderr
    assert proc.stderr.count("orch: error:") == 1


def test_the_config_folder_follows_xdg_then_home(tmp_path: Path) -> None:
    from orchestrator.spec.clusterfiles import clusters_dir, is_cluster_name

    assert clusters_dir({"XDG_CONFIG_HOME": "/x", "HOME": "/h"}) == Path("/x/orch/clusters")
    assert clusters_dir({"XDG_CONFIG_HOME": "relative", "HOME": "/h"}) == Path("/h/.config/orch/clusters")
    assert clusters_dir({}) is None
    assert [is_cluster_name(t) for t in ("alpha", "a.b-c_1", "x.yaml", "./x", "a/b", "..", "", "x\n")] == [
        True, True, False, False, False, False, False, False]


def test_orch_clusters_lists_files_partitions_and_reachability(home: dict[str, Any], tmp_path: Path) -> None:
    started = time.monotonic()
    proc = orch(home, "clusters", "--json", path=str(home["bin"]))  # no Slurm commands on PATH
    assert proc.returncode == 0, proc.stderr
    rows = {r["pick"]: r for r in json.loads(proc.stdout)}
    assert list(rows) == ["./cluster.yaml", "alpha", "beta", "broken"]
    alpha = rows["alpha"]
    assert (alpha["name"], alpha["partitions"], alpha["reachable"]) == ("alpha", ["a100"], False)
    assert "Slurm's commands are not installed here" in rows["alpha"]["reason"]
    assert rows["./cluster.yaml"]["default"] is True and rows["alpha"]["default"] is False
    assert rows["broken"]["reason"].startswith("invalid:") and rows["broken"]["partitions"] == []
    assert time.monotonic() - started < 10
    text = orch(home, "clusters", path=str(home["bin"]), ORCH_CLUSTER="beta").stdout
    assert "beta *" in text and "a100" in text and "# Slurm's commands are not installed here" in text


def _fake_slurm(folder: Path, ping: str) -> str:
    folder.mkdir()
    for tool in ("sbatch", "squeue"):
        (folder / tool).write_text("#!/bin/sh\nexit 0\n")
    (folder / "scontrol").write_text(f"#!/bin/sh\n{ping}\n")
    for tool in folder.iterdir():
        tool.chmod(0o755)
    return f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin"


def test_orch_clusters_says_reachable_when_the_controller_answers(home: dict[str, Any], tmp_path: Path) -> None:
    up = _fake_slurm(tmp_path / "up", "echo 'Slurmctld(primary) at head is UP'")
    rows = json.loads(orch(home, "clusters", "--json", path=up).stdout)
    assert [r["reachable"] for r in rows] == [True, True, True, False]  # broken.yaml cannot be read
    assert rows[0]["reason"] == "Slurmctld(primary) at head is UP"
    down = _fake_slurm(tmp_path / "down", "echo 'Slurmctld(primary) at head is DOWN'; exit 1")
    assert not any(r["reachable"] for r in json.loads(orch(home, "clusters", "--json", path=down).stdout))


def test_orch_clusters_gives_up_on_a_hanging_controller_fast(home: dict[str, Any], tmp_path: Path) -> None:
    hang = _fake_slurm(tmp_path / "hang", "exec sleep 60")
    started = time.monotonic()
    rows = json.loads(orch(home, "clusters", "--json", path=hang).stdout)
    assert time.monotonic() - started < 15
    assert not rows[0]["reachable"] and "did not answer within 5 s" in rows[0]["reason"]


def test_no_cluster_files_is_one_error(tmp_path: Path) -> None:
    empty = {"config": tmp_path / "none", "work": tmp_path, "tmp": tmp_path}
    proc = orch(empty, "clusters")
    assert proc.returncode == 2 and "no cluster files" in proc.stderr
    assert json.loads(orch(empty, "clusters", "--json").stdout) == []


def _fake_sinfo(folder: Path, out: str, rc: int = 0) -> str:
    """A PATH whose sinfo prints ``out`` (orch clusters init reads nothing else of Slurm)."""
    folder.mkdir(exist_ok=True)
    tool = folder / "sinfo"
    tool.write_text(f"#!/bin/sh\ncat <<'EOF'\n{out}EOF\nexit {rc}\n")
    tool.chmod(0o755)
    return f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin"


def test_init_writes_the_cluster_file_of_the_cluster_you_are_on(home: dict[str, Any]) -> None:
    path = _fake_sinfo(home["tmp"] / "sinfo-bin", "gpu*|g[1-4]|gpu:h100:8|96|1000000|2-00:00:00\n")
    made = orch(home, "clusters", "init", "site", path=path)
    assert made.returncode == 0, made.stderr
    written = home["config"] / "orch" / "clusters" / "site.yaml"
    assert made.stdout.startswith(f"wrote {written}\n")
    data = yaml.safe_load(written.read_text())
    assert data["partitions"][0] == {"name": "gpu", "nodes": "g[1-4]", "gpus_per_node": 8, "cpus_per_node": 96,
                                     "mem_per_node": 1000000, "max_time": "2-00:00:00", "gpu_type": "h100"}
    assert data["defaults"] == {"partition": "gpu"}
    kept = orch(home, "clusters", "init", "site", path=path)  # never replaced unasked
    assert kept.returncode == 2 and "exists already" in kept.stderr and "--force" in kept.stderr
    assert orch(home, "clusters", "init", "site", "--force", path=path).returncode == 0


@pytest.mark.parametrize(("args", "says"), [
    (("init",), "needs a NAME"), (("init", "../x"), "needs a NAME"), (("alpha",), "invalid choice: 'alpha'")])
def test_init_refuses_a_bad_name_and_writes_nothing(home: dict[str, Any], args: tuple[str, ...], says: str) -> None:
    before = sorted(p.name for p in (home["config"] / "orch" / "clusters").iterdir())
    proc = orch(home, "clusters", *args)
    assert proc.returncode == 2 and says in proc.stderr, proc.stderr
    assert sorted(p.name for p in (home["config"] / "orch" / "clusters").iterdir()) == before


def test_init_with_no_partition_writes_nothing(home: dict[str, Any]) -> None:
    path = _fake_sinfo(home["tmp"] / "sinfo-empty", "debug|n/a|(null)|0|0|infinite\n")
    proc = orch(home, "clusters", "init", "empty", path=path)
    assert proc.returncode != 0 and "no partition with nodes" in proc.stderr
    assert not (home["config"] / "orch" / "clusters" / "empty.yaml").exists()
