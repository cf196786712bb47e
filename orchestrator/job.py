"""The job-file names at their old path, for job files written before the layered layout.

    from orchestrator.job import JobSpec, Resources, TrainParams    # still works
    from orchestrator import JobSpec, Resources, TrainParams        # the documented path

This is the one alias module in the package (tests/commands/test_public_api.py keeps it working); it re-exports
:mod:`orchestrator.spec.job`'s three public names and nothing else.
"""

from __future__ import annotations

from orchestrator.spec.job import JobSpec, Resources, TrainParams

__all__ = ["JobSpec", "Resources", "TrainParams"]
