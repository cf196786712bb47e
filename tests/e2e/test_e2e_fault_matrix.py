"""The fault matrix of in-process restarts on the local Slurm cluster, as the user (docs/preemption-and-restarts.md,
"Fault matrix"). A 2-node job of tests/jobs/faulty.py with ``launcher.restart: in-process`` written in its cluster
file gets one fault after another from outside (kill -9, SIGSTOP, a checkpoint write that meets a full disk,
``scancel --signal``); each is recorded in attempts.json and checked case by case. The job ends COMPLETED with the
parameters of an uninterrupted run (computed once, beside it), and no process of the job is left on any node.

The three nodes of the test cluster are this host: a node's processes are found in /proc (each task's
environment holds SLURM_JOB_ID). A task process (``orchestrator.runtime.launch``) whose parent is not one is a
rank's agent; its child is the rank's worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import LocalRun, SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

TESTS = Path(__file__).resolve().parents[1]
FAULTY = TESTS / "jobs" / "faulty.py"
ORCH = str(Path(sys.executable).with_name("orch"))
# 32 steps an epoch on 2 ranks; slow (step_sleep) only while the test injects faults (pace_file)
PARAMS = ["epochs=24", "samples=1024", "test_samples=64"]
SHAPE = ["--nodes", "2", "--gpus", "1", "--cpus-per-task", "1", "--collective-timeout", "5"]
LAST = 1  # rank N: the last rank of 2
WORKER_BOUND_S = 10.0  # a worker's fault recorded (claimed, decided) after it, at most (measured 0.1-2.1 s)
DISK_BOUND_S = 30.0  # a full disk met in a background write: the rank failed after it, at most (two epochs)
STEP_BOUND_S = 30.0  # an agent's death: the step ended and its restart decided, at most (measured 1.5 s)


def in_process(data: dict[str, Any]) -> None:
    """Pinned here, whatever the default of ``launcher.restart`` is."""
    data["launcher"]["restart"] = "in-process"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, start_local_run: Callable[..., LocalRun]) -> LocalRun:
    """An uninterrupted local run of the same job (``orch run --nproc 2``), started once and read when needed."""
    return start_local_run(tmp_path_factory.mktemp("reference"), FAULTY, *PARAMS)


def _environ(pid: int) -> dict[str, str] | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # gone, or another user's
        return None
    return dict(item.decode(errors="replace").partition("=")[::2] for item in raw.split(b"\0") if item)


def _ppid(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def left_behind(job_id: str) -> list[str]:
    """Every process on this host (every node of the test cluster) whose environment holds the job's id."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (env := _environ(int(entry.name))) is not None \
                and env.get("SLURM_JOB_ID") == job_id:
            with_cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            found.append(f"{entry.name} {with_cmd or '(zombie)'}")
    return found


