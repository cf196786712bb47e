"""``orch run``: real processes, gloo on CPU, through the installed ``orch`` and ``main([...])``.

The reference is one uninterrupted 2-rank run of tests/jobs/faulty.py (the smoke model with faults
that are off by default); resumed, preempted and killed runs must end with bit-identical parameters.
The reference and the failed runs are made once per session (tests/local/sharedlocal.py): other modules read
the same runs (tests/restarts/test_agent.py the reference, test_runner_dying_ranks.py and
test_runner_errors_once.py the failures).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sharedruns
from local import sharedlocal
from support import ORCH, clean_environ

from orchestrator.spec.runconfig import CHECKPOINT_DIR, LOG_DIR, METRICS_FILE, REQUEUE_FILE, RESULT_FILE

FAULTY = sharedlocal.FAULTY
INIT_TIMEOUT = sharedlocal.INIT_TIMEOUT  # launcher.init_timeout of the test cluster: rendezvous, start-up, checkpoints
COLLECTIVE_TIMEOUT = sharedlocal.COLLECTIVE_TIMEOUT  # launcher.collective_timeout: a stuck collective while training
RUN_TIMEOUT = 180  # a run that takes longer than this hangs: the test fails instead of waiting
# 1001 samples on 2 ranks: the sampler pads one sample, which the metrics must not count
PARAMS = sharedlocal.FAULTY_PARAMS
METRIC_KEYS = {"epoch", "train_loss", "train_acc", "test_loss", "test_acc", "samples_per_s", "seconds",
               "world_size"}

pytestmark = pytest.mark.slow


@dataclass
class Run:
    proc: subprocess.CompletedProcess[str]
    summary: dict[str, Any]

    @property
    def job_dir(self) -> Path:
        return Path(self.summary["job_dir"])

    @property
    def digest(self) -> str:
        result = self.summary["result"]
        assert result is not None, self.proc.stderr[-3000:]
        digest: str = result["param_digest"]
        return digest

    def log(self, rank: int) -> str:
        return (self.job_dir / LOG_DIR / f"local-rank{rank}.out").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def cluster_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sharedlocal.cluster(tmp_path_factory.mktemp("local"))


def start(cluster: Path, *args: str) -> subprocess.Popen[str]:
    argv = [ORCH, "run", "--cluster", str(cluster), "--json", *args]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=clean_environ())


def finish(proc: subprocess.Popen[str]) -> Run:
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"orch run hung for {RUN_TIMEOUT} s:\n{err[-3000:]}")
    completed = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert out.strip(), f"no JSON summary on stdout; stderr:\n{err[-3000:]}"
    return Run(completed, json.loads(out))


def orch_run(cluster: Path, *args: str) -> Run:
    return finish(start(cluster, *args))


def faulty_args(*params: str) -> list[str]:
    """The job and its overrides: PARAMS, with ``params`` replacing keys of the same name."""
    merged = dict(p.split("=", 1) for p in (*PARAMS, *params))
    return [str(FAULTY), "--nproc", "2", *(f"{k}={v}" for k, v in merged.items())]


def run_faulty(cluster: Path, *params: str) -> Run:
    return orch_run(cluster, *faulty_args(*params))


def resume(cluster: Path, job_dir: Path, *params: str) -> Run:
    return orch_run(cluster, "--resume", str(job_dir), *params)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


live_processes_of = sharedlocal.processes_naming


@pytest.fixture(scope="module")
def straight(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The reference: 2 ranks, 2 epochs, no interruption (made once per session: sharedlocal.faulty_reference)."""
    proc = sharedlocal.faulty_reference(tmp_path_factory)
    return Run(proc, json.loads(proc.stdout))


# The failed runs, one per fault: (rank, step) of the fault, each run made once per session and read by other
# modules too (sharedlocal.faulty_failure). A kill in epoch 2 (step 40) is test_killed_rank_leaves_a_checkpoint's
# run; a collective only rank 0 enters (its message names no rank) is test_runner_dying_ranks's rank-0 run; the
# raise on rank 1 at step 3 is test_runner_errors_once's.
FAULT_AT = {"raise": (1, 3), "kill": (1, 40), "skip_barrier": (0, 40), "exit0": (1, 3)}


def failed_run(tmp_path_factory: pytest.TempPathFactory, fault: str) -> tuple[Run, list[int]]:
    """The run with ``fault`` (FAULT_AT) and the processes of its job folder left as it ended."""
    made = sharedlocal.faulty_failure(tmp_path_factory, fault, *FAULT_AT[fault])
    return Run(made["proc"], json.loads(made["proc"].stdout)), made["left"]


