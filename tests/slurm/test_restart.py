"""The restart policy table, attempts.json's arithmetic and the goodput ledger (pure), the
spare-node choice, the batch-script helper on a job folder, and orch run's restarts with real ranks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import TESTS

from orchestrator.env.masterport import DEFAULT_PORT_RANGE, agents_port
from orchestrator.records.restarts import attempts as att
from orchestrator.records.restarts.blame import blame
from orchestrator.records.restarts.rankoutcome import RankOutcome
from orchestrator.restarts.policy import SAME_ERROR, Ended, decide
from orchestrator.slurm.restart import next_nodes

FAULTY = TESTS / "jobs" / "faulty.py"
ORCH = str(Path(sys.executable).with_name("orch"))
IN_PROCESS = ("in-process (a failed rank is forked again, the other ranks keep their processes; by step when that "
              "cannot apply)")


def rec(rank: int, kind: str, **extra: Any) -> RankOutcome:
    return RankOutcome.model_validate({"rank": rank, "world_size": 2, "run": "7", "restart": 0, "kind": kind,
                                       "started": 100.0, "host": f"node{rank + 1}", **extra})


def ended(records: list[RankOutcome], code: int, attempt: int = 0, previous: dict[str, Any] | None = None,
          **kw: Any) -> Ended:
    by_rank = {r.rank: r for r in records}
    return Ended(attempt=attempt, exit_code=code, blame=blame(records, world_size=2), records=by_rank,
                 previous=previous, **kw)


RAISED = [rec(0, "waited", how="lost", exit_code=3, ended=105.0, reason="lost"),
          rec(1, "failed", exit_code=1, ended=104.0, reason="RuntimeError: boom",
              last_step={"epoch": 1, "step": 2, "time": 103.0})]
KILLED = [rec(0, "waited", how="lost", exit_code=3, ended=105.0, reason="lost"), rec(1, "running")]


@pytest.mark.parametrize(("records", "code", "kw", "restart", "kind", "why"), [
    ([rec(0, "completed", exit_code=0), rec(1, "completed", exit_code=0)], 0, {}, False, "completed", ""),
    (RAISED, 1, {}, True, "failed", ""),
    (KILLED, 137, {}, True, "stuck", ""),
    ([rec(0, "failed", exit_code=2, reason="bad input"), rec(1, "signalled", signal="SIGTERM")], 2, {}, False,
     "failed", "usage or configuration error"),
    ([rec(0, "failed", exit_code=1, reason="epoch 1: non-finite loss=nan"), rec(1, "completed", exit_code=0)], 1,
     {}, False, "failed", "non-finite"),
    (RAISED, 1, {"requeue": True}, False, "preempted", ""),
    (RAISED, 1, {"interrupted": True}, False, "interrupted", "stopped by a signal"),
    (RAISED, 1, {"attempt": 2}, False, "failed", "the 2 restarts allowed (--max-restarts 2) are used up"),
])
def test_the_policy_table(records: list[RankOutcome], code: int, kw: dict[str, Any], restart: bool, kind: str,
                          why: str) -> None:
    decision = decide(ended(records, code, **kw), max_restarts=2)
    assert (decision.restart, decision.kind) == (restart, kind)
    assert why in decision.message


def test_the_same_error_at_the_same_step_is_not_restarted_again() -> None:
    first = decide(ended(RAISED, 1), max_restarts=3)
    assert first.restart and first.blamed_node is None  # a Python exception never marks a node
    previous = {"kind": first.kind, "reason": first.reason, "last_step": list(first.last_step or ())}
    again = decide(ended(RAISED, 1, attempt=1, previous=previous), max_restarts=3)
    assert not again.restart and again.message == SAME_ERROR
    moved = {**previous, "last_step": [1, 1]}
    assert decide(ended(RAISED, 1, attempt=1, previous=moved), max_restarts=3).restart


def test_a_vanished_or_stuck_rank_blames_its_node_and_a_device_error_too() -> None:
    assert decide(ended(KILLED, 137), max_restarts=1).blamed_node == "node2"
    nccl = [rec(0, "completed", exit_code=0), rec(1, "failed", exit_code=1, reason="NCCL error: unhandled")]
    assert decide(ended(nccl, 1), max_restarts=1).blamed_node == "node2"


def test_restarts_off_keeps_todays_behaviour() -> None:
    decision = decide(ended(RAISED, 1), max_restarts=0)
    assert not decision.restart and "--max-restarts 0" in decision.message


@pytest.mark.parametrize(("allocation", "blamed", "nodes", "chosen", "out"), [
    (["a", "b", "c"], [], 2, ["a", "b"], []),
    (["a", "b", "c"], ["a"], 2, ["b", "c"], ["a"]),
    (["a", "b", "c"], ["b", "a"], 2, ["a", "c"], ["b"]),  # one spare: the older blame comes back
    (["a", "b"], ["b"], 2, ["a", "b"], []),  # no spare: the same nodes
    (["a", "b", "c"], ["x"], 2, ["a", "b"], []),
])
def test_next_nodes(allocation: list[str], blamed: list[str], nodes: int, chosen: list[str], out: list[str]) -> None:
    assert next_nodes(allocation, blamed, nodes) == (chosen, out)


def test_the_ledger_adds_up() -> None:
    history = [
        {"attempt": 0, "requeue": 0, "batch_started": 0.0, "started": 1.0, "ended": 50.0, "first_step": 10.0,
         "last_step_time": 40.0, "kind": "stuck", "failed_at": 45.0, "lost_steps": 10, "resumed_step": 0,
         "last_global_step": 30, "hung_s": 5.0},
        {"attempt": 1, "requeue": 0, "batch_started": 0.0, "started": 50.0, "ended": 100.0, "first_step": 55.0,
         "last_step_time": 99.0, "kind": "completed", "resumed_step": 20, "last_global_step": 64},
    ]
    att.fill_recovery(history)
    assert history[0]["recovery_s"] == 10.0
    led = att.ledger(history, queued_s=3.0)
    assert led["allocated_s"] == 100.0 and led["startup_s"] == 10.0 and led["queued_s"] == 3.0
    assert led["training_s"] == 74.0 and led["redone_s"] == 10.0 and led["hung_s"] == 5.0
    assert led["goodput"] == 0.64
    assert att.restarts(history) == (1, 0)
    assert set(att.LEDGER_KEYS) == set(led)


def test_a_scripts_goodput_is_unknown_not_zero() -> None:
    """A script's steps are its own: no attempt has a training step, so its goodput is not measured (None,
    an empty GOODPUT cell in orch top), never 0%; the time it held stays in the ledger."""
    history = [{"attempt": 0, "requeue": 0, "batch_started": 0.0, "started": 1.0, "ended": 100.0,
                "kind": "completed"}]
    led = att.ledger(history, queued_s=None)
    assert led["goodput"] is None and led["allocated_s"] == 100.0 and led["training_s"] == 0.0
    assert att.format_ledger(led).startswith("goodput unknown (no training step was seen) (allocated 100.0s")


def test_the_ledger_takes_the_checkpoint_stall_off_training_and_not_the_background_write() -> None:
    history = [{"attempt": 0, "requeue": 0, "batch_started": 0.0, "started": 1.0, "ended": 100.0,
                "first_step": 10.0, "last_step_time": 90.0, "kind": "completed"}]
    led = att.ledger(history, queued_s=None, checkpoint_stall_s=4.0, checkpoint_write_s=30.0)
    assert led["training_s"] == 76.0 and led[att.CHECKPOINT_STALL] == 4.0 and led[att.CHECKPOINT_WRITE] == 30.0
    assert led["goodput"] == 0.76  # the write overlapped training: not taken off
    assert "checkpoint_stall 4.0s, checkpoint_write 30.0s" in att.format_ledger(led)


def test_the_ledger_takes_off_only_the_stall_between_two_steps() -> None:
    """A save after an attempt's last step (the last epoch's) is outside its first-to-last-step span: a short run
    whose only save is its last keeps all its training time."""
    history = [{"attempt": 0, "requeue": 0, "batch_started": 0.0, "started": 1.0, "ended": 10.0,
                "first_step": 2.0, "last_step_time": 2.01, "kind": "completed"}]
    led = att.ledger(history, queued_s=None, checkpoint_stall_s=0.02, stall_in_training_s=0.0)
    assert led["training_s"] == 0.01 and led[att.CHECKPOINT_STALL] == 0.02
    assert led["goodput"] == 0.001
    whole = att.ledger(history, queued_s=None, checkpoint_stall_s=0.02)  # the part not known: all of it
    assert whole["training_s"] == 0.0 and whole["goodput"] == 0.0
    some = att.ledger(history, queued_s=None, checkpoint_stall_s=0.02, stall_in_training_s=0.004)
    assert some["training_s"] == 0.006


def test_global_steps() -> None:
    assert att.global_step((2, 5), 32, one_based=True) == 37
    assert att.global_step((1, 0), 32, one_based=False) == 32
    assert att.global_step((3, 1), None, one_based=True) is None
    assert att.lost(37, 32) == 5 and att.lost(None, 3) is None


@pytest.mark.slow
def test_orch_run_restarts_a_killed_rank_and_ends_with_the_same_parameters(tmp_path: Path,
                                                                           write_cluster: Any) -> None:
    """The step-level restart of orch run (launcher.restart: step; in-process: tests/restarts/test_agent.py)."""
    env = {**os.environ, "ORCH_DATA_DIR": str(tmp_path)}
    by_step = write_cluster(launcher={"restart": "step"})

    def run(root: str, *extra: str) -> dict[str, Any]:
        proc = subprocess.run([ORCH, "run", str(FAULTY), "--cluster", str(by_step), "--nproc", "2", "--job-root",
                               str(tmp_path / root), "--json", "epochs=2", *extra], capture_output=True, text=True,
                              env=env, timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr
        data: dict[str, Any] = json.loads(proc.stdout)
        return data

    restarted = run("a", "fault=kill", "fault_step=40", "fault_restart=0", "--max-restarts", "1")
    clean = run("b", "--max-restarts", "0")
    assert restarted["result"]["param_digest"] == clean["result"]["param_digest"]
    history = att.read_attempts(Path(restarted["job_dir"]))
    assert [a["attempt"] for a in history] == [0, 1] and history[0]["blamed_rank"] == 1
    assert history[1]["resumed_step"] == 32 and history[0]["lost_steps"] > 0
    assert history[0]["in_process"] is False and history[0]["by_step"] == "launcher.restart: step", history
    assert "goodput" in restarted["result"]


def test_dry_run_shows_restarts_and_allocates_the_spares(capsys: pytest.CaptureFixture[str],
                                                         write_cluster: Any, clean_env: pytest.MonkeyPatch) -> None:
    from orchestrator.cli import main

    path = write_cluster(launcher={"max_restarts": 2})
    code = main(["submit", "smoke", "--cluster", str(path), "--nodes", "2", "--gpus", "1", "--spare-nodes", "1",
                 "--dry-run", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    script = data["script"]
    assert "#SBATCH --nodes=3\n" in script and "--nodes=2 --ntasks-per-node=1" in script
    assert "-m orchestrator.slurm.restart --job-dir \"$JOB_DIR\" --first" in script
    assert [r["host"] for r in data["ranks"]] == ["gpu001", "gpu002"]
    assert data["restarts"] == {"max_restarts": 2, "kind": "in-process", "how": IN_PROCESS}  # the default
    code = main(["submit", "smoke", "--cluster", str(path), "--nodes", "1", "--gpus", "1", "--dry-run"])
    out = capsys.readouterr().out
    assert "# restarts: a failed training step is restarted up to 2 time(s)" in out
    assert f"\n#   restart: {IN_PROCESS}\n" in out
    script = str(TESTS / "scripts" / "restart_count.py")
    for nodes, apart in (("2", True), ("1", False)):  # a script on several nodes restarts warm too
        assert main(["submit", script, "--cluster", str(path), "--nodes", nodes, "--gpus", "1", "--no-check",
                     "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert "\n#   restart: in-process (warm: the script's whole world starts again" in out
        master = int(out.split("\n")[-2].rsplit(":", 1)[1])  # the last rank's MASTER column
        meet = f"the agents meet at their own port {agents_port(master, DEFAULT_PORT_RANGE)} (half the port range"
        assert (meet in out) is apart, out
    step = write_cluster(launcher={"max_restarts": 2, "restart": "step"}, name="step.yaml")
    assert main(["submit", "smoke", "--cluster", str(step), "--nodes", "2", "--gpus", "1", "--dry-run"]) == 0
    assert "\n#   restart: by step (launcher.restart: step): every rank starts again" in capsys.readouterr().out
    code = main(["submit", "smoke", "--cluster", str(path), "--max-restarts", "0", "--dry-run"])
    out = capsys.readouterr().out
    assert "# restarts:" not in out and "#   restart:" not in out
    assert main(["submit", "smoke", "--cluster", str(path), "--max-restarts", "-1", "--dry-run"]) == 2
    assert "--max-restarts -1" in capsys.readouterr().err


def test_the_restarts_cell_counts_in_job_restarts_and_requeues() -> None:
    attempts = [{"attempt": 0, "requeue": 0}, {"attempt": 1, "requeue": 0}, {"attempt": 0, "requeue": 1}]
    assert att.restarts_shown(attempts) == "1+1"  # the folder's own count
    assert att.restarts_shown(attempts, 3) == "1+3"  # Slurm's requeue count wins when it answered
    assert att.restarts_shown([], 0) == "0+0" and att.restarts_shown([]) is None  # nothing known of any run
    assert att.restarts_shown(attempts, True) == "1+1"  # a bool is no count