def assert_nothing_left(job_id: str, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while (left := left_behind(job_id)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == [], f"processes of job {job_id} left after it ended: {left}"


@dataclass
class Job:
    """A running job of faulty.py and what the test does to it."""

    cluster: SlurmCluster
    job_id: str
    job_dir: Path
    pace: Path
    log: list[str] = field(default_factory=list)

    def tasks(self) -> dict[str, dict[int, int]]:
        """{"agent": {rank: pid}, "worker": {rank: pid}} of the job's task processes now."""
        procs = dict(self.cluster.job_processes(self.job_id))
        parents = {pid: _ppid(pid) for pid in procs}
        agents = {pid for pid, parent in parents.items() if parent is not None and parent not in procs}
        out: dict[str, dict[int, int]] = {"agent": {}, "worker": {}}
        for pid, parent in parents.items():
            role = "agent" if pid in agents else "worker" if parent in agents else None
            if role is not None:
                out[role][int(procs[pid].get("SLURM_PROCID", "-1"))] = pid
        return out

    def attempts(self) -> list[dict[str, Any]]:
        try:
            data = json.loads((self.job_dir / "attempts.json").read_text())
        except (OSError, ValueError):
            return []
        return data if isinstance(data, list) else []

    def epoch(self) -> int:
        """The newest epoch rank 0 finished (metrics.jsonl), 0 before the first."""
        try:
            lines = (self.job_dir / "metrics.jsonl").read_text().splitlines()
        except OSError:
            return 0
        return max((int(json.loads(x)["epoch"]) for x in lines if x.strip()), default=0)

    def wait(self, what: str, until: Callable[[], bool], timeout: float = 90.0) -> float:
        """Seconds until ``until()``; fails with the logs after ``timeout``."""
        start = time.monotonic()
        while not until():
            if time.monotonic() - start > timeout:
                raise AssertionError(f"job {self.job_id}: not {what} within {timeout:.0f} s\n"
                                     f"{self.attempts()}\n{self.log}\n{self.cluster.describe(self.job_dir)}")
            time.sleep(0.05)
        return time.monotonic() - start

    def training(self, timeout: float = 90.0) -> dict[str, dict[int, int]]:
        """Wait until both ranks' workers are there and rank 0 finished an epoch after this call."""
        epoch = self.epoch()
        self.wait(f"training past epoch {epoch}", lambda: self.epoch() > epoch and len(self.tasks()["worker"]) == 2,
                  timeout)
        return self.tasks()

    def signal(self, role: str, rank: int, signum: int) -> int:
        pid = self.tasks()[role][rank]
        os.kill(pid, signum)
        self.log.append(f"{time.time():.3f} {signal.Signals(signum).name} {role} rank {rank} pid {pid}")
        return pid

    def restarted(self, count: int, timeout: float = 60.0) -> float:
        """Seconds until attempts.json holds ``count`` entries."""
        return self.wait(f"{count} attempts recorded", lambda: len(self.attempts()) >= count, timeout)


def submit(cluster: SlurmCluster, tmp_path: Path, *extra: str, max_restarts: int = 12) -> Job:
    pace = tmp_path / "pace"
    pace.write_text("")
    cluster_yaml = cluster.derived_cluster_yaml(tmp_path / "cluster.yaml", in_process)
    job_id, job_dir = cluster.submit(str(FAULTY), *SHAPE, "--max-restarts", str(max_restarts), *extra, *PARAMS,
                                     "step_sleep=0.05", f"pace_file={pace}", cluster_yaml=cluster_yaml)
    return Job(cluster, job_id, job_dir, pace)


def finish(job: Job, reference: LocalRun, timeout: float = 180.0) -> dict[str, Any]:
    """Let the job run at full speed to its end: COMPLETED, the reference's parameters, nothing left."""
    job.pace.unlink(missing_ok=True)
    status = job.cluster.wait_done(job.job_id, timeout=timeout, job_dir=job.job_dir)
    detail = f"{status}\n{job.attempts()}\n{job.log}\n{job.cluster.describe(job.job_dir)}"
    assert status["state"] == "COMPLETED", detail
    assert_nothing_left(job.job_id)
    result = json.loads((job.job_dir / "result.json").read_text())
    assert result["param_digest"] == reference.param_digest(), detail
    return status


def both_workers(job: Job) -> None:
    workers = job.tasks()["worker"]
    for rank in (0, LAST):
        os.kill(workers[rank], signal.SIGKILL)
    job.log.append(f"{time.time():.3f} SIGKILL workers {workers}")


def twice(job: Job) -> None:
    """kill -9 of rank N's worker, then of its replacement as soon as it is there."""
    old = job.signal("worker", LAST, signal.SIGKILL)
    job.wait("a new worker for rank N", lambda: job.tasks()["worker"].get(LAST, old) != old, 30)
    job.signal("worker", LAST, signal.SIGKILL)


def agent_stopped(job: Job) -> None:
    """SIGSTOP of rank N's agent for 3 s: its worker trains on, nothing is restarted."""
    pid = job.signal("agent", LAST, signal.SIGSTOP)
    time.sleep(3)
    os.kill(pid, signal.SIGCONT)


# case -> (what the test does, the attempts it adds: (kind, blamed rank or None: any), in process)
WORKER_CASES: dict[str, tuple[Callable[[Job], object], list[tuple[str, int | None]], bool]] = {
    "kill -9 worker rank 0": (lambda job: job.signal("worker", 0, signal.SIGKILL), [("vanished", 0)], True),
    "kill -9 worker rank N": (lambda job: job.signal("worker", LAST, signal.SIGKILL), [("vanished", LAST)], True),
    "SIGSTOP worker": (lambda job: job.signal("worker", LAST, signal.SIGSTOP), [("stuck", LAST)], True),
    "two ranks at once": (both_workers, [("vanished", None)], True),
    "second failure during the recovery": (twice, [("vanished", LAST), ("vanished", LAST)], True),
    "SIGSTOP agent (3 s)": (agent_stopped, [], True),
    "kill -9 agent rank N": (lambda job: job.signal("agent", LAST, signal.SIGKILL), [("vanished", LAST)], False),
    "kill -9 agent rank 0": (lambda job: job.signal("agent", 0, signal.SIGKILL), [("vanished", 0)], False),
    # rank 0's agent sees the stopped agent's beat stand still (restarts/heartbeat.py: AGENT_STALE_S), ends the step
    "SIGSTOP agent for good": (lambda job: job.signal("agent", LAST, signal.SIGSTOP), [("stuck", LAST)], False),
}


def test_faults_one_after_another_end_completed_as_an_uninterrupted_run(slurm_cluster: SlurmCluster,
                                                                       tmp_path: Path, reference: LocalRun) -> None:
    """One job, one fault after another (WORKER_CASES), then the preemption signal during a restart: each worker
    fault is one in-process restart (two for the second failure) and the survivors keep their processes; an
    agent's death ends the step (srun's --kill-on-bad-exit) and the batch script restarts it; the preemption
    requeues the job, which then completes with the parameters of an uninterrupted run."""
    job = submit(slurm_cluster, tmp_path)
    seen: dict[str, tuple[int, float]] = {}  # case -> (its first attempt's index, fault -> recorded, s)
    for name, (inject, adds, _) in WORKER_CASES.items():
        job.training()
        first = len(job.attempts())
        inject(job)
        seen[name] = (first, job.restarted(first + len(adds)) if adds else 0.0)
        if not adds:  # nothing to record: the next case must find the same processes training
            time.sleep(1)
    job.training()
    preempted = len(job.attempts())
    job.signal("worker", LAST, signal.SIGKILL)
    signalled = job.cluster.client("scancel", "--signal=USR2", "--full", job.job_id)
    assert signalled.returncode == 0, signalled.stderr
    job.log.append(f"{time.time():.3f} scancel --signal=USR2 --full")
    job.pace.unlink()
    job.cluster.wait(job.job_id, lambda s: s["state"] == "PENDING" and (s["restarts"] or 0) >= 1, 60, job.job_dir,
                     "PENDING after the requeue")
    # the requeued job waits for its BeginTime (120 s): skip it (now+2: see test_e2e_submit's preemption test)
    update = job.cluster.client("scontrol", "update", f"JobId={job.job_id}", "StartTime=now+2")
    assert update.returncode == 0, update.stderr
    time.sleep(3)  # then, still pending, ask again: that runs the scheduler (else its next periodic pass, 60 s)
    if job.cluster.status(job.job_id)["state"] == "PENDING":  # refused if it started meanwhile: no matter
        job.cluster.client("scontrol", "update", f"JobId={job.job_id}", "StartTime=now")
    finish(job, reference, timeout=240)
    attempts = job.attempts()
    wrong = []
    for name, (_, adds, inside) in WORKER_CASES.items():
        first, seconds = seen[name]
        got = attempts[first:first + len(adds)]
        said = [(a["kind"], a["blamed_rank"] if want is not None else None)
                for a, (_, want) in zip(got, adds, strict=False)]
        if said != adds or not all(a["in_process"] is inside and a["restarted"] for a in got):
            wrong.append(f"{name}: {got}")
        # a worker's fault is decided on in seconds; an agent's (the step ends) within STEP_BOUND_S, not init_timeout
        if seconds > (WORKER_BOUND_S if inside else STEP_BOUND_S):
            wrong.append(f"{name}: recorded {seconds:.1f} s after the fault")
        print(f"{name}: recorded {seconds:.2f} s after the fault; recovery_s {[a['recovery_s'] for a in got]}; "
              f"fallback {[a.get('fallback') for a in got]}")
    print("preemption during a restart:", attempts[preempted:])
    stopped = attempts[seen["SIGSTOP agent for good"][0]]  # named as a hung rank is: its rank, its node, the cause
    if not (stopped.get("fallback") or "").startswith(f"agent_stopped: rank {LAST}'s agent gave no sign of life") \
            or not stopped["blamed_node"]:
        wrong.append(f"SIGSTOP agent for good: {stopped}")
    assert wrong == [], "\n".join(wrong) + f"\n{attempts}\n{job.log}"
    # the kill is restarted in the step, the next generation's workers start with the preemption flag the agents
    # kept (restarts/agent.py), checkpoint and end preempted; the requeued job resumes there and completes
    ends = [(a["kind"], a["in_process"], a["requeue"]) for a in attempts[preempted:]]
    assert ends == [("vanished", True, 0), ("preempted", False, 0), ("completed", False, 1)], attempts[preempted:]
    assert attempts[-1]["resumed_step"] == attempts[-2]["next_step"], attempts[-2:]


def test_a_full_disk_in_a_background_checkpoint_write_fails_the_job_with_the_cause(slurm_cluster: SlurmCluster,
                                                                                  tmp_path: Path) -> None:
    """Rank 0's next checkpoint is written to /dev/full (its temporary file is a link there: a real ENOSPC from
    the kernel, no mount needed). The write fails in the background, the training thread raises it at the next
    save, and a full disk is not restarted (it would fail again): rank 0 fails within DISK_BOUND_S, the job is FAILED,
    the file and "No space left on device" named in attempts.json and the rank's log, nothing of the job left."""
    job = submit(slurm_cluster, tmp_path)
    worker = job.training()["worker"][0]
    link = job.job_dir / "checkpoints" / f".tmp-latest.pt.{worker}"
    deadline = time.monotonic() + 30
    while True:  # a checkpoint being written holds that name until it is renamed into place: link after it
        try:
            link.symlink_to("/dev/full")
            break
        except FileExistsError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    injected = time.time()
    status = job.cluster.wait_done(job.job_id, timeout=120, job_dir=job.job_dir)
    took = time.time() - injected
    detail = f"{status}\n{job.attempts()}\n{job.cluster.describe(job.job_dir)}"
    assert status["state"] == "FAILED", detail
    [attempt] = job.attempts()
    failed = attempt["failed_at"] - injected  # the link to the rank's failure (then Slurm's end of the job)
    assert failed < DISK_BOUND_S, (failed, took, detail)
    assert attempt["kind"] == "failed" and attempt["blamed_rank"] == 0 and not attempt["restarted"], attempt
    assert "checkpoints/latest.pt: No space left on device" in (attempt["reason"] or ""), attempt
    assert (attempt["message"] or "").startswith("the disk is full (No space left on device)"), attempt
    log = (job.job_dir / "logs" / f"{job.job_id}-rank0.out").read_text(errors="replace")
    assert "orch: error: rank 0: cannot write" in log and "No space left on device" in log, log[-3000:]
    assert_nothing_left(job.job_id)
    print(f"disk full: rank 0 failed {failed:.1f} s after the link to /dev/full, FAILED after {took:.1f} s; "
          f"{attempt['message']}")


def _start_slurmd(cluster: SlurmCluster, node: str) -> None:
    """Start ``node``'s slurmd again as tests/slurm/cluster.sh starts it (idempotent: a running one stays)."""
    pidfile = cluster.state / "run" / f"slurmd-{node}.pid"
    with contextlib.suppress(OSError, ValueError):
        if Path(f"/proc/{int(pidfile.read_text())}/cmdline").read_bytes().startswith(b"/usr/sbin/slurmd"):
            return
    with (cluster.state / "log" / f"slurmd-{node}.stdout").open("ab") as out:
        subprocess.run(["/usr/sbin/slurmd", "-f", str(cluster.conf), "-N", node], stdin=subprocess.DEVNULL,
                       stdout=out, stderr=out, env={**cluster.env, "SLURM_CONF": str(cluster.conf)}, check=True)


def test_a_nodes_slurmd_killed_leaves_the_job_training(slurm_cluster: SlurmCluster, tmp_path: Path,
                                                      reference: LocalRun) -> None:
    """kill -9 of the slurmd of rank N's node: the step's tasks live under slurmstepd, not slurmd, so the job
    trains on and completes as an uninterrupted run (Slurm would mark the node DOWN only after SlurmdTimeout,
    300 s by default, with no word from it). slurmd is root's: as the user this is skipped."""
    if os.geteuid() != 0:
        pytest.skip("killing a node's slurmd needs root (the test cluster's daemons are root's)")
    job = submit(slurm_cluster, tmp_path)
    node = _environ(job.training()["agent"][LAST]) or {}
    name = node["SLURMD_NODENAME"]
    pid = int((slurm_cluster.state / "run" / f"slurmd-{name}.pid").read_text())
    try:
        os.kill(pid, signal.SIGKILL)
        job.log.append(f"{time.time():.3f} SIGKILL slurmd of {name} (pid {pid})")
        job.training()
        job.training()  # two epochs without it
    finally:  # the cluster stays usable: the node's job ends (its epilog) need its slurmd
        _start_slurmd(slurm_cluster, name)
    finish(job, reference)
    assert [(a["kind"], a["attempt"]) for a in job.attempts()] == [("completed", 0)], job.attempts()