def test_two_ranks_end_with_identical_parameters(straight: Run) -> None:
    assert straight.summary["status"] == "completed" and straight.summary["exit_code"] == 0
    result = straight.summary["result"]
    digests = result["param_digests"]  # each rank hashed its own parameters
    assert len(digests) == 2 and digests[0] == digests[1] == result["param_digest"]
    assert result["in_sync"] is True and result["world_size"] == 2
    assert json.loads((straight.job_dir / RESULT_FILE).read_text()) == result


def test_rank0_prints_world_and_batches_and_one_line_per_epoch(straight: Run) -> None:
    log = straight.log(0)
    assert "world size 2" in log and "batch 16 per rank, 32 global" in log
    epoch_lines = [line for line in log.splitlines() if line.startswith("epoch ")]
    assert [line.split()[1] for line in epoch_lines] == ["1/2", "2/2"]
    assert not [line for line in straight.log(1).splitlines() if line.startswith("epoch ")]
    entries = [json.loads(line) for line in (straight.job_dir / METRICS_FILE).read_text().splitlines()]
    assert [e["epoch"] for e in entries] == [1, 2]
    for entry in entries:
        assert set(entry) >= METRIC_KEYS
        assert entry["world_size"] == 2
        assert entry["train_samples"] == 1001, "the sampler's padding is not counted"
        assert 0 <= entry["train_acc"] <= 1 and 0 <= entry["test_acc"] <= 1
    assert entries[1]["test_acc"] > 0.6, "the smoke task is learnable"
    assert straight.summary["final"] == entries[-1]


def test_resume_after_an_epoch_is_bit_identical(cluster_file: Path, straight: Run) -> None:
    first = run_faulty(cluster_file, "epochs=1")
    assert first.proc.returncode == 0, first.proc.stderr[-3000:]
    assert (first.job_dir / CHECKPOINT_DIR / "latest.pt").exists()
    second = resume(cluster_file, first.job_dir, "epochs=2")
    assert second.proc.returncode == 0, second.proc.stderr[-3000:]
    assert "resuming from checkpoint at epoch 2, step 0" in second.log(0)
    assert second.digest == straight.digest
    entries = [json.loads(line) for line in (first.job_dir / METRICS_FILE).read_text().splitlines()]
    assert [e["epoch"] for e in entries] == [1, 2]


