"""In-process restarts of orch's entrypoint (restarts/agent.py), with real processes: ``orch run --nproc 2`` of
tests/jobs/faulty.py on gloo, ``launcher.restart: in-process``. A rank killed (SIGKILL), stopped (SIGSTOP) or
running but stuck (no training step: its agent sees the heartbeat stand still, restarts/heartbeat.py) in the middle
of an epoch: the run completes with the parameters of an uninterrupted run, the surviving
rank's process is the same one before and after the restart, and the restarted attempt imported nothing.
Then the fallbacks: the budget of restarts is shared with the step-level ones, and a deadlock (no rank
failed or stopped) ends the step and is restarted by step; the preemption signal reaches the worker through
its agent; a script's restarted world imports nothing. The agent's decisions over a store: below.

The uninterrupted runs they compare with are made once per session (tests/local/sharedlocal.py) and read by other
modules too: faulty.py's (tests/local/test_runner.py's reference) and ddp_train.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from local import sharedlocal
from support import ORCH, TESTS, DictStore, clean_environ

from orchestrator.records.restarts.attempts import format_attempts, read_attempts
from orchestrator.restarts import agent
from orchestrator.restarts import protocol as proto
from orchestrator.spec.cluster import Launcher
from orchestrator.spec.runconfig import RESULT_FILE

FAULTY = sharedlocal.FAULTY
PARAMS = sharedlocal.FAULTY_PARAMS
RUN_TIMEOUT = 180
INIT_TIMEOUT_S = 30  # cluster()'s launcher.init_timeout


def cluster(root: Path, *, restart: str = "in-process", max_restarts: int = 1) -> Path:
    path = root / f"cluster-{restart}-{max_restarts}.yaml"
    path.write_text(
        "name: local-tests\n"
        "partitions:\n"
        "  - {name: cpu, nodes: 'node[1-2]', gpus_per_node: 0, cpus_per_node: 2, mem_per_node: 4G}\n"
        f"launcher: {{init_timeout: {INIT_TIMEOUT_S}, collective_timeout: 5, job_root: '{root / 'jobs'}', "
        f"restart: {restart}, max_restarts: {max_restarts}}}\n", encoding="utf-8")
    return path


def run(cluster_path: Path, *params: str) -> tuple[dict[str, Any], str]:
    """``orch run --json`` of faulty.py on 2 ranks: (the summary, stderr)."""
    argv = [ORCH, "run", "--cluster", str(cluster_path), "--json", str(FAULTY), "--nproc", "2", *PARAMS, *params]
    proc = subprocess.run(argv, capture_output=True, text=True, env=clean_environ(), timeout=RUN_TIMEOUT)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return json.loads(proc.stdout), proc.stderr


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("agent")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The parameters of an uninterrupted run (max_restarts 0: no agent), the job and parameters of ``run``'s:
    sharedlocal.faulty_reference, made once per session."""
    summary = json.loads(sharedlocal.faulty_reference(tmp_path_factory).stdout)
    assert summary["status"] == "completed", summary
    digest: str = summary["result"]["param_digest"]
    return digest


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "kind"), [("kill", "vanished"), ("stop", "stuck"), ("hang", "stuck")])
def test_a_failed_rank_is_restarted_in_the_step_and_the_survivor_keeps_its_process(
        root: Path, reference: str, fault: str, kind: str) -> None:
    summary, err = run(cluster(root), f"fault={fault}", "fault_rank=1", "fault_step=40", "fault_restart=0")
    assert summary["status"] == "completed", err[-3000:]
    assert summary["result"]["param_digest"] == reference  # bit-equal to the uninterrupted run
    job_dir = Path(summary["job_dir"])
    first, second = read_attempts(job_dir)
    assert first["in_process"] is True and first["kind"] == kind and first["blamed_rank"] == 1, first
    assert first["restarted"] is True and first["lost_steps"] == 7 and first["next_step"] == 32, first
    assert second["attempt"] == 1 and second["kind"] == "completed" and second["in_process"] is False
    assert first["pids"]["0"] == second["pids"]["0"]  # the survivor: the same process
    assert first["pids"]["1"] != second["pids"]["1"]  # the failed rank: a new worker, forked by its agent
    # its recovery is recorded, and is no wait out of the launcher's init_timeout. How long it takes is
    # bench/bench_recovery.py --local's to print, not a bound here: a hung rank's (its peer's collective timeout,
    # then heartbeat.settle_s for the others) took 5.97 s in a CI run with the e2e pass beside it
    assert isinstance(first["recovery_s"], float) and 0 < first["recovery_s"] < INIT_TIMEOUT_S, first
    if fault == "hang":  # its agent said why, in the rank's log; hung_s: from its last step to the failure
        assert first["hung_s"] is not None and first["hung_s"] >= 4.0, first
        log = (job_dir / "logs" / "local-rank1.out").read_text(encoding="utf-8", errors="replace")
        assert "made no training step for" in log and "(hung); killing it" in log, log[-3000:]
    startup = json.loads((job_dir / RESULT_FILE).read_text())["startup"]  # rank 0's: the restarted attempt
    # torch is not imported again (a fresh process would record its import_torch phase); what the restarted generation
    # imports is the job's own module. Its time is bench/bench_restart_growth.py's to print, not a bound here: a CI
    # run with the e2e pass beside it measured 2.5 s once, where an idle machine takes a fraction of a second
    assert "import_torch" not in startup and "imports" in startup, startup
    assert "generation 1 in this process" in err


