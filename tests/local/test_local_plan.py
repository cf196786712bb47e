"""Local runs with several GPUs per rank: ``orch run SCRIPT --gpus-per-task K`` (tables; no GPU needed); the cluster's
env on this machine (a socket interface it lacks is left out)."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import pytest
from support import ORCH, TESTS, clean_environ

from orchestrator.cli import main
from orchestrator.errors import ConfigError
from orchestrator.local.plan import local_gpu_layout, local_gpus, say_left_out

SCRIPT = TESTS / "scripts" / "ddp_train.py"


@pytest.mark.parametrize(("nproc", "k", "gpus", "ranks"), [
    (None, 1, 8, 8), (None, 2, 8, 4), (None, 4, 8, 2), (None, 8, 8, 1), (2, 2, 4, 2), (None, 3, 6, 2),
])
def test_local_layout(nproc: int | None, k: int, gpus: int, ranks: int) -> None:
    assert local_gpu_layout(nproc, k, gpus) == ranks


@pytest.mark.parametrize(("nproc", "k", "gpus", "says", "hint"), [
    (None, 3, 8, "--gpus-per-task 3 does not divide the 8 local GPU(s)", "one of 1, 2, 4, 8"),
    (None, 2, 0, "this machine shows no GPUs", "leave out --gpus-per-task"),
    (3, 2, 8, "--nproc 3 x --gpus-per-task 2 is not the 8 local GPU(s)", "it is 4"),
    (None, 0, 8, "must be at least 1", "--gpus-per-task 2"),
])
def test_local_layout_refusals(nproc: int | None, k: int, gpus: int, says: str, hint: str) -> None:
    with pytest.raises(ConfigError) as info:
        local_gpu_layout(nproc, k, gpus)
    assert says in info.value.message and hint in (info.value.hint or "")


@pytest.mark.parametrize(("visible", "driver", "count"), [
    ("0,1,2,3", 8, 4), ("", 8, 0), ("-1", 8, 0), (None, 8, 8), (None, 0, 0), ("GPU-abc,GPU-def", 0, 2),
])
def test_local_gpus(visible: str | None, driver: int, count: int, tmp_path: Path) -> None:
    for i in range(driver):
        (tmp_path / f"0000:0{i}:00.0").mkdir()
    environ = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    assert local_gpus(environ, tmp_path) == count
    assert local_gpus({}, tmp_path / "missing") == 0


@pytest.mark.parametrize(("argv", "says"), [
    (["run", str(SCRIPT), "--gpus-per-task", "2"], "does not divide the 3 local GPU(s)"),
    (["run", str(SCRIPT), "--gpus-per-task", "1", "--nproc", "2"], "--nproc 2 x --gpus-per-task 1"),
    (["run", "smoke", "--gpus-per-task", "3"], "built-in DDP entrypoint trains on one GPU per rank"),
])
def test_orch_run_refuses_k_that_does_not_fit(argv: list[str], says: str, clean_env: pytest.MonkeyPatch,
                                              tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean_env.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    assert main([*argv, "--job-root", str(tmp_path / "jobs")]) == 2
    err = capsys.readouterr().err
    assert says in err and "HINT:" in err and "Traceback" not in err, err
    assert not (tmp_path / "jobs").exists()  # nothing written, nothing started


def test_api_local_mode_checks_gpus_per_task_as_orch_run(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from orchestrator import api

    clean_env.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    with pytest.raises(ConfigError, match="does not divide the 3 local GPU"):
        api.submit(str(SCRIPT), script_args=["--out", str(tmp_path)], nodes=1, gpus=2, gpus_per_task=2,
                   executor="local")
    with pytest.raises(ConfigError, match="--nproc 2 x --gpus-per-task 2 is not the 2 local GPU"):
        clean_env.setenv("CUDA_VISIBLE_DEVICES", "0,1")
        api.submit(str(SCRIPT), nodes=1, gpus=4, gpus_per_task=2, executor="local")
    assert not (tmp_path / "jobs").exists() and not list(tmp_path.glob("*/job.json"))


# -- the cluster's env on this machine: socket-interface variables that select none of its interfaces ----------------
NOWHERE = "orchnone0"  # an interface no test machine has


def test_a_left_out_variable_is_said_once_with_this_machines_interfaces(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="orchestrator.local.plan"):
        say_left_out({"NCCL_SOCKET_IFNAME": "ib0"}, ["lo", "eth0"])
    [record] = caplog.records
    assert "NCCL_SOCKET_IFNAME=ib0 selects none of this machine's network interfaces (lo, eth0)" in record.message


def test_orch_run_leaves_out_an_interface_the_machine_lacks_and_gloo_trains(tmp_path: Path) -> None:
    """Real ranks on gloo: GLOO_SOCKET_IFNAME naming no interface of this machine stops gloo at its first contact
    ("Unable to find address for: ..."); orch run leaves it (and NCCL's) out, says so once, keeps the rest."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "name: t\npartitions:\n"
        "  - {name: cpu, nodes: 'node[1-2]', gpus_per_node: 0, cpus_per_node: 2, mem_per_node: 4G}\n"
        f"env: {{GLOO_SOCKET_IFNAME: {NOWHERE}, NCCL_SOCKET_IFNAME: {NOWHERE}, ORCH_TEST_TAG: kept}}\n"
        f"launcher: {{job_root: '{tmp_path / 'jobs'}'}}\n", encoding="utf-8")
    proc = subprocess.run([ORCH, "run", "smoke", "--nproc", "2", "--cluster", str(cluster), "--json", "epochs=1"],
                          cwd=tmp_path, env=clean_environ(), capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"):
        assert proc.stderr.count(f"{name}={NOWHERE} selects none of this machine's network interfaces") == 1
    job = json.loads((Path(json.loads(proc.stdout)["job_dir"]) / "job.json").read_text(encoding="utf-8"))
    assert job["env"] == {"ORCH_TEST_TAG": "kept"}
