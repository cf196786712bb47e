"""An HF Trainer script with orch's preemption callback: tiny regression, synthetic data, 2 epochs of 8 steps per rank.

``--wait-at K`` (first run only): at optimizer step K every rank writes ``<out>/ready<rank>`` and waits (at most
120 s) for the preemption signal. Every rank writes its final parameters to ``<out>/params<rank>.json`` (exact
floats) and the checkpoint it resumed from.
"""

import argparse
import json
import os
import time
from pathlib import Path

import torch
from transformers import Trainer, TrainerCallback, TrainingArguments

from orchestrator.runtime.integrations.hf import OrchPreemptionCallback, last_checkpoint
from orchestrator.runtime.integrations.preempt import preempt_flag, resuming

parser = argparse.ArgumentParser()
parser.add_argument("--out", type=Path, required=True)
parser.add_argument("--wait-at", type=int, default=0)
args = parser.parse_args()
args.out.mkdir(parents=True, exist_ok=True)
rank = int(os.environ.get("RANK", "0"))


class Regression(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))

    def forward(self, x, labels):
        return {"loss": torch.nn.functional.mse_loss(self.net(x), labels)}


class WaitForSignal(TrainerCallback):
    def on_step_end(self, targs, state, control, **kwargs):
        if args.wait_at and not resuming() and state.global_step == args.wait_at:
            (args.out / f"ready{rank}").touch()
            deadline = time.monotonic() + 120
            while not preempt_flag().requested and time.monotonic() < deadline:
                time.sleep(0.05)


torch.manual_seed(0)
data = torch.Generator().manual_seed(0)
x = torch.randn(64, 4, generator=data)
samples = [{"x": row, "labels": row.sum(0, keepdim=True).sin()} for row in x]
targs = TrainingArguments(output_dir=str(args.out / "hf"), per_device_train_batch_size=4, num_train_epochs=2,
                          learning_rate=0.05, optim="sgd", lr_scheduler_type="constant", weight_decay=0.0,
                          save_strategy="no", logging_strategy="no", report_to=[], seed=0, use_cpu=True,
                          disable_tqdm=True, ddp_backend="gloo")
model = Regression()
trainer = Trainer(model=model, args=targs, train_dataset=samples, callbacks=[WaitForSignal(), OrchPreemptionCallback()])
resume = last_checkpoint(targs.output_dir)
trainer.train(resume_from_checkpoint=resume)
params = {k: v.flatten().tolist() for k, v in model.state_dict().items()}
(args.out / f"params{rank}.json").write_text(json.dumps({"params": params, "resumed_from": resume,
                                                          "world": trainer.args.world_size}))
