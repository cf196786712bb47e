"""Bring your own script, for real: ``orch run tests/scripts/ddp_train.py --nproc 2`` (2 gloo ranks),
compared with ``torchrun --nproc-per-node 2`` running the same unmodified script; exit codes; the
requeue contract (exit 75 after the preemption signal; ``--resume`` raises TORCHELASTIC_RESTART_COUNT).
The ``orch run`` of ddp_train.py from another directory is made once per session (tests/local/sharedlocal.py) and
read by other modules too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from local import sharedlocal
from support import ORCH, once_more_on_teardown_abort

from orchestrator.local.rankenv import free_port

pytestmark = pytest.mark.slow

SCRIPTS = sharedlocal.SCRIPTS
DDP = sharedlocal.DDP
HOSTILE = sharedlocal.HOSTILE  # arguments no shell or quoting layer may change: byte for byte to sys.argv
TIMEOUT = 180
_env = sharedlocal.script_env  # OMP_NUM_THREADS unset: torchrun sets 1 when it is unset; orch sets the task's CPUs


def _orch_run(cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([ORCH, "run", *args], cwd=cwd, env=_env(**extra), capture_output=True,
                          timeout=TIMEOUT, check=False)


def _records(out: Path, n: int) -> list[dict[str, Any]]:
    return [json.loads((out / f"rank{r}.json").read_text(encoding="utf-8")) for r in range(n)]


def _job_dir(root: Path) -> Path:
    [job_dir] = [p for p in root.iterdir() if (p / "job.json").is_file()]
    return job_dir


@pytest.fixture
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[bytes], Path]:
    """``orch run ../scripts/ddp_train.py --nproc 2 --cpu --json`` (a relative path) from ``elsewhere/``, the
    arguments HOSTILE after the script's own (sharedlocal.ddp_train): the run and its folder."""
    made = sharedlocal.ddp_train(tmp_path_factory)
    return made["proc"], made["folder"]


def test_unmodified_script_runs_in_two_ranks_from_another_directory(
        ddp_run: tuple[subprocess.CompletedProcess[bytes], Path]) -> None:
    proc, folder = ddp_run
    elsewhere, out, jobs = folder / "elsewhere", folder / "out", folder / "jobs"
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    records = _records(out, 2)
    expected_argv = ["--out", str(out), *sharedlocal.DDP_STEPS, "--", *HOSTILE]
    job_dir = _job_dir(jobs)
    for rank, rec in enumerate(records):
        assert rec["env"] == {
            "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
            "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": "2",
            "ROLE_NAME": "default", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": records[0]["env"]["MASTER_PORT"],
            "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
            "TORCHELASTIC_RUN_ID": job_dir.name, "TORCHELASTIC_USE_AGENT_STORE": "True",
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "OMP_NUM_THREADS": rec["env"]["OMP_NUM_THREADS"],
            "TORCHELASTIC_ERROR_FILE": str(job_dir / "logs" / f"rank{rank}.error.json"),  # @record writes there
        }
        assert [bytes.fromhex(h) for h in rec["argv_hex"]] == [os.fsencode(a) for a in expected_argv]
        assert [bytes.fromhex(h) for h in rec["extra_hex"]] == [os.fsencode(a) for a in HOSTILE]
        assert rec["argv0"] == str(DDP)
        assert rec["cwd"] == str(elsewhere)
        assert rec["path0"] == str(SCRIPTS)  # the script's folder, so `import ddp_model` works
        assert (rec["backend"], rec["world"]) == ("gloo", 2)
    assert records[0]["params"] == records[1]["params"]  # DDP kept the replicas identical
    config = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))
    assert config["script"]["kind"] == "script" and config["script"]["target"] == str(DDP)
    assert config["script"]["cwd"] == str(elsewhere)
    assert [os.fsencode(a) for a in config["script"]["args"]] == [os.fsencode(a) for a in expected_argv]
    assert int(records[0]["env"]["OMP_NUM_THREADS"]) == config["cpus_per_task"]
    assert not Path("/tmp/orch-pwned").exists()


