"""``srun orch exec SCRIPT`` inside a hand-written batch script, through the real CLI: srun's tasks are faked as
processes on this machine with the variables Slurm gives them (gloo on CPU), Slurm's clients are
test_status_logs.py's stand-ins. The same unmodified script under torchrun ends with the same parameters;
the doctor's refusal stops every task alike; outside a step orch exec says where it belongs; ``orch status`` and
``orch logs`` read the step's folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, ROOT, clean_environ, once_more_on_teardown_abort, run_cli
from test_logs_script_jobs import squeue_line
from test_status_logs import DISABLED, FakeSlurm

from orchestrator.local.rankenv import free_port

DDP = ROOT / "tests" / "scripts" / "ddp_train.py"
REFUSED = ROOT / "tests" / "doctor" / "fixtures" / "case_ddp002_bad.py"
TIMEOUT = 240
JOB_ID = "4711"


def task_env(rank: int, ntasks: int, **extra: str) -> dict[str, str]:
    """What srun gives task ``rank`` of a one-node step of ``ntasks`` tasks (no GPUs)."""
    env = clean_environ(
        PYTHONPATH=str(ROOT), SLURM_JOB_ID=JOB_ID, SLURM_JOB_NAME="byo", SLURM_STEP_ID="0",
        SLURM_JOB_NODELIST="localhost", SLURM_STEP_NODELIST="localhost", SLURM_STEP_NUM_NODES="1",
        SLURM_STEP_NUM_TASKS=str(ntasks), SLURM_STEP_TASKS_PER_NODE=str(ntasks), SLURM_NODEID="0",
        SLURM_PROCID=str(rank), SLURM_LOCALID=str(rank), CUDA_VISIBLE_DEVICES="", MASTER_PORT=str(free_port()),
        **extra)
    env.pop("OMP_NUM_THREADS", None)
    return env


def srun(cwd: Path, *argv: str, ntasks: int = 2, **extra: str) -> list[subprocess.CompletedProcess[bytes]]:
    """``srun orch exec ARGV`` of ``ntasks`` tasks, all started at once; each task's result."""
    port = free_port()
    procs = [subprocess.Popen([ORCH, "exec", *argv], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**task_env(rank, ntasks, **extra), "MASTER_PORT": str(port)})
             for rank in range(ntasks)]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=TIMEOUT)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def _records(out: Path, n: int) -> list[dict[str, Any]]:
    return [json.loads((out / f"rank{r}.json").read_text(encoding="utf-8")) for r in range(n)]


