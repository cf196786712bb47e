"""Launch styles: how a script starts its ranks (``orchestrator.spec.launch``: ``env``, ``per-node``,
``local-rank-arg``, ``slurm``), decided from structured facts of its project (``facts.py``, read by
``orchestrator.source``), never from the doctor's findings: ``orch run/submit/exec --no-check`` decide it without
running the doctor's rules. The doctor reads the same facts for DDP014/DDP015 and drops the finding the style
answers (``orchestrator.doctor.launchstyle``)."""

from __future__ import annotations

from orchestrator.launchstyles.facts import Facts, read
from orchestrator.launchstyles.style import choose, detect

__all__ = ["Facts", "choose", "detect", "read"]