def test_torchrun_and_orch_run_give_the_script_the_same_variables(
        tmp_path: Path, ddp_run: tuple[subprocess.CompletedProcess[bytes], Path]) -> None:
    torchrun_out = tmp_path / "torchrun"
    # plain torchrun (not orch) aborts now and then in gloo's teardown under load (the shared rule: once more)
    torchrun = once_more_on_teardown_abort(lambda: subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
         "--master-port", str(free_port()), str(DDP), "--out", str(torchrun_out)],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, errors="replace", timeout=TIMEOUT, check=False))
    assert torchrun.returncode == 0, torchrun.stderr
    # orch's side: the shared run (from another directory, by a relative path, with more arguments: none of them
    # changes a variable; test_unmodified_script_runs_in_two_ranks_from_another_directory checks its own values)
    proc, folder = ddp_run
    orch_out, jobs = folder / "out", folder / "jobs"
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    cpus = json.loads((_job_dir(jobs) / "job.json").read_text())["cpus_per_task"]
    # Differ by design: the port and run id; OMP_NUM_THREADS is 1 under torchrun, the task's CPUs under orch;
    # the error file is in torchrun's temporary folder, in the job folder under orch.
    differ = {"MASTER_PORT", "TORCHELASTIC_RUN_ID", "OMP_NUM_THREADS", "TORCHELASTIC_ERROR_FILE"}
    for theirs, ours in zip(_records(torchrun_out, 2), _records(orch_out, 2), strict=True):
        assert set(theirs["env"]) == set(ours["env"])
        assert {k: v for k, v in theirs["env"].items() if k not in differ} == \
               {k: v for k, v in ours["env"].items() if k not in differ}
        # one machine: torchrun's agent hosts the store, orch's rank 0 task does (on loopback): both True
        assert theirs["env"]["TORCHELASTIC_USE_AGENT_STORE"] == ours["env"]["TORCHELASTIC_USE_AGENT_STORE"] == "True"
        assert ours["env"]["OMP_NUM_THREADS"] == str(cpus)
        assert ours["env"]["TORCHELASTIC_ERROR_FILE"] == str(_job_dir(jobs) / "logs" /
                                                             f"rank{ours['env']['RANK']}.error.json")
        assert theirs["path0"] == ours["path0"] == str(SCRIPTS)
        assert theirs["argv0"] == ours["argv0"]


def test_the_scripts_exit_code_is_the_tasks(tmp_path: Path) -> None:
    proc = _orch_run(tmp_path, str(DDP), "--nproc", "2", "--job-root", str(tmp_path / "jobs"), "--",
                     "--out", str(tmp_path / "out"), "--steps", "1", "--exit-code", "7")
    assert proc.returncode == 7
    assert b"rank 0 exited with code 7" in proc.stderr


def test_module_form_runs_with_cwd_first_on_the_path(tmp_path: Path) -> None:
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "main.py").write_text(
        "import json, os, sys\n"
        "rank = os.environ['RANK']\n"
        "with open(f'out{rank}.json', 'w') as fh:\n"
        "    json.dump({'argv': sys.argv, 'path0': sys.path[0], 'name': __name__}, fh)\n", encoding="utf-8")
    proc = _orch_run(tmp_path, "-m", "mypkg.main", "--nproc", "2", "--job-root", str(tmp_path / "jobs"),
                     "--", "a b", "--flag")
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    for rank in (0, 1):
        rec = json.loads((tmp_path / f"out{rank}.json").read_text())
        assert rec == {"argv": [str(pkg / "main.py"), "a b", "--flag"], "path0": str(tmp_path), "name": "__main__"}


def test_preempted_script_exits_75_and_resumes_with_a_higher_restart_count(tmp_path: Path) -> None:
    jobs, out = tmp_path / "jobs", tmp_path / "out"
    proc = subprocess.Popen([ORCH, "run", str(SCRIPTS / "preemptible.py"), "--nproc", "2", "--job-root", str(jobs),
                             "--", "--out", str(out)], cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + TIMEOUT
    while not all((out / f"ready{r}").exists() for r in (0, 1)):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGUSR2)  # orch run forwards it to the ranks, as the batch script does
    stdout, stderr = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, stderr.decode(errors="replace")
    job_dir = _job_dir(jobs)
    assert b"preempted" in stdout and (job_dir / "requeue").exists()
    resumed = _orch_run(tmp_path, "--resume", str(job_dir))
    assert resumed.returncode == 0, resumed.stderr.decode(errors="replace")
    for rank in (0, 1):
        seen = json.loads((out / f"seen{rank}-1.json").read_text())
        assert seen["TORCHELASTIC_RESTART_COUNT"] == "1" and seen["ORCH_JOB_DIR"] == str(job_dir)
    assert json.loads((job_dir / "job.json").read_text())["restarts"] == 1


def test_gpus_per_task_gives_each_local_rank_its_k_gpus(tmp_path: Path) -> None:
    """``orch run SCRIPT --gpus-per-task 2`` on 4 visible GPUs: 2 ranks, each seeing exactly its two (here the
    GPUs are only names: without CUDA the ranks train on the CPU, but CUDA_VISIBLE_DEVICES is what they got)."""
    out, jobs = tmp_path / "out", tmp_path / "jobs"
    proc = _orch_run(tmp_path, str(DDP), "--gpus-per-task", "2", "--job-root", str(jobs), "--",
                     "--out", str(out), "--steps", "1", CUDA_VISIBLE_DEVICES="4,5,6,7")
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    records = _records(out, 2)
    assert [r["cuda_visible"] for r in records] == ["4,5", "6,7"]
    assert [r["env"]["LOCAL_WORLD_SIZE"] for r in records] == ["2", "2"]
    cfg = json.loads((_job_dir(jobs) / "job.json").read_text())
    assert (cfg["tasks_per_node"], cfg["gpus_per_task"], cfg["gpus_per_node"]) == (2, 2, 4)
