"""Cleaning the code snapshots (``orch clean``): those under ``<job root>/.snapshots/`` that no job folder's
``job.json`` names any more are removed (:mod:`orchestrator.records.snapshots.clean`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.records.snapshots.clean import CleanReport
from orchestrator.records.snapshots.clean import clean as clean_store
from orchestrator.service.jobs import Scope, job_root_of


@dataclass(frozen=True)
class Cleaned:
    """What one cleaning removed (``dry_run``: would remove) and kept, under ``job_root``."""

    job_root: Path
    dry_run: bool
    report: CleanReport

    def as_dict(self) -> dict[str, Any]:
        """``orch clean --json``."""
        report = self.report
        return {"job_root": str(self.job_root), "dry_run": self.dry_run, "removed": report.removed,
                "kept": report.kept, "objects": report.objects, "bytes": report.freed}


def clean(scope: Scope, *, dry_run: bool = False) -> Cleaned:
    """Remove (``dry_run``: only list) the snapshots no job folder under the cluster's job root refers to."""
    root = job_root_of(scope)
    return Cleaned(root, dry_run, clean_store(root, dry_run=dry_run))
