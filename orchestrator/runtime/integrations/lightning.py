"""Lightning: a callback that checkpoints on orch's preemption signal, exits for a requeue, and resumes exactly.

::

    trainer = L.Trainer(..., callbacks=[OrchPreemption()])
    trainer.fit(model, datamodule, ckpt_path="last")   # the first run finds none and starts from scratch

At each optimizer step every rank votes (:class:`~orchestrator.runtime.integrations.preempt.Preemption`);
when the vote says stop, ``trainer.save_checkpoint`` writes ``$ORCH_JOB_DIR/preempt/preempted.ckpt``
(rank 0 writes a temporary file, renamed into place once complete) and every rank exits with 75. The
callback is an ``OnExceptionCheckpoint``, so ``ckpt_path="last"`` picks that file up after the requeue
(the newest of it and a ``ModelCheckpoint(save_last=True)``'s). A checkpoint taken inside an epoch
resumes at the next batch: with a map-style loader that Lightning cannot resume itself (not
``state_dict``-able) the callback skips the batches already trained, so the final parameters equal an
uninterrupted run's. Only for a preemption does it write (not on other exceptions), and the file is
removed once a fit completes.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import lightning.pytorch as pl
from lightning.fabric.utilities.data import _set_sampler_epoch
from lightning.fabric.utilities.types import _Stateful
from lightning.pytorch.callbacks import OnExceptionCheckpoint

from orchestrator.runtime.integrations.preempt import Preemption, checkpoint_dir


class OrchPreemption(OnExceptionCheckpoint):
    """Checkpoint and exit with 75 when orch's preemption signal reached any rank (all stop together)."""

    def __init__(self, dirpath: str | os.PathLike[str] | None = None, filename: str = "preempted") -> None:
        super().__init__(os.fspath(dirpath) if dirpath is not None else os.fspath(checkpoint_dir()), filename)
        self.preemption = Preemption()
        self._position: dict[str, int] = {}  # saved: the epoch and the batches of it already trained
        self._skip: dict[str, int] = {}  # loaded: where the preempted run stopped

    @property
    def state_key(self) -> str:
        return "OrchPreemption"

    def state_dict(self) -> dict[str, Any]:
        return dict(self._position)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._skip = {k: int(state_dict[k]) for k in ("epoch", "batches") if k in state_dict}

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """After a resume inside an epoch: skip the batches the preempted run already trained."""
        skip, self._skip = self._skip, {}
        loop = trainer.fit_loop
        loader, fetcher = loop._combined_loader, loop._data_fetcher
        if not skip or skip.get("epoch") != trainer.current_epoch or loader is None or fetcher is None:
            return
        if any(isinstance(dl, _Stateful) for dl in loader.flattened):
            return  # Lightning restores such a loader's position itself
        for dl in loader.flattened:
            _set_sampler_epoch(dl, trainer.current_epoch)  # as the loop does next: the same order of samples
        fetched = fetcher.fetched  # the loop adds the batches it restored to it itself
        for _ in range(skip.get("batches", 0)):
            next(fetcher)
        fetcher.fetched = fetched
        warnings.filterwarnings("ignore", "You're resuming from a checkpoint that ended before the epoch ended")

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if (batch_idx + 1) % trainer.accumulate_grad_batches:
            return  # inside a gradient accumulation: vote at optimizer steps only
        if not self.preemption.should_stop():
            return
        self._position = {"epoch": trainer.current_epoch, "batches": batch_idx + 1}
        partial = self.ckpt_path + ".partial"
        trainer.save_checkpoint(partial)  # every rank; rank 0 writes, then all meet at a barrier
        if trainer.is_global_zero:
            os.replace(partial, self.ckpt_path)
        trainer.strategy.barrier("orch-preempt")
        self.preemption.requeue()

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.preemption.finish()

    def on_exception(self, trainer: pl.Trainer, *_: Any, **__: Any) -> None:
        """Nothing: the checkpoint is written for a preemption only (before the exit), never on an error."""

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if not self.preemption.stopped:  # a fit that ended without a preemption: the old one is spent
            super().teardown(trainer, pl_module, stage)
