"""The generation protocol of in-process restarts (restarts/protocol.py): keys, decisions, the
state of a stopped process, and how attempts.json counts a step's in-process restarts (pure)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from orchestrator.restarts import protocol as proto
from orchestrator.spec.cluster import Launcher
from orchestrator.spec.launch import Launch, LaunchStyle
from orchestrator.spec.runconfig import RunConfig
from orchestrator.spec.script import ScriptTarget


def test_every_generation_has_its_own_prefix_claim_and_decision() -> None:
    keys = {f(g) for g in range(3) for f in (proto.prefix, proto.claim, proto.decision)}
    assert len(keys) == 9
    assert proto.prefix(1) != proto.prefix(10) and not proto.prefix(1).startswith(proto.KEY_ROOT)
    assert proto.lost(1, 2) != proto.lost(2, 1) and proto.at(0) != proto.at(1)


def test_a_decision_reads_back_as_restart_or_the_reason_not_to() -> None:
    assert proto.parse_decision(proto.RESTART.encode()) == (True, "")
    assert proto.parse_decision(proto.encode_stop("the 1 restart allowed is used up")) == (
        False, "the 1 restart allowed is used up")
    restart, why = proto.parse_decision(None)
    assert not restart and "no decision" in why
    restart, why = proto.parse_decision(b"\xffgarbage")
    assert not restart and "unreadable" in why
    assert len(proto.encode_stop("x" * 2000)) == 500


def test_the_state_letter_of_a_proc_stat_line() -> None:
    assert proto.process_state("123 (python) T 1 2 3") == "T"
    assert proto.process_state("123 (a) b) S 1 2 3") == "S"  # a command name with ") " in it
    assert proto.process_state("garbage") is None
    assert proto.process_state("1 (x)") is None


def test_a_steps_in_process_restarts_are_counted_from_its_first_attempt() -> None:
    history = [
        {"attempt": 0, "job": "7", "requeue": 0, "in_process": True},  # an earlier step of this allocation
        {"attempt": 1, "job": "7", "requeue": 0, "in_process": False},
        {"attempt": 2, "job": "7", "requeue": 0, "in_process": True},  # this step (started at attempt 2)
        {"attempt": 3, "job": "7", "requeue": 0, "in_process": True},
        {"attempt": 2, "job": "7", "requeue": 1, "in_process": True},  # another requeue
        {"attempt": 4, "job": "8", "requeue": 0, "in_process": True},  # another job
        {"attempt": "5", "job": "7", "requeue": 0, "in_process": True},  # damaged
    ]
    assert proto.in_step_restarts(history, job="7", requeue=0, base=2) == 2
    assert proto.in_step_restarts(history, job="7", requeue=0, base=0) == 3
    assert proto.in_step_restarts([], job="7", requeue=0, base=0) == 0


def test_pids_of_an_attempts_records() -> None:
    records = {1: SimpleNamespace(pid=11), 0: SimpleNamespace(pid=10), 2: SimpleNamespace(pid=None)}
    assert proto.pids(records) == {"0": 10, "1": 11}


def test_every_fallback_says_why() -> None:
    assert set(proto.FALLBACK_REASONS) == {"peer_only", "store_lost", "no_decision", "agent_stopped", "declined"}
    assert all("step" in why for why in proto.FALLBACK_REASONS.values())


def test_warm_imports_are_a_scripts_unconditional_top_level_imports_of_known_packages() -> None:
    source = """
import os, torch
import numpy as np
from torch import nn
from torchvision.models import resnet18
from . import sibling
from mylib import heavy
import transformers.models.bert
if True:
    import pandas
try:
    import scipy
except ImportError:
    pass
def main():
    import lightning