@pytest.mark.slow
def test_a_workers_exception_goes_through_the_tasks_handlers_then_is_restarted(root: Path, reference: str) -> None:
    """The forked worker's own error is handled as any task's: its traceback and orch's error line in the rank's
    log, its outcome record (failed, exit 1, the exception); then its agent restarts it in the step."""
    summary, err = run(cluster(root), "fault=raise", "fault_rank=1", "fault_step=40", "fault_restart=0")
    assert summary["status"] == "completed", err[-3000:]
    assert summary["result"]["param_digest"] == reference
    job_dir = Path(summary["job_dir"])
    first, second = read_attempts(job_dir)
    assert first["in_process"] is True and first["kind"] == "failed" and first["exit_code"] == 1, first
    assert first["blamed_rank"] == 1 and first["reason"].startswith("RuntimeError: injected failure on rank 1"), first
    assert second["kind"] == "completed" and first["pids"]["0"] == second["pids"]["0"]
    log = (job_dir / "logs" / "local-rank1.out").read_text(encoding="utf-8", errors="replace")
    assert "Traceback (most recent call last)" in log, log[-3000:]
    assert "orch: error: rank 1 failed: RuntimeError: injected failure on rank 1 at step 40" in log, log[-3000:]


@pytest.mark.slow
def test_the_restart_budget_is_shared_with_the_step_level_restarts(root: Path) -> None:
    """max_restarts 1, a rank that fails in every attempt: one in-process restart, then the run fails."""
    summary, err = run(cluster(root), "fault=kill", "fault_rank=1", "fault_step=20")
    assert summary["status"] == "failed", err[-3000:]
    attempts = read_attempts(Path(summary["job_dir"]))
    assert [a["attempt"] for a in attempts] == [0, 1], attempts
    assert attempts[0]["in_process"] is True and attempts[1]["in_process"] is False
    assert attempts[1]["restarted"] is False and "used up" in (attempts[1]["message"] or ""), attempts[1]
    # the agents' "no" (the restart policy's) is recorded with its reason, and orch status says it
    assert (attempts[1]["fallback"] or "").startswith("declined: the 1 restart allowed"), attempts[1]
    assert "not restarted in its step: declined: the 1 restart allowed" in format_attempts(attempts)[1]


@pytest.mark.slow
def test_a_deadlock_falls_back_to_the_step_level_restart(root: Path, reference: str) -> None:
    """A collective only one rank enters: no rank failed or stopped, so no agent restarts in the step; the
    step ends (both ranks gave up waiting) and orch run starts the next attempt in new processes."""
    summary, err = run(cluster(root), "fault=skip_barrier", "fault_rank=1", "fault_step=40", "fault_restart=0")
    assert summary["status"] == "completed", err[-3000:]
    assert summary["result"]["param_digest"] == reference
    first, second = read_attempts(Path(summary["job_dir"]))
    assert first["in_process"] is False and first["fallback"].startswith("peer_only: "), first
    assert first["pids"]["0"] != second["pids"]["0"]  # every rank started again
    assert "no in-process restart" in err


@pytest.mark.slow
def test_a_rank_that_fails_after_rank_0_ended_is_reported_as_its_own_failure(root: Path) -> None:
    """Rank 1's process dies of SIGABRT a second after training (rank 0's worker has returned): rank 0's agent,
    which hosts the store, waits in the exit barrier, so rank 1's agent decides on the failure it saw (no
    in-process restart: rank 0's part is done) instead of finding the store gone."""
    summary, _ = run(cluster(root), "fault=abort_at_exit", "fault_rank=1")
    job_dir = Path(summary["job_dir"])
    [attempt] = read_attempts(job_dir)
    # not store_lost: the store was there to decide on, and the agents declined a restart because rank 0 had ended
    assert str(attempt.get("fallback")).startswith("declined: rank 0 has ended"), attempt
    log = (job_dir / "logs" / "local-rank1.out").read_text()
    assert "store at MASTER_PORT is gone" not in log and "rank 1: no in-process restart: rank 0 has ended" in log


