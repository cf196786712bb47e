"""DDP004 for a streamed data set: 🤗 Datasets' ``IterableDataset.shuffle(seed=..., buffer_size=...)`` (its
``buffer_size`` tells it from a map-style data set's one-off ``shuffle(seed)``) shuffles with ``seed + epoch``, the
epoch being what ``set_epoch`` sets: with no ``set_epoch`` call in the file (or the helpers it reaches), every epoch
streams each rank's shard in the same order, as a DistributedSampler without ``set_epoch`` does (LucaOne's
``split_dataset_by_node(...).shuffle(buffer_size=..., seed=args.seed)``). Only in a distributed script; a sampler's
``set_epoch`` is not the stream's; a call elsewhere in the project makes the finding possible
(``rules_data.set_epoch_elsewhere``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding

STREAM = "a streamed data set"  # the mark of these findings (rules_data.set_epoch_elsewhere reads it)


def check_stream_shuffle(a: Analysis) -> Iterator[Finding]:
    """DDP004 at each ``.shuffle(..., buffer_size=...)`` of a distributed script with no ``set_epoch`` call."""
    if not (a.distributed or a.framework_parallel) or any(data_sets_epoch(q) for q in a.helper_quals):
        return
    calls = [n for n in a.module.nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    if any(data_sets_epoch(ast.unparse(n.func)) for n in calls):
        return
    for call in calls:
        if (isinstance(call.func, ast.Attribute) and call.func.attr == "shuffle"
                and any(k.arg == "buffer_size" for k in call.keywords)):
            found = a.finding("DDP004", call, f"{ast.unparse(call)[:60]}: a streamed data set shuffled by seed + "
                              "epoch, and nothing calls its set_epoch", title="streamed data set shuffled with no "
                              "set_epoch() call: the same order every epoch", marks=frozenset({STREAM}))
            yield replace(found, fix="call the streamed data set's set_epoch(epoch) at the start of every epoch "
                                     "(train_dataset.set_epoch(epoch)): its shuffle then uses seed + epoch")


def data_sets_epoch(called: str) -> bool:
    """``train_dataset.set_epoch``, ``loader.dataset.set_epoch``: a ``set_epoch`` that may be the stream's; not a
    sampler's (``train_sampler.set_epoch(epoch)`` in a trainer handed ``train_sampler=None``: LucaOne's)."""
    head, _, last = called.rpartition(".")
    return last == "set_epoch" and "sampler" not in head.lower()
