"""The service under orch clean (orchestrator/service/snapshots.py): a snapshot no job folder names is listed by a
dry run and removed by a cleaning, under the job root of the cluster file named (a real snapshot store). orch clean
through the CLI, with snapshots that submits made: tests/records/snapshots/test_snapshots_store.py."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.records.snapshots.collect import collect
from orchestrator.records.snapshots.store import create, snapshot_root
from orchestrator.service.jobs import Scope
from orchestrator.service.snapshots import clean


def test_a_snapshot_no_job_names_is_listed_then_removed(clean_env: pytest.MonkeyPatch, tmp_path: Path,
                                                         write_cluster: Callable[..., Path]) -> None:
    scope = Scope(str(write_cluster()))
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    root = tmp_path / "jobs"
    snapshot = create(collect(code, root), root)
    os.utime(snapshot_root(root) / f"{snapshot.digest}.json", (1, 1))  # older than the grace period
    listed = clean(scope, dry_run=True)
    assert (listed.job_root, listed.dry_run, listed.report.removed) == (root, True, [snapshot.digest])
    assert Path(snapshot.path).is_dir()
    assert listed.as_dict() == {"job_root": str(root), "dry_run": True, "removed": [snapshot.digest], "kept": [],
                                "objects": listed.report.objects, "bytes": listed.report.freed}
    done = clean(scope)
    assert done.report.removed == [snapshot.digest] and not Path(snapshot.path).exists()
    assert clean(scope).report.removed == []
