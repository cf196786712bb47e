"""``python -m orchestrator.runtime.launch``: the per-task entry.

Errors name the rank; ``--master-port`` needs no torch.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, clean_environ

from orchestrator.env import distenv, masterport
from orchestrator.errors import DistEnvError
from orchestrator.records.jobcreate import write_run_config
from orchestrator.runtime.launch import main
from orchestrator.spec.runconfig import RunConfig
from orchestrator.task.launch import check_world

SMOKE = ROOT / "jobs" / "smoke.py"


def job_dir(tmp_path: Path, *, tasks: int = 1, nodes: int = 1, port_range: tuple[int, int] = (29500, 39499),
            params: dict[str, object] | None = None) -> Path:
    folder = tmp_path / "job"
    (folder / "logs").mkdir(parents=True)
    cfg = RunConfig(mode="local", job_name="smoke", job_file=str(SMOKE), params=params or {"epochs": 1},
                    nodes=nodes, gpus_per_node=0, tasks_per_node=tasks, cpus_per_task=1, job_dir=str(folder),
                    launcher={"port_range": port_range, "init_timeout": 10}, created="2024-01-01T00:00:00")
    write_run_config(folder, cfg)
    return folder


def launch(folder: Path, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.runtime.launch", "--job-dir", str(folder), *args],
                          capture_output=True, text=True, timeout=timeout, env=clean_environ(**env))


def test_master_port_matches_distenv_and_needs_no_torch(tmp_path: Path) -> None:
    folder = job_dir(tmp_path, port_range=(20000, 20999))
    code = ("import sys\nfrom orchestrator.runtime.launch import main\n"
            f"rc = main(['--master-port', '--job-dir', {str(folder)!r}])\n"
            "assert 'torch' not in sys.modules\nsys.exit(rc)\n")
    ports = []
    for restart in ("", "0", "1", "2"):
        env = clean_environ(SLURM_JOB_ID="4242", **({"SLURM_RESTART_COUNT": restart} if restart else {}))
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                              timeout=60)
        assert proc.returncode == 0, proc.stderr
        ports.append(int(proc.stdout))
    assert ports[0] == ports[1] == masterport.master_port("4242", 0, (20000, 20999))
    assert ports[2] == masterport.master_port("4242", 1, (20000, 20999)) != ports[0]
    assert all(20000 <= p <= 20999 for p in ports) and len(set(ports[1:])) == 3


@pytest.mark.parametrize(("environ", "says"), [
    ({}, "SLURM_JOB_ID or SLURM_JOBID is not set"),
    ({"SLURM_JOB_ID": "7", "SLURM_RESTART_COUNT": "x"}, "SLURM_RESTART_COUNT='x' is not a non-negative integer"),
])
def test_master_port_errors(environ: dict[str, str], says: str) -> None:
    # the batch script's `launch --master-port` is distenv.job_master_port, messages included
    with pytest.raises(DistEnvError, match=says):
        distenv.job_master_port(environ, (29500, 39499))


def test_not_launched_by_anything_is_a_clear_error(tmp_path: Path, clean_env: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--job-dir", str(job_dir(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("orch: error: rank ?: not launched by srun or torchrun") and "HINT: " in err


def test_missing_job_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--job-dir", str(tmp_path / "nope")]) == 2
    assert "job.json does not exist" in capsys.readouterr().err


def test_world_size_must_match_the_job(tmp_path: Path, clean_env: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    folder = job_dir(tmp_path, tasks=2)
    for name, value in {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "3", "LOCAL_WORLD_SIZE": "3",
                        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29999"}.items():
        clean_env.setenv(name, value)
    assert main(["--job-dir", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "rank 1: the job was set up for 2 ranks" in err and "this step has 3" in err


@pytest.mark.parametrize(("world_size", "ok"), [(8, True), (7, False), (9, False), (4, False), (16, False)])
def test_check_world_accepts_the_right_size(world_size: int, ok: bool) -> None:
    """2 nodes x 4 tasks: a step of exactly 8 ranks passes, any other size is refused."""
    cfg = RunConfig(mode="slurm", job_name="j", job_file="/j.py", params={}, nodes=2, gpus_per_node=4,
                    tasks_per_node=4, cpus_per_task=1, job_dir="/x", created="now")
    env = distenv.DistEnv(rank=5, local_rank=1, world_size=world_size, local_world_size=4, node_rank=1,
                          num_nodes=2, master_addr="n1", master_port=1234)
    if ok:
        assert check_world(cfg, env) is None
    else:
        with pytest.raises(DistEnvError) as info:
            check_world(cfg, env)
        assert info.value.message == (f"rank 5: the job was set up for 8 ranks (2 node(s) x 4), but this step "
                                      f"has {world_size}")


def test_port_already_in_use_is_a_clear_error(tmp_path: Path) -> None:
    folder = job_dir(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = launch(folder, RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1",
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert f"orch: error: rank 0 cannot listen on 127.0.0.1:{port}: the port is already in use" in proc.stderr
    assert "launcher.port_range" in proc.stderr


def test_one_rank_runs_the_smoke_job_through_the_launcher(tmp_path: Path) -> None:
    folder = job_dir(tmp_path, params={"epochs": 1, "samples": 64, "test_samples": 0})
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = launch(folder, RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1",
                  MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), CUDA_VISIBLE_DEVICES="")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((folder / "result.json").read_text())
    assert result["status"] == "completed" and result["final"]["test_acc"] is None
    assert "world size 1" in proc.stdout