def test_preemption_mid_epoch_resumes_bit_identical(cluster_file: Path, straight: Run,
                                                   tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    # only rank 1 gets the signal, at its 40th step (epoch 2): both ranks must stop at one step
    # (sharedlocal.faulty_preempted, made once per session: the resume continues a copy of it)
    proc = sharedlocal.faulty_preempted(tmp_path_factory)
    shared = Run(proc, json.loads(proc.stdout))
    assert shared.proc.returncode == 0, shared.proc.stderr[-3000:]
    preempted = Run(shared.proc, {**shared.summary, "job_dir": str(sharedruns.copy_job(shared.job_dir, tmp_path))})
    assert preempted.summary["status"] == "preempted"
    marker = (preempted.job_dir / REQUEUE_FILE).read_text()
    assert marker.startswith("epoch 2, step ")
    step = int(marker.split()[-1])
    assert 0 < step < 32, "stopped in the middle of epoch 2"
    assert "preempted (SIGUSR2)" in preempted.log(0)
    assert not (preempted.job_dir / RESULT_FILE).exists()
    resumed = resume(cluster_file, preempted.job_dir)
    assert resumed.proc.returncode == 0, resumed.proc.stderr[-3000:]
    assert f"resuming from checkpoint at epoch 2, step {step}" in resumed.log(0)
    assert resumed.digest == straight.digest
    assert not (preempted.job_dir / REQUEUE_FILE).exists()
    entries = [json.loads(line) for line in (preempted.job_dir / METRICS_FILE).read_text().splitlines()]
    reference = [json.loads(line) for line in (straight.job_dir / METRICS_FILE).read_text().splitlines()]
    assert [e["epoch"] for e in entries] == [1, 2]
    for key in ("train_loss", "train_acc", "test_loss", "test_acc", "train_samples"):
        assert entries[1][key] == reference[1][key], key


# 4 ranks: a ring all-reduce over 3+ ranks sums each gradient element in an order set by its offset
# in DDP's bucket, so a resumed process must reduce every step in the bucket layout the uninterrupted
# run used (2 ranks cannot tell: a + b == b + a). Both cases ended with other parameters before
# runtime.loop.settle_buckets existed (stopped mid-epoch 2, and after epoch 1; a second mid-epoch stop,
# at another step, failed and passed with the first, so it is not run).
FOUR_RANKS = [str(FAULTY), "--nproc", "4", "samples=1024", "test_samples=16", "batch_size=8"]


@pytest.fixture
def straight4(cluster_file: Path) -> Run:
    run = orch_run(cluster_file, *FOUR_RANKS, "epochs=2")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    assert run.summary["result"]["in_sync"] is True
    return run


def test_four_ranks_resume_bit_identical(cluster_file: Path, straight4: Run) -> None:
    """4 ranks preempted mid-epoch (every rank signalled, as Slurm does), then resumed: the sampler's place in the
    epoch is each rank's own. (A resume at an epoch's end: test_resume_after_an_epoch_is_bit_identical, 2 ranks.)"""
    stopped = orch_run(cluster_file, *FOUR_RANKS, "epochs=2", "signal_step=35")
    assert stopped.proc.returncode == 0, stopped.proc.stderr[-3000:]
    assert stopped.summary["status"] == "preempted"
    step = int((stopped.job_dir / REQUEUE_FILE).read_text().split()[-1])
    assert (stopped.job_dir / REQUEUE_FILE).read_text().startswith("epoch 2, step ")
    assert 0 < step < 32, "stopped in the middle of epoch 2"
    resumed = resume(cluster_file, stopped.job_dir, "epochs=2", "signal_step=-1")
    assert resumed.proc.returncode == 0, resumed.proc.stderr[-3000:]
    assert resumed.summary["result"]["in_sync"] is True
    assert resumed.digest == straight4.digest


def test_preemption_signal_sent_to_orch_run_is_forwarded(cluster_file: Path, straight: Run) -> None:
    proc = start(cluster_file, *faulty_args("step_sleep=0.03"))
    root = cluster_file.parent / "jobs"
    before = set(root.iterdir()) if root.exists() else set()

    def in_second_epoch() -> bool:
        new = [d for d in root.iterdir() if d not in before] if root.exists() else []
        return bool(new) and (new[0] / METRICS_FILE).exists()

    wait_for(in_second_epoch, "the first epoch to finish")
    proc.send_signal(signal.SIGUSR2)
    preempted = finish(proc)
    assert preempted.proc.returncode == 0, preempted.proc.stderr[-3000:]
    assert preempted.summary["status"] == "preempted"
    assert (preempted.job_dir / REQUEUE_FILE).read_text().startswith("epoch 2, step ")
    resumed = resume(cluster_file, preempted.job_dir, "step_sleep=0")
    assert resumed.proc.returncode == 0, resumed.proc.stderr[-3000:]
    assert resumed.digest == straight.digest


@pytest.mark.parametrize(("fault", "exit_code", "says"), [
    ("raise", 1, "rank 1 exited with code 1 (RuntimeError: injected failure on rank 1 at step 3 (job faulty, "
               "epoch 1, step 2))"),
    ("kill", 128 + signal.SIGKILL, "rank 1 was killed by SIGKILL"),
    # the short training timeout applies, not the start-up one
    ("skip_barrier", 3, f"a collective timed out after {COLLECTIVE_TIMEOUT} s"),
    ("exit0", 3, "rank 1 had already exited with code 0"),
])
def test_a_failing_rank_ends_the_job_and_is_named(tmp_path_factory: pytest.TempPathFactory, fault: str,
                                                  exit_code: int, says: str) -> None:
    run, left = failed_run(tmp_path_factory, fault)
    assert run.proc.returncode == exit_code, run.proc.stderr[-3000:]
    assert run.summary["status"] == "failed" and run.summary["exit_code"] == exit_code
    assert says in run.summary["message"]
    # the closing line says it, or leaves out a cause the failed rank's own line said just above it
    assert says in run.proc.stderr or "(its error is above)" in run.proc.stderr, run.proc.stderr[-3000:]
    assert "orch: error: " in run.proc.stderr
    assert run.summary["failed_rank"] in (0, 1)
    assert all(code is not None for code in run.summary["rank_exit_codes"])
    # the verdict of orchestrator.records.restarts.blame, as orch status --json shows it for a Slurm job
    failure = run.summary["failure"]
    assert failure["rank"] == run.summary["failed_rank"] and failure["message"] == run.summary["message"]
    assert left == []  # the processes naming the job folder the moment orch run ended


def test_killed_rank_leaves_a_checkpoint_that_resumes_bit_identical(cluster_file: Path, straight: Run,
                                                                    tmp_path_factory: pytest.TempPathFactory,
                                                                    tmp_path: Path) -> None:
    killed, _ = failed_run(tmp_path_factory, "kill")  # rank 1 at step 40: in epoch 2, after a checkpoint
    assert killed.proc.returncode == 128 + signal.SIGKILL, killed.proc.stderr[-3000:]
    assert killed.summary["failed_rank"] == 1
    from orchestrator.runtime.checkpoint import read_checkpoint

    assert read_checkpoint(killed.job_dir / CHECKPOINT_DIR / "latest.pt")["epoch"] == 1
    resumed = resume(cluster_file, sharedruns.copy_job(killed.job_dir, tmp_path / "jobs"), "fault=none")
    assert resumed.proc.returncode == 0, resumed.proc.stderr[-3000:]
    assert resumed.digest == straight.digest


def test_check_sync_catches_parameters_that_drift_apart(cluster_file: Path) -> None:
    run = run_faulty(cluster_file, "fault=desync", "fault_step=0")
    assert run.proc.returncode == 2, run.proc.stderr[-3000:]
    assert "parameters differ across ranks after the first step" in run.summary["message"]
    assert "ranks 0 have" in run.summary["message"] and "ranks 1 have" in run.summary["message"]


def test_ctrl_c_is_forwarded_and_nothing_is_left_running(cluster_file: Path) -> None:
    proc = start(cluster_file, *faulty_args("step_sleep=0.05"))
    root = cluster_file.parent / "jobs"
    logs_before = {p for p in root.glob("*/logs/local-rank0.out")}

    def training() -> bool:
        return any("orch: job faulty" in p.read_text() for p in root.glob("*/logs/local-rank0.out")
                   if p not in logs_before)

    wait_for(training, "training to start")
    proc.send_signal(signal.SIGINT)
    run = finish(proc)
    assert run.proc.returncode == 130 and run.summary["status"] == "interrupted"
    assert live_processes_of(run.job_dir) == []


def test_cli_path_does_not_import_torch(tmp_path: Path) -> None:
    """``orch run`` itself never imports torch: only its child processes do."""
    code = (
        "import sys\n"
        "from orchestrator.cli import main\n"
        f"code = main(['run', 'smoke', '--nproc', '1', '--job-root', {str(tmp_path)!r}, '--json',\n"
        "             'epochs=1', 'samples=64', 'test_samples=16'])\n"
        "assert 'torch' not in sys.modules, 'orch run imported torch'\n"
        "sys.exit(code)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env=clean_environ(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["status"] == "completed" and Path(summary["job_dir"]).parent == tmp_path
    assert summary["final"]["epoch"] == 1 and summary["final"]["world_size"] == 1


def test_missing_data_is_reported_with_where_it_looked(tmp_path: Path, clean_env: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.cli import main

    empty = tmp_path / "no data here"
    empty.mkdir()
    code = main(["run", "mnist", "--nproc", "1", "--job-root", str(tmp_path / "jobs"),
                 "--data-dir", str(empty)])
    out, err = capsys.readouterr()
    assert code == 2, err
    # rank 0's own line (stdout) says it, and orch's closing line on stderr too: `orch run ... 2>err` keeps it
    assert "rank 0 exited with code 2 (MNIST file train-images-idx3-ubyte.gz not found" in err
    # rank 0's own output (shown on the terminal) has the whole message and the fix
    assert str(empty / "MNIST" / "raw" / "train-images-idx3-ubyte.gz") in out and "ORCH_DATA_DIR" in out
    # without any data directory the CLI refuses before starting a process
    assert main(["run", "mnist", "--job-root", str(tmp_path / "jobs")]) == 2
    assert "needs a data directory" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "says"), [
    (["run"], "needs a JOB"),
    (["run", "smoke", "--nproc", "0"], "--nproc 0 must be at least 1"),
    (["run", "nosuchjob"], "unknown job 'nosuchjob'"),
    (["run", "smoke", "lr=-1"], "override lr=-1"),
    (["run", "--resume", "/nonexistent/job"], "job.json does not exist"),
])
def test_bad_input_exits_2(argv: list[str], says: str, clean_env: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and "HINT: " in err


def test_local_job_folder_layout(straight: Run) -> None:
    job_dir = straight.job_dir
    cfg = json.loads((job_dir / "job.json").read_text())
    assert cfg["mode"] == "local" and cfg["tasks_per_node"] == 2 and cfg["nodes"] == 1
    assert cfg["launcher"]["init_timeout"] == INIT_TIMEOUT
    assert {p.name for p in (job_dir / LOG_DIR).iterdir()} == {"local-rank0.out", "local-rank1.out",
                                                             "rank0.outcome.json", "rank1.outcome.json"}
    for rank in (0, 1):  # how each rank ended (orchestrator.task.outcome), read by orch run, status and logs
        record = json.loads((job_dir / LOG_DIR / f"rank{rank}.outcome.json").read_text())
        assert record["rank"] == rank and record["kind"] == "completed" and record["exit_code"] == 0
        assert record["run"] == "local" and record["restart"] == 0 and record["last_step"]["step"] > 0
    assert {p.name for p in (job_dir / CHECKPOINT_DIR).iterdir()} == {  # each with its identity sidecar
        "latest.pt", "previous.pt", "latest.pt.json", "previous.pt.json"}
    assert not os.stat(job_dir).st_mode & 0o002, "job folders are never world-writable"