@pytest.mark.slow
def test_two_tasks_train_as_one_world_as_under_torchrun(fake_slurm: FakeSlurm, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    fake_slurm.set({"squeue": {"stdout": squeue_line(JOB_ID, "RUNNING", "byo", "2026-11-25T09:00:00")}})
    jobs, ours, theirs = tmp_path / "jobs", tmp_path / "exec-out", tmp_path / "torchrun-out"
    tasks = srun(tmp_path, str(DDP), "--job-root", str(jobs), "--", "--out", str(ours), "--steps", "4")
    for task in tasks:
        assert task.returncode == 0, task.stderr.decode(errors="replace")
    # plain torchrun aborts now and then in gloo's teardown under load (the shared rule: once more)
    torchrun = once_more_on_teardown_abort(lambda: subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
         "--master-port", str(free_port()), str(DDP), "--out", str(theirs), "--steps", "4"], cwd=tmp_path,
        env=task_env(0, 2), capture_output=True, text=True, errors="replace", timeout=TIMEOUT, check=False))
    assert torchrun.returncode == 0, torchrun.stderr
    job_dir = jobs / f"byo-{JOB_ID}.0"
    differ = {"MASTER_PORT", "MASTER_ADDR", "TORCHELASTIC_RUN_ID", "OMP_NUM_THREADS", "TORCHELASTIC_MAX_RESTARTS",
              "TORCHELASTIC_ERROR_FILE"}  # torchrun's error file is in its own temporary folder, orch's in the job's
    for rank, (mine, torch_run) in enumerate(zip(_records(ours, 2), _records(theirs, 2), strict=True)):
        assert mine["params"] == pytest.approx(torch_run["params"], rel=1e-6, abs=1e-7)  # the same training
        assert (mine["world"], mine["backend"]) == (2, "gloo")
        assert {k: v for k, v in mine["env"].items() if k not in differ} == \
               {k: v for k, v in torch_run["env"].items() if k not in differ}
        assert (mine["env"]["RANK"], mine["env"]["TORCHELASTIC_RUN_ID"]) == (str(rank), JOB_ID)
        assert mine["env"]["TORCHELASTIC_ERROR_FILE"] == str(job_dir / "logs" / f"rank{rank}.error.json")
        assert mine["env"]["MASTER_ADDR"] == "localhost"  # the step's first node
        outcome = json.loads((job_dir / "logs" / f"rank{rank}.outcome.json").read_text())
        assert (outcome["kind"], outcome["run"], outcome["world_size"]) == ("completed", JOB_ID, 2)
    assert b"job folder " + str(job_dir).encode() in tasks[0].stderr
    assert tasks[1].stderr == b""  # the doctor's findings and the folder's line: rank 0's alone
    config = json.loads((job_dir / "job.json").read_text())
    assert (config["mode"], config["nodes"], config["tasks_per_node"], config["job_name"]) == ("slurm", 1, 2, "byo")
    assert (job_dir / "job_id").read_text() == JOB_ID + "\n"
    recorded = json.loads((job_dir / "submitted.json").read_text())  # what orch status compares with Slurm's
    assert (recorded["submitted"], recorded["job_name"]) == ("2026-11-25T09:00:00", "byo")
    assert sorted(p.name for p in jobs.iterdir()) == [job_dir.name]  # one folder for the step, made once

    code, out, err = run_cli(["status", str(job_dir)], capsys)
    assert code == 0, err
    assert JOB_ID in out and "RUNNING" in out and "byo" in out and "reused" not in out + err
    code, out, err = run_cli(["logs", str(job_dir), "--all-ranks"], capsys)
    assert code == 0, err


