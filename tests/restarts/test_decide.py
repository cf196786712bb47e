"""The deciding agent (restarts/decide.py) over a store stand-in: it decides as soon as every other rank has
reported (its worker wrote its record, or its agent says the worker is behind, blocked in the failed step), and
waits REPORT_WAIT_S at most for a rank that never answers; the attempt it records and the rank it blames are
the same either way."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from support import DictStore

from orchestrator.env.distenv import DistEnv
from orchestrator.records.joblayout import outcome_path
from orchestrator.records.restarts.attempts import read_attempts
from orchestrator.records.restarts.rankoutcome import PEER_FAILURE_EXIT
from orchestrator.restarts import protocol as proto
from orchestrator.restarts.decide import Decider
from orchestrator.spec.cluster import Launcher
from orchestrator.task.outcome import Recorder

WORLD = 8
FAILED = 1  # killed (SIGKILL): its agent claims generation 0 and decides
SURVIVORS = (0, 2)  # they talked to the failed rank: their collective failed and they wrote their records
BEHIND = (3, 4, 5, 6, 7)  # blocked in the failed step's collective: nothing written before the decision


def job(tmp_path: Path, name: str) -> tuple[Path, DictStore]:
    """A job folder with generation 0's records as the failure left them, and the agents' store."""
    job_dir = tmp_path / name
    (job_dir / "logs").mkdir(parents=True)
    for rank in range(WORLD):
        record = Recorder()
        record.start(outcome_path(job_dir, rank), rank=rank, world_size=WORLD, run="local", restart=0,
                     stopped_by="orch run", init_timeout=10, collective_timeout=5)
        if rank in SURVIVORS:
            record.finish("waited", PEER_FAILURE_EXIT, reason="a peer closed the connection", how="lost")
    store = DictStore()
    store.set(proto.at(FAILED), "0")
    for rank in SURVIVORS:
        store.set(proto.lost(0, rank), "1")
        store.set(proto.reported(0, rank), "lost")
    return job_dir, store


def decide(job_dir: Path, store: DictStore) -> tuple[int | None, float]:
    """The failed rank's agent after its worker died of SIGKILL: (the next generation, seconds it took)."""
    cfg: Any = type("Cfg", (), {"launcher": Launcher(collective_timeout=5, max_restarts=3), "mode": "local",
                                "restarts": 0, "world_size": WORLD, "tasks_per_node": WORLD, "script": None})()
    env = DistEnv(rank=FAILED, local_rank=FAILED, world_size=WORLD, local_world_size=WORLD, node_rank=0,
                  num_nodes=1, master_addr="127.0.0.1", master_port=29500)
    began = time.monotonic()
    nxt = Decider(cfg, env, job_dir, store, 0).after_failure(-9, generation=0, began=1.0)
    return nxt, time.monotonic() - began


def verdict(job_dir: Path) -> dict[str, Any]:
    """What the attempt's record says of the failure (its times aside)."""
    [entry] = read_attempts(job_dir)
    keys = ("attempt", "kind", "blamed_rank", "message", "reason", "restarted", "in_process", "pids", "exit_code")
    return {k: entry.get(k) for k in keys}


def test_the_claimant_decides_once_every_rank_reported_or_is_behind_and_waits_for_a_silent_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at_once_dir, at_once = job(tmp_path, "at-once")
    for rank in BEHIND:  # their agents said so
        at_once.set(proto.reported(0, rank), "behind")
    monkeypatch.setattr(proto, "REPORT_WAIT_S", 30.0)  # a bound no loaded machine reaches by itself
    nxt, took = decide(at_once_dir, at_once)
    assert nxt == 1 and at_once.get(proto.decision(0)) == proto.RESTART.encode()
    assert took < 15, took  # not the wait for records that come after the decision

    monkeypatch.setattr(proto, "REPORT_WAIT_S", 0.5)  # (the bound, shortened for the test)
    silent_dir, silent = job(tmp_path, "silent")
    for rank in BEHIND[:-1]:
        silent.set(proto.reported(0, rank), "behind")  # rank 7's agent never answers (its node is slow, say)
    nxt, took = decide(silent_dir, silent)
    assert nxt == 1 and took >= 0.5  # the bound still holds for a rank that never answers

    assert verdict(at_once_dir) == verdict(silent_dir)  # the same attempt record, the same blame
    assert verdict(at_once_dir)["blamed_rank"] == FAILED and verdict(at_once_dir)["restarted"] is True
