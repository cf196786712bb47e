"""Hugging Face ``Trainer``: a callback that checkpoints on orch's preemption signal, exits for a requeue.

::

    trainer = Trainer(model, args, train_dataset=data, callbacks=[OrchPreemptionCallback()])
    trainer.train(resume_from_checkpoint=last_checkpoint(args.output_dir))   # None: from scratch

At each optimizer step every rank votes (:class:`~orchestrator.runtime.integrations.preempt.Preemption`);
when the vote says stop, the callback asks the Trainer for a checkpoint and the end of training
(``control.should_save``, ``control.should_training_stop``): the Trainer writes
``output_dir/checkpoint-<step>`` as it does at its own save steps (model, optimizer, scheduler, every
rank's RNG state), and at the end of ``train()`` every rank exits with 75. The requeued run resumes from
the newest ``checkpoint-*`` folder, and the Trainer skips the batches already trained, so the final
parameters equal an uninterrupted run's.
"""

from __future__ import annotations

import os
import re
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from orchestrator.runtime.integrations.preempt import Preemption

_CHECKPOINT = re.compile(r"checkpoint-(\d+)")  # the Trainer's folder names (PREFIX_CHECKPOINT_DIR-<step>)


def last_checkpoint(output_dir: str | os.PathLike[str]) -> str | None:
    """The newest ``checkpoint-<step>`` folder in ``output_dir``, or None (nothing to resume from)."""
    folder = os.fspath(output_dir)
    if not os.path.isdir(folder):
        return None
    steps = {int(m.group(1)): name for name in os.listdir(folder)
             if (m := _CHECKPOINT.fullmatch(name)) and os.path.isdir(os.path.join(folder, name))}
    return os.path.join(folder, steps[max(steps)]) if steps else None


class OrchPreemptionCallback(TrainerCallback):
    """Save a checkpoint and exit with 75 when orch's preemption signal reached any rank (all stop together)."""

    def __init__(self) -> None:
        self.preemption = Preemption()

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                    **kwargs: Any) -> TrainerControl:
        if self.preemption.should_stop():
            control.should_save = True
            control.should_training_stop = True
        return control

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                     **kwargs: Any) -> None:
        if self.preemption.stopped:
            self.preemption.requeue()
        self.preemption.finish()
