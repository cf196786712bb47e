"""Preemption: the handler only sets a flag; every rank stops at the same step (one-rank world here,
two ranks in tests/local/test_runner.py)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from orchestrator.env.devices import CPU
from orchestrator.local.rankenv import free_port
from orchestrator.runtime.dist import Dist, StopVote, process_group
from orchestrator.task.preempt import SIGNALS, PreemptFlag


def test_signal_sets_the_flag_and_restore_puts_the_old_handler_back() -> None:
    before = signal.getsignal(signal.SIGUSR2)
    flag = PreemptFlag("USR2").install()
    try:
        assert not flag.requested
        os.kill(os.getpid(), signal.SIGUSR2)  # would terminate the process without the handler
        assert flag.requested and flag.received_at is not None
    finally:
        flag.restore()
    assert signal.getsignal(signal.SIGUSR2) == before


def test_every_configurable_signal_is_known() -> None:
    from typing import get_args

    from orchestrator.spec.cluster import Launcher

    names = get_args(Launcher.model_fields["preempt_signal"].annotation)
    assert set(names) == set(SIGNALS)
    with pytest.raises(ValueError, match="USR2"):
        PreemptFlag("KILL")


@pytest.fixture
def single_rank() -> Iterator[Dist]:
    with process_group(rank=0, world_size=1, local_rank=0, master_addr="127.0.0.1", master_port=free_port(),
                       choice=CPU, timeout=30, collective_timeout=30) as ctx:
        yield ctx


def test_vote_stops_one_boundary_after_the_flag(single_rank: Dist) -> None:
    flag = PreemptFlag("USR2")
    vote = StopVote(flag, single_rank)
    assert [vote.should_stop() for _ in range(3)] == [False, False, False]
    flag.request()
    # the vote started at this boundary carries the flag; its result is read at the next one
    assert vote.should_stop() is False
    assert vote.should_stop() is True
    vote.drain()