def script_imports(root: Path, restart: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``orch run`` of tests/scripts/warm_imports.py on 2 ranks (rank 1 fails once): the summary and each
    rank's record of its own imports, per attempt."""
    argv = [ORCH, "run", "--cluster", str(cluster(root, restart=restart)), "--json",
            str(TESTS / "scripts" / "warm_imports.py"), "--nproc", "2"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=clean_environ(), timeout=RUN_TIMEOUT)
    summary = json.loads(proc.stdout)
    job_dir = Path(summary["job_dir"])
    lines = [json.loads(line) | {"rank": rank} for rank in (0, 1)
             for line in (job_dir / f"imports-rank{rank}.jsonl").read_text().splitlines()]
    return summary, lines


@pytest.mark.slow
def test_a_scripts_restarted_world_imports_nothing(root: Path) -> None:
    """Warm restarts: the agents fork the whole world again (torchrun's semantics: new processes, fresh
    state, TORCHELASTIC_RESTART_COUNT one higher) from processes that imported torch and the script's imports."""
    summary, lines = script_imports(root, "in-process")
    assert summary["status"] == "completed", summary
    first = {r["rank"]: r for r in lines if r["restart"] == 0}
    second = {r["rank"]: r for r in lines if r["restart"] == 1}
    assert sorted(second) == [0, 1] and len(lines) == 4, lines
    for rank in (0, 1):
        assert second[rank]["pid"] != first[rank]["pid"]  # a fresh process for every rank
        assert second[rank]["torch_loaded"] and second[rank]["imports_s"] < 0.05, second[rank]
    attempts = read_attempts(Path(summary["job_dir"]))
    assert [a["in_process"] for a in attempts] == [True, False] and attempts[0]["blamed_rank"] == 1, attempts
    # the step-level restart of the same script: rank 1's new process imports torch again (rank 0's task has it
    # already: it hosts the script's store on loopback)
    step, cold = script_imports(root, "step")
    assert step["status"] == "completed", step
    [again] = [r for r in cold if r["restart"] == 1 and r["rank"] == 1]
    assert not again["torch_loaded"] and again["imports_s"] > second[1]["imports_s"], cold


def ddp_params(root: Path, restart: str, max_restarts: int, *args: str) -> tuple[dict[str, Any], list[list[float]]]:
    """``orch run`` of tests/scripts/ddp_train.py on 2 ranks, sharedlocal.ddp_train's steps and learning rate: the
    summary and each rank's final parameters."""
    out = root / f"ddp-{restart}-{max_restarts}-{len(args)}"
    argv = [ORCH, "run", "--cluster", str(cluster(root, restart=restart, max_restarts=max_restarts)), "--json",
            str(sharedlocal.DDP), "--nproc", "2", "--", "--out", str(out), *sharedlocal.DDP_STEPS, *args]
    proc = subprocess.run(argv, capture_output=True, text=True, env=clean_environ(), timeout=RUN_TIMEOUT)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["status"] == "completed", proc.stderr[-3000:]
    return summary, [json.loads((out / f"rank{r}.json").read_text())["params"] for r in (0, 1)]


@pytest.mark.slow
def test_a_scripts_warm_restart_trains_as_an_uninterrupted_run(root: Path,
                                                               tmp_path_factory: pytest.TempPathFactory) -> None:
    """The world forked again from the agents (which imported torch before it) trains exactly as a world that
    never failed: every rank's final parameters are bit-equal to those of an uninterrupted run (sharedlocal's run
    of the script: the same steps and learning rate, made once per session; its other arguments change no
    parameter)."""
    shared = sharedlocal.ddp_train(tmp_path_factory)
    assert shared["proc"].returncode == 0, shared["proc"].stderr.decode(errors="replace")[-3000:]
    uninterrupted = [json.loads((shared["folder"] / "out" / f"rank{r}.json").read_text())["params"] for r in (0, 1)]
    summary, restarted = ddp_params(root, "in-process", 1, "--fail-first-attempt", "1")
    attempts = read_attempts(Path(summary["job_dir"]))
    assert [a["in_process"] for a in attempts] == [True, False] and attempts[0]["blamed_rank"] == 1, attempts
    assert restarted == uninterrupted


@pytest.mark.slow
def test_the_preemption_signal_reaches_the_worker_through_its_agent(root: Path) -> None:
    """orch run sends the preemption signal to each task process, the agent; it forwards it to its worker."""
    import signal

    argv = [ORCH, "run", "--cluster", str(cluster(root)), "--json", str(FAULTY), "--nproc", "2", *PARAMS,
            "step_sleep=0.05"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_environ())
    assert proc.stderr is not None
    for line in proc.stderr:  # rank 0's banner: the workers are training
        if "train /" in line:
            break
    time.sleep(1.0)
    proc.send_signal(signal.SIGUSR2)
    out, err = proc.communicate(timeout=RUN_TIMEOUT)
    summary = json.loads(out)
    assert summary["status"] == "preempted" and proc.returncode == 0, err[-3000:]


# --- the agent's decisions over a store (no processes) ----------------------------------------------

class GoneStore(DictStore):
    def check(self, keys: list[str]) -> bool:
        raise RuntimeError("Connection reset by peer")


def make_agent(tmp_path: Path, store: DictStore, rank: int = 1) -> Any:
    from orchestrator.env.distenv import DistEnv

    cfg = type("Cfg", (), {"launcher": Launcher(collective_timeout=5, max_restarts=1), "mode": "local",
                           "restarts": 0, "world_size": 2})()
    env = DistEnv(rank=rank, local_rank=rank, world_size=2, local_world_size=2, node_rank=0, num_nodes=1,
                  master_addr="127.0.0.1", master_port=29500)
    return agent._Agent(cfg, env, tmp_path, store, 0, lambda g: None)


def test_a_rank_that_only_lost_its_peer_follows_a_stop_or_falls_back(tmp_path: Path) -> None:
    store = DictStore()
    store.set(proto.at(1), "3")
    store.add(proto.claim(3), 1)  # the failed rank claimed generation 3 and decided
    store.set(proto.decision(3), proto.encode_stop("the restarts are used up"))
    assert make_agent(tmp_path, store)._after_failure(3) is None  # decided: ends as its worker did, and says why
    fallback = tmp_path / proto.FALLBACK_FILE  # (attempts.json's "fallback", read by the step-level restart)
    assert fallback.read_text().startswith("declined: the restarts are used up: no restart was decided in the step")
    fallback.unlink()
    store.data.pop(proto.decision(3))
    store.data.pop(proto.claim(3))
    started = time.monotonic()
    assert make_agent(tmp_path, store)._after_failure(3) is None  # nothing failed: a deadlock
    assert time.monotonic() - started >= proto.PEER_GRACE_S  # once a failed rank's agent had time to claim
    assert (tmp_path / proto.FALLBACK_FILE).read_text().startswith("peer_only: ")


class LateClaimStore(DictStore):
    """The failed rank's agent claims and decides only after this rank's worker ended (a few polls later)."""

    def __init__(self, generation: int, polls: int) -> None:
        super().__init__()
        self.generation, self.polls = generation, polls

    def check(self, keys: list[str]) -> bool:
        self.polls -= 1
        if self.polls == 0:
            self.add(proto.claim(self.generation), 1)
            self.set(proto.decision(self.generation), proto.RESTART)
        return super().check(keys)


def test_a_rank_that_lost_its_peer_first_follows_the_failed_ranks_later_claim(tmp_path: Path) -> None:
    """A script's rank 0 ends on its peer's crash before rank 1's agent has seen rank 1 end: it waits for
    that claim and restarts with the world, instead of taking the crash for a deadlock."""
    store = LateClaimStore(3, polls=10)
    store.set(proto.at(0), "3")
    assert make_agent(tmp_path, store, rank=0)._after_failure(3) == 4
    assert not (tmp_path / proto.FALLBACK_FILE).exists()


def test_a_second_failed_rank_follows_the_first_ranks_decision(tmp_path: Path) -> None:
    store = DictStore()
    store.set(proto.at(1), "2")
    store.add(proto.claim(2), 1)  # another rank claimed generation 2 and decided
    store.set(proto.decision(2), proto.RESTART)
    assert make_agent(tmp_path, store)._after_failure(-9) == 3
    assert not (tmp_path / "attempts.json").exists()  # the claimant records the attempt, not this rank


def test_a_lost_store_falls_back(tmp_path: Path) -> None:
    assert make_agent(tmp_path, GoneStore())._after_failure(-9) is None
    assert (tmp_path / proto.FALLBACK_FILE).read_text().startswith("store_lost: ")




def test_the_agent_ends_as_its_worker_did() -> None:
    assert agent._end_as(1) == 1 and agent._end_as(3) == 3
    child = os.fork()
    if child == 0:  # pragma: no cover - the child dies of the signal
        agent._end_as(-15)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == -15
    time.sleep(0)
