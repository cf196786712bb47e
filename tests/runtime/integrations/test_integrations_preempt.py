"""``Preemption`` in one process (the two-rank vote runs in test_lightning.py and test_hf.py): the task's flag is the
one read, ``requeue()`` exits with 75, checkpoints go under the job folder."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from orchestrator.runtime.integrations import preempt as integration
from orchestrator.spec.script import REQUEUE_EXIT
from orchestrator.task.preempt import PreemptFlag, installed


def test_the_flag_the_task_installed_is_reused_and_a_signal_before_the_script_counts() -> None:
    task_flag = PreemptFlag("USR2").install()
    try:
        os.kill(os.getpid(), signal.SIGUSR2)  # arrives before the script made its Preemption
        preemption = integration.Preemption()
        assert preemption.flag is task_flag and installed() is task_flag
        assert preemption.should_stop() and preemption.stopped
    finally:
        task_flag.restore()
    assert installed() is None


def test_without_a_task_flag_one_is_installed_for_the_named_signal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH_PREEMPT_SIGNAL", "USR1")
    preemption = integration.Preemption()
    try:
        assert preemption.flag.signal_name == "USR1" and not preemption.should_stop()
        os.kill(os.getpid(), signal.SIGUSR1)
        assert preemption.should_stop()
    finally:
        preemption.flag.restore()


def test_requeue_exits_with_orchs_requeue_code() -> None:
    preemption = integration.Preemption(PreemptFlag("USR2"))
    with pytest.raises(SystemExit) as stopped:
        preemption.requeue()
    assert stopped.value.code == REQUEUE_EXIT == 75


def test_resuming_and_the_checkpoint_folder_follow_orchs_variables(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    monkeypatch.delenv("TORCHELASTIC_RESTART_COUNT", raising=False)
    monkeypatch.delenv("ORCH_JOB_DIR", raising=False)
    assert not integration.resuming() and integration.checkpoint_dir() == Path("preempt")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "1")
    monkeypatch.setenv("ORCH_JOB_DIR", str(tmp_path))
    assert integration.resuming() and integration.checkpoint_dir() == tmp_path / "preempt"
