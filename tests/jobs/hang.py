"""Test-only job (the hang and process tests): ranks that stop progressing, start their own processes, or report
how the rendezvous listens.

``fault`` (on rank ``fault_rank`` at training step ``fault_step``):

- ``spin``: stuck in Python (a busy loop that never returns);
- ``stop``: the rank SIGSTOPs itself (frozen, as under a debugger); resumed only by the signals that end it
  (Slurm sends SIGCONT before SIGTERM), it stays on that line, so its stack there says where it froze;
- ``build_hang``: stuck in ``build`` before training (only the start-up timeout applies there);
- ``raise``: an exception in the forward pass.

``child=True``: every rank starts ``sleep 600`` in build (its own subprocess, like a data server)
and writes its pid to ``child-rank<R>.pid`` in the job folder. ``probe=True``: rank 0 writes the
listening TCP sockets (``/proc/net/tcp*``) and MASTER_PORT to ``listen.json`` after the rendezvous.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from orchestrator import JobSpec, TrainParams

if TYPE_CHECKING:
    from orchestrator import BuildContext, TrainTask


class HangParams(TrainParams):
    epochs: int = Field(default=1, ge=1)
    batch_size: int = 16
    lr: float = 0.05
    samples: int = 512
    fault: Literal["none", "spin", "stop", "build_hang", "raise"] = "none"
    fault_rank: int = 1
    fault_step: int = 3
    child: bool = False
    probe: bool = False
    step_sleep: float = 0.0
    checkpoint: bool = False
    fault_node: str = Field(default="", description="fault only on this Slurm node (SLURMD_NODENAME); '': any")


def spin_forever() -> None:
    while True:  # stuck in Python: holds the GIL, answers no collective
        pass


def build(params: HangParams, ctx: BuildContext) -> TrainTask:
    import json
    import os
    import signal
    import subprocess
    import time
    from pathlib import Path

    import torch
    from torch import nn

    from orchestrator import TensorData, TrainTask

    if params.child:
        child = subprocess.Popen(["sleep", "600"])
        (ctx.job_dir / f"child-rank{ctx.rank}.pid").write_text(str(child.pid))
    if params.probe and ctx.rank == 0:
        listening = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    listening.append(fields[1])
        (ctx.job_dir / "listen.json").write_text(json.dumps(
            {"master_port": int(os.environ["MASTER_PORT"]), "listening": listening}))
    if params.fault == "build_hang" and ctx.rank == params.fault_rank:
        time.sleep(3600)
    on_node = params.fault_node in ("", os.environ.get("SLURMD_NODENAME", ""))

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(10, 10)
            self.calls = 0

        def forward(self, inputs: torch.Tensor) -> torch.Tensor:
            if self.training:
                step, self.calls = self.calls, self.calls + 1
                if params.step_sleep:
                    time.sleep(params.step_sleep)
                if step == params.fault_step and ctx.rank == params.fault_rank and on_node:
                    if params.fault == "spin":
                        spin_forever()
                    if params.fault == "stop":
                        os.kill(os.getpid(), signal.SIGSTOP)
                        time.sleep(3600)  # still stuck when resumed: the handler of the SIGTERM after it runs here
                    if params.fault == "raise":
                        raise RuntimeError(f"injected failure on rank {ctx.rank}")
            out: torch.Tensor = self.linear(inputs)
            return out

    gen = torch.Generator().manual_seed(params.seed)
    inputs = torch.randn(params.samples, 10, generator=gen)
    return TrainTask(model=Model(), train_set=TensorData(inputs, inputs.argmax(dim=1)), test_set=None)


SPEC = JobSpec(name="hang", params=HangParams, build=build, description="test-only: hangs and children")