"""
    assert proto.warm_imports(source) == ["torch", "numpy", "torchvision.models", "transformers.models.bert"]
    assert proto.warm_imports("import torch\ndef (:") == []


def test_orch_status_says_which_attempts_were_restarted_in_their_step() -> None:
    from orchestrator.records.restarts.attempts import format_attempts

    lines = format_attempts([
        {"attempt": 0, "requeue": 0, "kind": "vanished", "blamed_rank": 1, "exit_code": -9, "in_process": True},
        {"attempt": 1, "requeue": 0, "kind": "failed", "exit_code": 3, "in_process": False,
         "fallback": "peer_only: the worker gave up on a collective"},
        {"attempt": 2, "requeue": 0, "kind": "failed", "exit_code": 1, "in_process": False,
         "by_step": "a script on 2 nodes"},
        {"attempt": 3, "requeue": 0, "kind": "completed", "exit_code": 0},
    ])
    assert "restarted in its step" in lines[0] and "restarted in its step" not in lines[3]
    assert "not restarted in its step: peer_only: the worker gave up" in lines[1]
    assert "restarted by step: a script on 2 nodes" in lines[2] and "by step" not in lines[3]


def _cfg(nodes: int = 1, style: LaunchStyle | None = None, **launcher: Any) -> RunConfig:
    script = None if style is None else ScriptTarget(kind="script", target="/x/train.py", cwd="/x",
                                                     launch=Launch(style=style))
    return RunConfig(mode="slurm", job_name="j", job_file="/jobs/j.py", params={}, nodes=nodes, gpus_per_node=0,
                     tasks_per_node=2, cpus_per_task=1, job_dir="/x/j", created="2026-11-29T00:00:00+00:00",
                     script=script, launcher=Launcher(**launcher))


def test_in_process_restarts_are_the_default_and_the_step_restart_runs_where_they_cannot_apply() -> None:
    on: dict[str, Any] = {"max_restarts": 2}  # launcher.restart as written: the default
    cases = [  # (cfg, preflight, loopback, why by step; None: the task is its rank's agent)
        (_cfg(2, **on), False, False, None),  # orch's entrypoint, on several nodes too
        (_cfg(1, "env", **on), False, True, None),  # a script on one node: warm restarts
        (_cfg(2, "env", **on), False, False, None),  # on several nodes too (the agents meet at their own port)
        (_cfg(2, "env", **on), False, True, None),  # nodes that share one address (a test cluster)
        (_cfg(1, "env", **on), False, False, None),  # one node whose MASTER_ADDR is not loopback (spare nodes)
        (_cfg(1, "per-node", **on), False, True, "a script that starts its own processes on each node"),
        (_cfg(2, "per-node", **on), False, False, "a script that starts its own processes on each node"),
        (_cfg(2, **on), True, False, "the preflight"),
        (_cfg(2, max_restarts=0), False, False, "max_restarts 0: nothing is restarted"),
        (_cfg(2, max_restarts=2, restart="step"), False, False, "launcher.restart: step"),
        (_cfg(1, "env", max_restarts=2, restart="step"), False, True, "launcher.restart: step"),
    ]
    for cfg, preflight, loopback, why in cases:
        assert proto.by_step(cfg, preflight=preflight, loopback=loopback) == why, (cfg, why)
        assert proto.is_agent(cfg, preflight=preflight, loopback=loopback) is (why is None)


def test_the_dry_run_says_which_restart_a_job_gets() -> None:
    kind, words = proto.how_restarted(_cfg(2, max_restarts=2), loopback=False) or ("", "")
    assert kind == "in-process" and words.startswith("in-process (a failed rank is forked again")
    kind, words = proto.how_restarted(_cfg(1, "env", max_restarts=2), loopback=True) or ("", "")
    assert kind == "in-process" and "warm" in words
    assert "own port" not in words  # one node: the agents' store is the script's, at MASTER_PORT
    kind, words = proto.how_restarted(_cfg(2, "env", max_restarts=2), loopback=False, master_port=20000) or ("", "")
    assert kind == "in-process" and "warm" in words and "the agents meet at their own port 26384" in words, words
    kind, words = proto.how_restarted(_cfg(2, "per-node", max_restarts=2), loopback=False) or ("", "")
    assert (kind, words) == ("step", "by step (a script that starts its own processes on each node): every rank "
                                     "starts again in a new step")
    assert proto.how_restarted(_cfg(2, max_restarts=0), loopback=False) is None


def test_a_scripts_agents_meet_apart_from_its_own_rendezvous_where_rank_0s_task_does_not_host_it() -> None:
    """On one machine rank 0's task hosts the script's store at MASTER_PORT, and the agents share it; on several
    nodes (even nodes that share one address) or off loopback the script's rank 0 hosts it: the agents meet at
    their own port. orch's entrypoint: its agents' store is MASTER_PORT's."""
    assert not proto.agents_apart(_cfg(1, "env"), loopback=True)
    assert proto.agents_apart(_cfg(2, "env"), loopback=True) and proto.agents_apart(_cfg(2, "env"), loopback=False)
    assert proto.agents_apart(_cfg(1, "env"), loopback=False)
    assert not proto.agents_apart(_cfg(2), loopback=False)


def test_a_scripts_next_world_reads_back_as_its_address_and_port() -> None:
    assert proto.parse_world(proto.encode_world("node1", 31000).encode()) == ("node1", 31000)
    assert proto.parse_world(proto.encode_world("fd00::2", 31000)) == ("fd00::2", 31000)  # IPv6: the last colon
    for bad in ("31000", "node1:", "node1:0", "node1:70000", "node1:x"):
        try:
            proto.parse_world(bad)
        except ValueError:
            continue
        raise AssertionError(bad)
