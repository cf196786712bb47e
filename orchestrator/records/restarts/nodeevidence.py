"""Which nodes a failed job's evidence points at (pure): the blame and the ranks' outcome records in,
``(node, kind)`` pairs out, for :mod:`orchestrator.records.restarts.badnodes`.

The evidence, as a table (``Blame.kind`` -> how each blamed rank's node is judged):

- ``stuck`` (a rank stopped making progress, the others gave up waiting): its node, ``hang``; or
  ``signal`` when its record says it died by a signal; or ``not_started`` when it left no record of
  this run at all and ``hosts`` names its node;
- ``vanished`` (a rank ended without a word, by a signal): ``signal``;
- ``failed`` (a rank's own error): ``nccl_cuda`` only when its one-line reason is an NCCL or CUDA error
  (``NCCL_CUDA``); a Python exception in the job's code never marks a node;
- ``early_exit``, ``all_waited``, ``stopped``: nothing (the job's code, or scancel / the time limit).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from orchestrator.records.restarts.blame import Blame
from orchestrator.records.restarts.rankoutcome import RankOutcome, current_run

# an NCCL or CUDA failure as torch words it (the one-line reason of a rank's record)
NCCL_CUDA = re.compile(r"\bNCCL (error|Error|WARN)|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|"
                       r"\bCUDA error\b|cudaError|CUDA driver error|uncorrectable ECC|Xid\b|"
                       r"CUBLAS_STATUS_(EXECUTION_FAILED|INTERNAL_ERROR)|DistBackendError")


def evidence(found: Blame | None, records: Sequence[RankOutcome], *, run: str | None = None,
             hosts: Mapping[int, str] | None = None) -> list[tuple[str, str]]:
    """The ``(node, kind)`` pairs the blame ``found`` points at, each once, in rank order.

    ``records``: the ranks' outcome records (``run``: the run they were judged for); ``hosts``: rank ->
    node where known otherwise (the allocation's rank table), for ranks that left no record."""
    if found is None:
        return []
    by_rank, _ = current_run(records, run)
    pairs: list[tuple[str, str]] = []
    for rank in found.ranks:
        rec = by_rank.get(rank)
        kind = _judge(found.kind, rec)
        node = rec.host if rec is not None and rec.host else (hosts or {}).get(rank)
        if kind is not None and node and (node, kind) not in pairs:
            pairs.append((node, kind))
    return pairs


def _judge(blame_kind: str, rec: RankOutcome | None) -> str | None:
    died = rec is not None and rec.kind == "running" and rec.exit_code is not None and rec.exit_code < 0
    if blame_kind == "stuck":
        if rec is None:
            return "not_started"
        return "signal" if died else "hang"
    if blame_kind == "vanished":
        return "signal" if died else None
    if blame_kind == "failed" and rec is not None and rec.reason and NCCL_CUDA.search(rec.reason):
        return "nccl_cuda"
    return None