@pytest.mark.slow
def test_the_ranks_output_is_in_their_logs_and_in_sruns(fake_slurm: FakeSlurm, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "hello.py"
    script.write_text("import os, sys\nprint('hello from', os.environ['RANK'])\n"
                      "print('warn', os.environ['WORLD_SIZE'], file=sys.stderr)\n")
    tasks = srun(tmp_path, str(script), "--job-root", str(tmp_path / "jobs"))
    assert [t.returncode for t in tasks] == [0, 0], [t.stderr for t in tasks]
    assert [t.stdout for t in tasks] == [b"hello from 0\n", b"hello from 1\n"]
    assert all(t.stderr.endswith(b"warn 2\n") for t in tasks)
    job_dir = tmp_path / "jobs" / f"byo-{JOB_ID}.0"
    for rank in (0, 1):
        assert sorted((job_dir / "logs" / f"{JOB_ID}-rank{rank}.out").read_text().splitlines()) == \
               [f"hello from {rank}", "warn 2"]
    code, out, _ = run_cli(["logs", str(job_dir), "--rank", "1"], capsys)
    assert code == 0 and "hello from 1" in out


@pytest.mark.slow
def test_a_failing_rank_is_blamed_in_the_folder(fake_slurm: FakeSlurm, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "fail.py"
    script.write_text("import os, sys\nprint('rank', os.environ['RANK'], 'gives up')\n"
                      "sys.exit(5 if os.environ['RANK'] == '1' else 0)\n")
    tasks = srun(tmp_path, str(script), "--job-root", str(tmp_path / "jobs"))
    assert [t.returncode for t in tasks] == [0, 5]
    job_dir = tmp_path / "jobs" / f"byo-{JOB_ID}.0"
    outcome = json.loads((job_dir / "logs" / "rank1.outcome.json").read_text())
    assert (outcome["kind"], outcome["exit_code"]) == ("failed", 5)
    fake_slurm.set({"squeue": {"stdout": squeue_line(JOB_ID, "FAILED", "byo")}, "sacct": DISABLED})
    code, out, err = run_cli(["status", str(job_dir)], capsys)
    assert code == 0 and "FAILED" in out and "rank 1" in out and "reused" not in out, out + err
    # squeue did not answer rank 0 (no canned answer then): Slurm's SubmitTime is unknown, only the name compared
    assert json.loads((job_dir / "submitted.json").read_text())["submitted"] == "Unknown"
    code, out, err = run_cli(["logs", str(job_dir)], capsys)
    assert code == 0 and "look at rank 1" in err and "rank 1 gives up" in err, out + err


def test_a_script_the_doctor_refuses_stops_every_task_alike(fake_slurm: FakeSlurm, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    tasks = srun(tmp_path, str(REFUSED), "--job-root", str(jobs))
    assert [t.returncode for t in tasks] == [2, 2]
    errors = [t.stderr.decode().strip().splitlines()[-2:] for t in tasks]
    assert errors[0] == errors[1] and "orch doctor found errors (DDP002)" in errors[0][0], errors
    assert b"DDP002 error" in tasks[0].stderr.split(b"orch: error")[0]  # the finding itself: rank 0 prints it
    assert not jobs.exists()  # nothing was launched, no folder made


@pytest.mark.parametrize(("env", "words"), [
    ({}, ["SLURM_JOB_ID is not set", "orch run train.py"]),
    ({"SLURM_JOB_ID": "12"}, ["not in an srun step", "srun orch exec"]),
])
def test_outside_a_step_orch_exec_says_where_it_belongs(env: dict[str, str], words: list[str],
                                                        clean_env: pytest.MonkeyPatch, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in env.items():
        clean_env.setenv(name, value)
    code, _, err = run_cli(["exec", str(DDP), "--job-root", str(tmp_path / "jobs"), "--", "--out", "x"], capsys)
    assert code == 2 and all(word in err for word in words), err
    assert not (tmp_path / "jobs").exists()


def test_a_job_file_is_no_script_for_orch_exec(clean_env: pytest.MonkeyPatch, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in task_env(0, 1).items():
        if name.startswith("SLURM_"):
            clean_env.setenv(name, value)
    code, _, err = run_cli(["exec", "smoke", "--job-root", str(tmp_path / "jobs")], capsys)
    assert code == 2 and "not one" in err and "orch submit" in err, err


@pytest.mark.parametrize("rank", [0, 2])
def test_unequal_tasks_per_node_are_refused_by_every_task_before_a_folder(
        rank: int, clean_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = {**task_env(rank, 3), "SLURM_STEP_NODELIST": "localhost,127.0.0.1", "SLURM_STEP_NUM_NODES": "2",
           "SLURM_STEP_TASKS_PER_NODE": "2,1", "SLURM_NODEID": str(rank // 2), "SLURM_LOCALID": str(rank % 2)}
    for name, value in env.items():
        if name.startswith("SLURM_"):
            clean_env.setenv(name, value)
    code, _, err = run_cli(["exec", str(DDP), "--job-root", str(tmp_path / "jobs"), "--", "--out", "x"], capsys)
    assert code == 2 and "same number of tasks on every node" in err, err  # rank 2 does not wait for rank 0
    assert not any((tmp_path / "jobs").glob("*/job.json"))


def test_orch_exec_takes_what_orch_run_takes_for_a_script() -> None:
    from orchestrator.cli import build_parser

    parser = build_parser("exec")
    args = parser.parse_args(["exec", "-m", "pkg.train", "--no-check", "--ignore", "DDP001", "--track", "wandb",
                              "--job-root", "/j", "--cluster", "c"])
    assert (args.module, args.no_check, args.ignore, args.track, args.job_root) == \
           ("pkg.train", True, ["DDP001"], ["wandb"], "/j")
    assert os.path.basename(ORCH) == "orch"
