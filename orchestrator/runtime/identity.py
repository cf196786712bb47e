"""Is this checkpoint one this job can resume from? Checked on every rank before training starts.

``read_checkpoint`` proves a file is an intact orch checkpoint; this proves it is *this job's*: the
job name it records, counters that make sense (no negative epoch or step, one RNG record per saved
rank) and a model state whose keys and shapes match the model that ``build`` returned. Each
problem is a CheckpointError naming the field and the fix, instead of a ``load_state_dict``
traceback or a silently wrong resume.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from orchestrator.records.resumecheck import RESUME_HINT as _HINT
from orchestrator.runtime.checkpoint import CheckpointError


def _count(state: Mapping[str, Any], key: str, low: int) -> int:
    value = state.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise CheckpointError(f"the checkpoint's {key} is {value!r}, expected a whole number >= {low}", hint=_HINT)
    return value


def check_identity(state: Mapping[str, Any], *, job_name: str, model: torch.nn.Module) -> None:
    """Raise CheckpointError unless ``state`` (from read_checkpoint) belongs to this job and model."""
    saved_job = state.get("job")
    if saved_job is not None and saved_job != job_name:
        raise CheckpointError(f"the checkpoint was written by job {saved_job!r}, not by {job_name!r}", hint=_HINT)
    _count(state, "epoch", 0)
    step = _count(state, "step", 0)
    world = _count(state, "world_size", 1)
    _count(state, "batch_size", 1)
    ranks = state.get("ranks")
    if not isinstance(ranks, list) or len(ranks) != world or not all(
            isinstance(r, Mapping) and "rng" in r and "tally" in r for r in ranks):
        shown = f"{len(ranks)} entries" if isinstance(ranks, list) else type(ranks).__name__
        raise CheckpointError(f"the checkpoint's ranks hold {shown}, expected one RNG record for each of its "
                              f"{world} ranks", hint=_HINT)
    if step > 0 and not isinstance(state.get("partial_seconds"), (int, float)):
        raise CheckpointError("the checkpoint stopped mid-epoch but has no partial_seconds", hint=_HINT)
    saved = state.get("model")
    if not isinstance(saved, Mapping):
        raise CheckpointError("the checkpoint holds no model state", hint=_HINT)
    mine = model.state_dict()
    missing = [k for k in mine if k not in saved]
    extra = [k for k in saved if k not in mine]
    shapes = [k for k in mine if k in saved and (not isinstance(saved[k], torch.Tensor)
                                                  or tuple(saved[k].shape) != tuple(mine[k].shape))]
    if missing or extra or shapes:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing[:3])}")
        if extra:
            parts.append(f"unexpected {', '.join(extra[:3])}")
        if shapes:
            k = shapes[0]
            got = tuple(saved[k].shape) if isinstance(saved[k], torch.Tensor) else type(saved[k]).__name__
            parts.append(f"{k} has shape {got}, the model {tuple(mine[k].shape)}")
        raise CheckpointError("the checkpoint's model does not match the job's model (" + "; ".join(parts) + ")",
                              hint=_HINT)
