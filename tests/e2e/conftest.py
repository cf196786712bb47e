"""Fixtures for the end-to-end tests on the local Slurm cluster (tests/slurm/cluster.sh).

CI starts the cluster before pytest and stops it afterwards. Run by hand, the session fixture
starts it when it is not up (as root; it may apt-get the Debian packages) and stops it again at
the end, and skips every ``slurm`` test with the reason when it cannot. Each session gets its own
cluster.yaml whose ``launcher.job_root`` is a pytest temporary folder, so job folders never mix.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_SH = ROOT / "tests" / "slurm" / "cluster.sh"
TEST_JOBS = Path(__file__).resolve().parent / "jobs"
STATE_ENV = "ORCH_SLURM_STATE"
DEFAULT_STATE = "/tmp/orch-slurm"
STATUS_EVERY = 5.0  # seconds: SlurmCluster.wait asks `orch status` at least this often, and when Slurm's view changes
_CLOCK_FIELDS = frozenset({"RunTime", "LastSchedEval", "AccrueTime", "SuspendTime", "SecsPreSuspend"})
# The installed console script next to this interpreter (tests prove the real CLI).
ORCH = shutil.which("orch", path=str(Path(sys.executable).parent)) or "orch"


@dataclass(frozen=True)
class SlurmCluster:
    state: Path
    conf: Path
    cluster_yaml: Path  # this session's copy, job_root in a temporary folder
    job_root: Path
    env: dict[str, str]  # os.environ plus SLURM_CONF (for subprocesses)
    test_jobs: Path = TEST_JOBS  # job files made for these tests (probe.py)

    def orch(self, *args: str, timeout: float = 120, check: bool = False,
             env_update: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run the installed ``orch`` against this cluster (``env_update``: variables set for this call)."""
        proc = subprocess.run([ORCH, *args], capture_output=True, text=True, env={**self.env, **(env_update or {})},
                              timeout=timeout, cwd=ROOT, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"orch {' '.join(args)} exited {proc.returncode}\nstdout:\n{proc.stdout}\n"
                                 f"stderr:\n{proc.stderr}")
        return proc

    def client(self, *argv: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
        """A Slurm client (scontrol, scancel, ...) against this cluster; the test side only."""
        return subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=timeout,
                              check=False)

    def submit(self, job: str, *args: str, cluster_yaml: Path | None = None) -> tuple[str, Path]:
        """``orch submit ... --json`` -> (job id, job folder)."""
        proc = self.orch("submit", job, "--cluster", str(cluster_yaml or self.cluster_yaml), "--json", *args,
                         check=True)
        data = json.loads(proc.stdout)
        return str(data["job_id"]), Path(data["job_dir"])

    def status(self, job_id: str) -> dict[str, Any]:
        proc = self.orch("status", job_id, "--json", "--cluster", str(self.cluster_yaml), check=True)
        data = json.loads(proc.stdout)
        assert isinstance(data, dict), data
        return data

    def wait(self, job_id: str, until: Callable[[dict[str, Any]], bool], timeout: float,
             job_dir: Path | None = None, what: str = "the expected state") -> dict[str, Any]:
        """Ask ``orch status --json`` until ``until(status)``, each time Slurm's view of the job changes and every
        STATUS_EVERY seconds; on timeout fail with the logs."""
        deadline = time.monotonic() + timeout
        status: dict[str, Any] = {}
        seen, asked = "", -STATUS_EVERY
        while time.monotonic() < deadline:
            # `orch status` is a Python start-up (half a second of CPU here), scontrol a few milliseconds: ask orch
            # again when Slurm's view of the job changed, and every STATUS_EVERY seconds in any case
            view = self.slurm_view(job_id)
            if view != seen or time.monotonic() - asked >= STATUS_EVERY:
                seen, asked = view, time.monotonic()
                status = self.status(job_id)
                if until(status):
                    return status
            time.sleep(0.5)
        raise AssertionError(f"job {job_id} did not reach {what} within {timeout:.0f} s; last status "
                             f"{status}\n{self.describe(job_dir)}")

    def slurm_view(self, job_id: str) -> str:
        """What ``scontrol`` says of the job's state (each array element's), less what changes by itself (its run
        time); an unknown job says so."""
        shown = self.client("scontrol", "-o", "show", "job", job_id)
        fields = (f for f in f"{shown.stdout} {shown.stderr}".split() if f.split("=", 1)[0] not in _CLOCK_FIELDS)
        return " ".join(fields)

    def wait_done(self, job_id: str, timeout: float = 180, job_dir: Path | None = None) -> dict[str, Any]:
        return self.wait(job_id, lambda s: bool(s["terminal"]), timeout, job_dir, "a final state")

    def describe(self, job_dir: Path | None) -> str:
        """Every log of a job folder, for failure messages."""
        if job_dir is None or not (job_dir / "logs").is_dir():
            return "(no job folder logs)"
        parts = []
        for path in sorted((job_dir / "logs").iterdir()):
            text = path.read_text(errors="replace")
            parts.append(f"==> {path.name} <==\n{text[-3000:]}")
        return "\n".join(parts)

    def port_range(self) -> tuple[int, int]:
        """launcher.port_range of this cluster's cluster.yaml (a second cluster's jobs get ports of their own)."""
        low, high = yaml.safe_load(self.cluster_yaml.read_text())["launcher"]["port_range"]
        return int(low), int(high)

    def nodes(self) -> list[str]:
        """The cluster's nodes as Slurm lists them (tests ask how many rather than assume a count)."""
        listed = self.client("sinfo", "-h", "-N", "-o", "%N").stdout.split()
        return sorted(set(listed), key=lambda name: (len(name), name))

    def derived_cluster_yaml(self, path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
        """A copy of this session's cluster.yaml changed by ``edit`` (for refusal tests)."""
        data = yaml.safe_load(self.cluster_yaml.read_text())
        edit(data)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    @staticmethod
    def job_processes(job_id: str) -> list[tuple[int, dict[str, str]]]:
        """(pid, environment) of this host's task processes (orchestrator.runtime.launch) of job ``job_id``."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                raw = (entry / "environ").read_bytes()
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            environ = dict(item.decode(errors="replace").partition("=")[::2]
                           for item in raw.split(b"\0") if item)
            if environ.get("SLURM_JOB_ID") == job_id and b"orchestrator.runtime.launch" in cmdline:
                found.append((int(entry.name), environ))
        return found


def _cluster_sh(verb: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(CLUSTER_SH), verb], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    state = Path(os.environ.get(STATE_ENV) or DEFAULT_STATE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env[STATE_ENV] = str(state)
    status = _cluster_sh("status", env, 60)
    started_here = status.returncode != 0
    if started_here:
        if os.geteuid() != 0:
            pytest.skip(f"the local Slurm cluster is not up and starting it needs root: run "
                        f"sudo {CLUSTER_SH} up (state {state})")
        up = _cluster_sh("up", env, 600)
        if up.returncode != 0:
            pytest.skip(f"cannot start the local Slurm cluster ({CLUSTER_SH} up exited {up.returncode}):\n"
                        f"{up.stderr[-2000:]}")
    conf = state / "etc" / "slurm.conf"
    job_root = tmp_path_factory.mktemp("orch-jobs")
    # job folders must be reachable by the daemons (root) and by tasks; tmp is fine on one host
    env["SLURM_CONF"] = str(conf)
    env.pop("ORCH_CLUSTER", None)
    # the index of submitted jobs: this session's own, never the user's (the autouse state_dir
    # fixture is per test and comes after this session fixture copied os.environ)
    env["ORCH_STATE_DIR"] = str(tmp_path_factory.mktemp("orch-state"))
    data = yaml.safe_load((state / "cluster.yaml").read_text())
    data["launcher"]["job_root"] = str(job_root)
    # no memory of bad nodes in the shared session: a test that fails a node on purpose (preflight,
    # a killed rank) would leave it out of every later test's jobs (test_e2e_bad_nodes.py turns it on)
    data["launcher"]["bad_node_ttl"] = 0
    cluster_yaml = job_root.parent / "cluster.yaml"
    cluster_yaml.write_text(yaml.safe_dump(data, sort_keys=False))
    yield SlurmCluster(state=state, conf=conf, cluster_yaml=cluster_yaml, job_root=job_root, env=env)
    if started_here:  # leave the machine as we found it
        _cluster_sh("down", env, 120)


# The preemption tests' uninterrupted run: smoke on 2 nodes x 2 ranks, one CPU per task (so that it fits beside the
# run the test preempts), about 0.5 s per epoch; its parameters once, for the CLI's arguments and the API's keywords
SMOKE_REFERENCE_PARAMS = {"epochs": 12, "samples": 1024, "test_samples": 0, "batch_size": 8}
SMOKE_REFERENCE = ("--nodes", "2", "--gpus", "2", "--cpus-per-task", "1",
                   *(f"{key}={value}" for key, value in SMOKE_REFERENCE_PARAMS.items()))


@pytest.fixture(scope="session")
def smoke_reference(slurm_cluster: SlurmCluster) -> tuple[str, Path]:
    """One uninterrupted run of SMOKE_REFERENCE, submitted when a test first asks (job id, job folder): the CLI's and
    the API's preemption tests both compare their resumed run's parameters with it, one reference run for both."""
    return slurm_cluster.submit("smoke", *SMOKE_REFERENCE)


@dataclass(frozen=True)
class Preempted:
    """The preempted run of SMOKE_REFERENCE, made once (``preempted_smoke``): its API handle, what
    ``orch status --json`` and the handle's status said while it waited requeued, whether W&B tracking was on."""

    handle: Any  # orchestrator.api.JobHandle
    requeued: dict[str, Any]  # orch status --json: PENDING after the requeue
    requeued_api: Any  # the handle's status() then (orchestrator.status.JobStatus)
    tracked: bool  # --track wandb (offline), log_every=1: the tracking test reads its steps and W&B runs


@pytest.fixture(scope="session")
def preempted_smoke(slurm_cluster: SlurmCluster, smoke_reference: tuple[str, Path]) -> Preempted:
    """SMOKE_REFERENCE submitted with ``orch submit``, preempted after its first epoch (``scancel --signal=USR2
    --full``, as a preemption does: the batch shell and the steps) and requeued; its restart let through
    (``StartTime=now+2``) and left to run. One job for the three tests that preempt this run and only read what came
    of it: the CLI's (test_e2e_submit.py: orch status, the logs and metrics, the parameters against
    ``smoke_reference``), the API's (test_e2e_api.py: a JobHandle's status, logs and result; api.submit queues through
    the same orchestrator.service.queue, and test_api_submit_2x2 submits through it) and the tracking's
    (test_e2e_tracking.py: one step sequence and one W&B run across the requeue). W&B tracking (offline) and a log
    line every step change no parameter, so the one job serves all three: 3 preempted jobs -> 1. The reference is
    submitted first, so both run side by side."""
    from orchestrator import api

    tracked = importlib.util.find_spec("wandb") is not None
    extra = ("--track", "wandb", "--env", "WANDB_MODE=offline", "log_every=1") if tracked else ()
    job_id, job_dir = slurm_cluster.submit("smoke", *SMOKE_REFERENCE, *extra)
    handle = api.JobHandle(job_id=job_id, job_dir=job_dir, executor="slurm")
    metrics = job_dir / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while not (metrics.is_file() and metrics.read_text().strip()):  # mid-training: after the first epoch
        assert time.monotonic() < deadline, f"no epoch after 120 s\n{slurm_cluster.describe(job_dir)}"
        time.sleep(0.1)
    signalled = slurm_cluster.client("scancel", "--signal=USR2", "--full", job_id)
    assert signalled.returncode == 0, signalled.stderr
    # the job checkpoints, requeues itself, and waits for its BeginTime (120 s): asked while it waits
    requeued = slurm_cluster.wait(job_id, lambda s: s["state"] == "PENDING" and (s["restarts"] or 0) >= 1, 60,
                                  job_dir, "PENDING after a requeue")
    with pytest.MonkeyPatch.context() as patch:  # the handle asks Slurm from this process: the cluster's
        for key in [k for k in os.environ if k.startswith("SLURM_")]:
            patch.delenv(key)
        patch.setenv("SLURM_CONF", slurm_cluster.env["SLURM_CONF"])
        requeued_api = handle.status()
    # then skip the wait; not "now": a restart within the second of the requeue can meet slurmd's revocation of the
    # old run's credential (Slurm compares whole seconds) and fail with "Job credential revoked"
    update = slurm_cluster.client("scontrol", "update", f"JobId={job_id}", "StartTime=now+2")
    assert update.returncode == 0, update.stderr
    return Preempted(handle=handle, requeued=requeued, requeued_api=requeued_api, tracked=tracked)


@dataclass(frozen=True)
class PreemptedScript:
    """tests/scripts/preemptible.py on 2 nodes, preempted once (``preempted_script``): what the submit said on stderr,
    the job, and the folder the script wrote its ``seen<rank>-<restart>.json`` to."""

    submit_stderr: str
    job_id: str
    job_dir: Path
    out: Path


@pytest.fixture(scope="session")
def preempted_script(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> PreemptedScript:
    """``orch submit preemptible.py --nodes 2 --gpus 1 --track wandb`` from a folder of its own, with a hostile
    SBATCH_TIMELIMIT and SBATCH_PARTITION in the submitting shell, signalled (``scancel --signal=USR2 --full``) once
    both ranks are ready, requeued (exit 75) and COMPLETED. One job for the two tests that read what its ranks saw
    before and after the requeue (2 preempted jobs -> 1): test_e2e_script.py's (the restart count, the run id, the job
    folder, the next master port) and test_e2e_tracking.py's (the W&B run id, the same across the requeue; the
    script itself never imports wandb: it records what it was given, so the tracker changes nothing else)."""
    cwd = tmp_path_factory.mktemp("preempted-script")
    out = cwd / "out"
    env = {**slurm_cluster.env, "SBATCH_TIMELIMIT": "1", "SBATCH_PARTITION": "nosuchpartition"}
    proc = subprocess.run([ORCH, "submit", str(ROOT / "tests" / "scripts" / "preemptible.py"), "--nodes", "2",
                           "--gpus", "1", "--track", "wandb", "--cluster", str(slurm_cluster.cluster_yaml), "--json",
                           "--", "--out", str(out)], cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    job_id, job_dir = str(data["job_id"]), Path(data["job_dir"])
    deadline = time.monotonic() + 120
    while not all((out / f"ready{r}").exists() for r in (0, 1)):
        assert time.monotonic() < deadline, slurm_cluster.describe(job_dir)
        time.sleep(0.2)
    signalled = slurm_cluster.client("scancel", "--signal=USR2", "--full", job_id)
    assert signalled.returncode == 0, signalled.stderr
    slurm_cluster.wait(job_id, lambda s: s["state"] == "PENDING" and (s["restarts"] or 0) >= 1, 60, job_dir,
                       "PENDING after a requeue")
    update = slurm_cluster.client("scontrol", "update", f"JobId={job_id}", "StartTime=now+2")  # now+2: see above
    assert update.returncode == 0, update.stderr
    final = slurm_cluster.wait_done(job_id, timeout=180, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    return PreemptedScript(submit_stderr=proc.stderr, job_id=job_id, job_dir=job_dir, out=out)


@dataclass(frozen=True)
class SpinHang:
    """tests/jobs/hang.py on 2 nodes, rank 1 spinning in Python at step 3 (``spin_hang``): the cluster file it ran
    with (bad-node memory on, in a job root of its own: ``root``), the job and its final ``orch status --json``."""

    cluster_yaml: Path
    root: Path
    job_id: str
    job_dir: Path
    final: dict[str, Any]


@pytest.fixture(scope="session")
def spin_hang(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> SpinHang:
    """One FAILED job for the two tests that read it (2 jobs -> 1): test_e2e_blame.py's spinning rank, named by
    ``orch status`` and ``orch logs``, and test_e2e_bad_nodes.py's hang that records its node. Its cluster file has
    ``launcher.collective_timeout: 6`` (the blame test's) and bad-node memory on (``bad_node_ttl`` one day, the
    session's file has 0) in a job root of its own, as test_e2e_bad_nodes.py's ``_remembering`` writes it; the memory
    records the node after the blame, and changes nothing of it."""
    folder = tmp_path_factory.mktemp("spin-hang")
    root = folder / "jobs"
    root.mkdir()

    def edit(data: dict[str, Any]) -> None:
        data["launcher"].update(job_root=str(root), bad_node_ttl=86400, collective_timeout=6)

    cluster_yaml = slurm_cluster.derived_cluster_yaml(folder / "cluster.yaml", edit)
    job_id, job_dir = slurm_cluster.submit(str(ROOT / "tests" / "jobs" / "hang.py"), "--nodes", "2", "--gpus", "1",
                                           "--cpus-per-task", "1", "fault=spin", "fault_rank=1", "fault_step=3",
                                           "epochs=3", cluster_yaml=cluster_yaml)
    final = slurm_cluster.wait_done(job_id, timeout=300, job_dir=job_dir)
    return SpinHang(cluster_yaml=cluster_yaml, root=root, job_id=job_id, job_dir=job_dir, final=final)


class LocalRun:
    """An uninterrupted local run (``orch run JOB --nproc 2 --json PARAMS``), started once and read when needed."""

    def __init__(self, root: Path, job: Path, *params: str) -> None:
        env = {**os.environ, "ORCH_DATA_DIR": os.environ.get("ORCH_DATA_DIR", str(root))}
        self.proc = subprocess.Popen([ORCH, "run", str(job), "--nproc", "2", "--job-root", str(root), "--json",
                                      *params], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.digest: str | None = None

    def param_digest(self) -> str:
        if self.digest is None:
            out, err = self.proc.communicate(timeout=300)
            assert self.proc.returncode == 0, err[-3000:]
            self.digest = str(json.loads(out)["result"]["param_digest"])
        return self.digest


@pytest.fixture(scope="session")
def start_local_run() -> Iterator[Callable[..., LocalRun]]:
    """``start_local_run(root, job, *params)``: a LocalRun, started now; any still running at the session's end is
    killed."""
    started: list[LocalRun] = []

    def start(root: Path, job: Path, *params: str) -> LocalRun:
        started.append(LocalRun(root, job, *params))
        return started[-1]

    yield start
    for run in started:
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.communicate()


@pytest.fixture(scope="session")
def faulty_epochs2(tmp_path_factory: pytest.TempPathFactory, start_local_run: Callable[..., LocalRun]) -> LocalRun:
    """tests/jobs/faulty.py ``epochs=2`` run uninterrupted on this machine, once: the parameters that the in-process
    restarts of a killed, a stopped (test_e2e_inprocess_restarts.py) and a stuck rank (test_e2e_hang_places.py) must
    end with (3 local runs -> 1). Started when a test first asks, so it runs beside that test's job."""
    return start_local_run(tmp_path_factory.mktemp("faulty-epochs2"), ROOT / "tests" / "jobs" / "faulty.py", "epochs=2")


@pytest.fixture
def slurm_env(slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> SlurmCluster:
    """The cluster, with SLURM_CONF set in this process too (for in-process API calls)."""
    for key in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    monkeypatch.delenv("ORCH_CLUSTER", raising=False)
    return slurm_cluster
