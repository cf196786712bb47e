"""Rank 0's records on a full disk (``metrics.jsonl`` appended, trimmed and synced; ``result.json`` and
``progress.json`` rewritten): one orch error naming the file and the fix, never a bare OSError. The full disk
is ``/dev/full`` (every write: ENOSPC) or an fsync that fails with ENOSPC (as on a file system that allocates
late)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from orchestrator.errors import OrchError
from orchestrator.runtime import metrics
from orchestrator.runtime.metrics import EpochMetrics, MetricsLog, write_json_atomic

FULL = Path("/dev/full")


def epoch(n: int) -> EpochMetrics:
    return EpochMetrics(epoch=n, epochs=5, values={"train_loss": 1.25 / n, "test_loss": None}, names=(),
                        samples_per_s=310.0, seconds=2.5, world_size=2, train_samples=96, steps=3)


def assert_one_error(caught: pytest.ExceptionInfo[OrchError], path: Path) -> None:
    assert caught.value.message == f"cannot write {path}: No space left on device", caught.value.message
    assert caught.value.hint and "free space" in caught.value.hint and "--job-root" in caught.value.hint


@pytest.fixture
def fsync_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(metrics.os, "fsync", no_space)


@pytest.mark.skipif(not os.access(FULL, os.W_OK), reason="no writable /dev/full here")
def test_an_epoch_appended_to_a_full_disk_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.symlink_to(FULL)
    with pytest.raises(OrchError) as caught:
        MetricsLog(path).append(epoch(4))
    assert_one_error(caught, path)


def test_syncing_and_trimming_metrics_on_a_full_disk_is_one_error(tmp_path: Path, fsync_fails: None) -> None:
    path = tmp_path / "metrics.jsonl"
    log = MetricsLog(path)
    log.append(epoch(1))
    log.append(epoch(2))  # appending does not fsync: it still works here
    with pytest.raises(OrchError) as caught:
        log.sync()
    assert_one_error(caught, path)
    with pytest.raises(OrchError) as caught:
        log.trim(1)
    assert_one_error(caught, path)
    assert [e["epoch"] for e in log.read()] == [1, 2]  # the log as it was: nothing half-written


@pytest.mark.parametrize("name", ["result.json", "progress.json"])
def test_rank_zeros_records_on_a_full_disk_are_one_error(tmp_path: Path, fsync_fails: None, name: str) -> None:
    path = tmp_path / name
    path.write_text('{"before": true}\n')
    with pytest.raises(OrchError) as caught:
        write_json_atomic(path, {"epoch": 3, "loss": 0.5})
    assert_one_error(caught, path)
    assert path.read_text() == '{"before": true}\n' and [p.name for p in tmp_path.iterdir()] == [name]
