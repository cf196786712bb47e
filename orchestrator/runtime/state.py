"""What a checkpoint holds, as types: ``Resume`` (read back) and ``checkpoint_state`` (written).

The file format itself (atomic writes, CRC checks, fallback to ``previous.pt``) is ``checkpoint``'s;
this module names the keys once, so the trainer never indexes a dict by convention.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.records.restarts.attempts import CHECKPOINT_STALL, CHECKPOINT_STALL_IN_TRAINING, CHECKPOINT_WRITE
from orchestrator.records.resumecheck import MID_EPOCH_HINT, mid_epoch_problem
from orchestrator.runtime.checkpoint import CheckpointError


@dataclass(frozen=True)
class RankState:
    """One rank's part: its running tally (mid-epoch) and its RNG states."""

    tally: dict[str, Any] | None
    rng: Mapping[str, Any]


@dataclass(frozen=True)
class Resume:
    """Where a run continues: after ``epoch`` complete epochs, at ``step`` of the next one."""

    epoch: int
    step: int
    seconds: float  # training time already spent in the interrupted epoch
    world_size: int
    batch_size: int
    grad_accum: int
    model: Mapping[str, Any]
    optimizer: Mapping[str, Any]
    scaler: Mapping[str, Any] | None
    ranks: list[RankState]
    # the goodput ledger so far: the training thread's time in saves, rank 0's time writing their files
    checkpoint_stall_s: float = 0.0
    checkpoint_write_s: float = 0.0
    stall_in_training_s: float = 0.0  # the stall's part between two training steps (the ledger takes it off)

    @classmethod
    def from_checkpoint(cls, state: Mapping[str, Any]) -> Resume:
        ranks = []
        for entry in state["ranks"]:
            tally = entry.get("tally")
            if isinstance(tally, (tuple, list)):  # an older checkpoint: (loss sum, correct, count)
                tally = {"loss_sum": tally[0], "sums": [tally[1]], "count": tally[2], "skipped": 0}
            ranks.append(RankState(tally=tally, rng=entry["rng"]))
        stall = float(state.get(CHECKPOINT_STALL, state.get("checkpoint_s", 0.0)))
        return cls(epoch=int(state["epoch"]), step=int(state["step"]),
                   seconds=float(state.get("partial_seconds", 0.0)), world_size=int(state["world_size"]),
                   batch_size=int(state["batch_size"]), grad_accum=int(state.get("grad_accum", 1)),
                   model=state["model"], optimizer=state["optimizer"], scaler=state.get("scaler"), ranks=ranks,
                   # a checkpoint of an older orch: checkpoint_s was written on the training thread
                   checkpoint_stall_s=stall,
                   checkpoint_write_s=float(state.get(CHECKPOINT_WRITE, state.get("checkpoint_s", 0.0))),
                   stall_in_training_s=float(state.get(CHECKPOINT_STALL_IN_TRAINING, stall)))

    def mine(self, rank: int, world_size: int) -> RankState:
        """This rank's part (rank 0's when the world size changed between epochs)."""
        return self.ranks[rank] if len(self.ranks) == world_size else self.ranks[0]

    def check(self, *, world_size: int, batch_size: int, grad_accum: int) -> None:
        """A mid-epoch checkpoint continues only with the same ranks, batch size and accumulation."""
        problem = mid_epoch_problem(epoch=self.epoch, step=self.step,
                                    saved=(self.world_size, self.batch_size, self.grad_accum),
                                    now=(world_size, batch_size, grad_accum))
        if problem is not None:
            raise CheckpointError(problem, hint=MID_EPOCH_HINT)


def checkpoint_state(*, model: Mapping[str, Any], optimizer: Mapping[str, Any], scaler: Mapping[str, Any] | None,
                     epoch: int, step: int, seconds: float, world_size: int, batch_size: int, grad_accum: int,
                     params: Mapping[str, Any], job: str, stall_s: float = 0.0, write_s: float = 0.0,
                     stall_in_training_s: float = 0.0) -> dict[str, Any]:
    """The shared part of a checkpoint (``Checkpointer.save`` adds each rank's RNG and tally)."""
    return {"model": model, "optimizer": optimizer, "scaler": scaler, "epoch": epoch, "step": step,
            "partial_seconds": seconds, "world_size": world_size, "batch_size": batch_size,
            "grad_accum": grad_accum, "params": dict(params), "job": job, CHECKPOINT_STALL: stall_s,
            CHECKPOINT_WRITE: write_s, CHECKPOINT_STALL_IN_TRAINING: stall_in_training_s}
