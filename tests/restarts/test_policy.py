"""The restart policy's rule for a full disk (restarts/policy.py): a rank that failed because a write found no
space is not restarted, and the decision says so in those words, not as a usage error (the rest of the policy
table: tests/slurm/test_restart.py)."""

from __future__ import annotations

import errno
import os

import pytest

from orchestrator.records.restarts.blame import blame
from orchestrator.records.restarts.rankoutcome import RankOutcome
from orchestrator.restarts.policy import Ended, decide


def failed(reason: str, exit_code: int = 2) -> Ended:
    records = [RankOutcome.model_validate({"rank": 0, "world_size": 2, "run": "7", "restart": 0, "kind": "failed",
                                           "exit_code": exit_code, "started": 100.0, "ended": 104.0, "host": "node1",
                                           "reason": reason}),
               RankOutcome.model_validate({"rank": 1, "world_size": 2, "run": "7", "restart": 0, "kind": "waited",
                                           "how": "lost", "exit_code": 3, "started": 100.0, "ended": 105.0,
                                           "host": "node2", "reason": "lost"})]
    return Ended(attempt=0, exit_code=exit_code, blame=blame(records, world_size=2),
                 records={r.rank: r for r in records})


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_a_full_disk_is_not_restarted_and_is_named(code: int) -> None:
    words = os.strerror(code)
    decision = decide(failed(f"cannot write /jobs/j/checkpoints/latest.pt: {words}"), max_restarts=3)
    assert not decision.restart and decision.kind == "failed" and decision.blamed_rank == 0
    assert decision.message.startswith(f"the disk is full ({words})"), decision.message
    assert "free space" in decision.message and "usage" not in decision.message, decision.message


def test_other_failures_keep_their_rules() -> None:
    assert "usage or configuration error" in decide(failed("bad input"), max_restarts=3).message
    assert decide(failed("RuntimeError: boom", exit_code=1), max_restarts=3).restart
