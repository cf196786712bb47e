"""Each launch style for real (orchestrator/spec/launch.py): ``orch run SCRIPT --nproc 2`` of a script written
for another launcher, compared rank by rank with that launcher running the same unmodified script:

* ``local-rank-arg``: ``python -m torch.distributed.launch --nproc_per_node 2`` (the legacy launcher itself);
* ``per-node``: the script's own ``mp.spawn``, started by hand once per node as the seed wiki does
  (``-n 1 -g 2 -nr 0`` with MASTER_ADDR/MASTER_PORT exported);
* ``slurm``: two processes with the variables srun gives two tasks of one node
  (``taskenv.simulate_slurm_task_envs``, the dry run's own model of srun).

"It ran" is not the check: every rank's parameters after training equal the reference's, and each rank
saw its own local rank / node values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, ROOT, clean_environ, once_more_on_teardown_abort

from orchestrator.env.taskenv import simulate_slurm_task_envs
from orchestrator.local.rankenv import free_port

pytestmark = pytest.mark.slow

SCRIPTS = ROOT / "tests" / "scripts"
TIMEOUT = 180


def _env(**extra: str) -> dict[str, str]:
    env = clean_environ(PYTHONPATH=str(ROOT), **extra)
    env.pop("OMP_NUM_THREADS", None)
    return env


def _orch_run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, "run", *args, ], cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)


def _records(out: Path, n: int) -> list[dict[str, Any]]:
    return [json.loads((out / f"rank{r}.json").read_text(encoding="utf-8")) for r in range(n)]


def _job(jobs: Path) -> dict[str, Any]:
    [job_dir] = [p for p in jobs.iterdir() if (p / "job.json").is_file()]
    data: dict[str, Any] = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))
    return data


def _same_params(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    for mine, ref in zip(ours, theirs, strict=True):
        assert mine["world"] == ref["world"] == len(ours)
        assert mine["params"] == ref["params"]  # bit for bit: the same world trained the same steps
    assert ours[0]["params"] == ours[1]["params"]  # one world: DDP kept the ranks equal


def test_local_rank_arg_script_matches_torch_distributed_launch(tmp_path: Path) -> None:
    script = SCRIPTS / "local_rank_arg.py"
    ref = once_more_on_teardown_abort(lambda: subprocess.run(
        [sys.executable, "-m", "torch.distributed.launch", "--nproc_per_node", "2", "--master_port", str(free_port()),
         str(script), "--out", str(tmp_path / "ref")],
        env=_env(), capture_output=True, text=True, timeout=TIMEOUT, check=False))  # (it names SIGABRT as mp.spawn)
    assert ref.returncode == 0, ref.stderr
    proc = _orch_run(tmp_path, str(script), "--nproc", "2", "--job-root", str(tmp_path / "jobs"), "--",
                     "--out", str(tmp_path / "ours"))
    assert proc.returncode == 0, proc.stderr
    ours, theirs = _records(tmp_path / "ours", 2), _records(tmp_path / "ref", 2)
    assert [r["local_rank_arg"] for r in ours] == [r["local_rank_arg"] for r in theirs] == [0, 1]
    _same_params(ours, theirs)
    launch = _job(tmp_path / "jobs")["script"]["launch"]
    assert (launch["style"], launch["how"], launch["flag"]) == ("local-rank-arg", "detected", "--local_rank")
    assert "DDP015" not in proc.stderr  # the style answers it: the script runs as written


def test_per_node_script_matches_its_own_spawn_started_by_hand(tmp_path: Path) -> None:
    script = SCRIPTS / "spawn_per_node.py"
    by_hand = once_more_on_teardown_abort(lambda: subprocess.run(
        [sys.executable, str(script), "-n", "1", "-g", "2", "-nr", "0", "--out", str(tmp_path / "ref")], cwd=SCRIPTS,
        capture_output=True, text=True, timeout=TIMEOUT,
        env=_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port())), check=False))
    assert by_hand.returncode == 0, by_hand.stderr
    jobs = [tmp_path / "jobs", tmp_path / "jobs-again"]
    proc = once_more_on_teardown_abort(lambda: _orch_run(
        tmp_path, str(script), "--nproc", "2", "--job-root", str(jobs.pop(0)), "--", "-n", "{nnodes}", "-g",
        "{nproc_per_node}", "-nr", "{node_rank}", "--out", str(tmp_path / "ours")))
    assert proc.returncode == 0, proc.stderr
    ours = _records(tmp_path / "ours", 2)
    _same_params(ours, _records(tmp_path / "ref", 2))
    for record in ours:  # the node's launcher's variables, no rank of its own (its processes take theirs)
        env = record["env"]
        assert (env["NODE_RANK"], env["NNODES"], env["NPROC_PER_NODE"], env["WORLD_SIZE"]) == ("0", "1", "2", "2")
        assert env["RANK"] is None and env["LOCAL_RANK"] is None and env["MASTER_ADDR"] == "127.0.0.1"
    job = _job(tmp_path / ("jobs-again" if not jobs else "jobs"))
    assert (job["tasks_per_node"], job["script"]["launch"]["procs_per_task"]) == (1, 2)
    assert "1 local process(es) (a per-node script: it starts 2 rank(s) itself)" in proc.stdout
    assert "DDP014" not in proc.stderr
    assert "names a placeholder" not in proc.stderr  # its node flags get orch's values: no warning


def test_per_node_script_without_its_placeholders_is_warned_with_the_arguments_to_add(tmp_path: Path) -> None:
    """Without ``-- -n {nnodes} -g {nproc_per_node} -nr {node_rank}`` the script keeps its flags' defaults (-g 1: one
    process, a world of 1, silently): orch run says so before it starts, with the whole argument line to pass."""
    out = tmp_path / "out"
    proc = _orch_run(tmp_path, str(SCRIPTS / "spawn_per_node.py"), "--nproc", "2", "--job-root", str(tmp_path / "jobs"),
                     "--", "--out", str(out), "--steps", "1")
    assert "orch: warning: spawn_per_node.py starts its own processes on each node" in proc.stderr, proc.stderr
    assert (f"HINT: let orch fill them on each node: -- --out {out} --steps 1 -n {{nnodes}} -g {{nproc_per_node}} "
            "-nr {node_rank}") in proc.stderr
    # and the world check, watching the processes it spawned, says what came of it
    assert ("orch: warning: the job's 2 ranks never formed a process group: the spawned rank 0 initialised a world "
            "of 1 rank (gloo) at orch's rendezvous and trained alone") in proc.stdout, proc.stdout  # rank 0's lines
    assert proc.returncode == 0 and json.loads((out / "rank0.json").read_text())["world"] == 1


def test_per_node_script_whose_spawned_world_is_short_fails_under_strict_world(tmp_path: Path) -> None:
    proc = _orch_run(tmp_path, str(SCRIPTS / "spawn_per_node.py"), "--nproc", "2", "--strict-world", "--job-root",
                     str(tmp_path / "jobs"), "--", "--out", str(tmp_path / "out"), "--steps", "1")
    assert proc.returncode != 0, proc.stderr
    assert "ConfigError: the job's 2 ranks never formed a process group: the spawned rank 0" in proc.stdout
    assert not (tmp_path / "out" / "rank0.json").exists()  # stopped at the join, before it trained


def test_slurm_script_matches_srun_variables(tmp_path: Path) -> None:
    script = SCRIPTS / "slurm_native.py"

    def by_srun_variables() -> subprocess.CompletedProcess[str]:
        """The two tasks as srun starts them; one result (the first failure's, SIGABRT named as mp.spawn does)."""
        port = free_port()
        tasks = [subprocess.Popen([sys.executable, str(script), "--out", str(tmp_path / "ref")],
                                  env=_env(**environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for environ in simulate_slurm_task_envs(["localhost"], 2, "4242", 0, "127.0.0.1", port)]
        ended = [(task, *task.communicate(timeout=TIMEOUT)) for task in tasks]
        failed = [(t.returncode, out, err) for t, out, err in ended if t.returncode != 0]
        if not failed:
            return subprocess.CompletedProcess(script, 0, "", "")
        code, out, err = failed[0]
        return subprocess.CompletedProcess(script, code, out, err + ("\nSIGABRT" if code == -6 else ""))

    ref = once_more_on_teardown_abort(by_srun_variables)
    assert ref.returncode == 0, ref.stderr
    jobs = [tmp_path / "jobs", tmp_path / "jobs-again"]
    proc = once_more_on_teardown_abort(lambda: _orch_run(
        tmp_path, str(script), "--nproc", "2", "--job-root", str(jobs.pop(0)), "--", "--out", str(tmp_path / "ours")))
    assert proc.returncode == 0, proc.stderr
    ours, theirs = _records(tmp_path / "ours", 2), _records(tmp_path / "ref", 2)
    _same_params(ours, theirs)
    assert [r["slurm"] for r in ours] == [r["slurm"] for r in theirs]  # the same place as srun gives
    assert _job(tmp_path / ("jobs-again" if not jobs else "jobs"))["script"]["launch"]["style"] == "slurm"


def test_launch_override_runs_a_spawning_script_as_torchrun_would(tmp_path: Path) -> None:
    """--launch env forces today's style: the spawning script is one task per rank again (DDP014 says why
    that is wrong), and the job folder records the choice as asked."""
    proc = _orch_run(tmp_path, str(SCRIPTS / "ddp_train.py"), "--nproc", "1", "--launch", "slurm", "--job-root",
                     str(tmp_path / "jobs"), "--", "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    launch = _job(tmp_path / "jobs")["script"]["launch"]
    assert (launch["style"], launch["how"], launch["why"]) == ("slurm", "asked", "--launch slurm")
    assert os.path.isfile(tmp_path / "o" / "rank0.json")
