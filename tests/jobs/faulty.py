"""Test-only job: the smoke model with faults injected on purpose into one rank's training steps.

``fault`` picks the mistake, made by rank ``fault_rank`` at its ``fault_step``-th training step
(training-mode forward passes counted in this process, from 0; the first one is the runtime's
bucket-settling pass, ``orchestrator.runtime.loop.settle_buckets``):

- ``raise``: an exception in the forward pass;
- ``kill``: SIGKILL of the process itself (a rank that dies without a word);
- ``stop``: SIGSTOP of the process itself (a hung rank: the others wait in their next collective);
- ``stop_agent``: SIGSTOP of the process's parent, the rank's in-process agent, for good (its worker trains on);
- ``hang``: the rank runs on but makes no step (``time.sleep``, as a data loader that blocks: the others wait in
  their next collective);
- ``skip_barrier``: the classic ``if rank == 0: dist.barrier()`` mistake, a collective only one rank
  enters;
- ``exit0``: the process ends with exit code 0 in the middle of training;
- ``desync``: the rank changes its parameters outside DDP (``check_sync`` must catch it);
- ``abort_at_exit``: the rank trains to the end, then its process dies of SIGABRT a second after it leaves
  (as gloo's threads can abort an interpreter's teardown), when the other ranks have ended (any step).

``pace_file`` (a path): every step sleeps ``step_sleep`` only while that file exists, so a test that injects
faults from outside keeps the job slow while it does, then lets it finish at full speed (removes the file).

``signal_step`` with ``signal_rank`` (-1: every rank) makes those ranks send themselves the preemption signal
(SIGUSR2) at that step, as Slurm would; ``step_sleep`` slows every step down; ``fault_restart`` N makes
the fault only in restart N (requeues plus restarts inside the allocation), so a restarted job completes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from orchestrator import JobSpec, TrainParams

if TYPE_CHECKING:
    from orchestrator import BuildContext, TrainTask


class FaultyParams(TrainParams):
    epochs: int = Field(default=2, ge=1)
    batch_size: int = 16
    lr: float = 0.05
    samples: int = 1024
    test_samples: int = 256
    fault: Literal["none", "raise", "kill", "stop", "stop_agent", "hang", "skip_barrier", "exit0", "desync",
                   "abort_at_exit"] = "none"
    fault_rank: int = 1
    fault_step: int = 3
    signal_step: int | None = None
    signal_rank: int = Field(default=-1, description="the rank that gets the signal; -1: every rank")
    step_sleep: float = 0.0
    pace_file: str = Field(default="", description="step_sleep only while this file exists; empty: always")
    fault_restart: int = Field(default=-1, description="fault only in this restart (SLURM_RESTART_COUNT + "
                               "ORCH_ATTEMPT: requeues and restarts in the allocation); -1: in every one")


def build(params: FaultyParams, ctx: BuildContext) -> TrainTask:
    import os
    import signal
    import time

    import torch
    import torch.distributed as dist
    from torch import nn

    from orchestrator import TensorData, TrainTask

    class Faulty(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(10, 10)
            self.calls = 0

        def forward(self, inputs: torch.Tensor) -> torch.Tensor:
            if self.training:
                step, self.calls = self.calls, self.calls + 1
                if params.step_sleep and (not params.pace_file or os.path.exists(params.pace_file)):
                    time.sleep(params.step_sleep)
                if step == params.signal_step and params.signal_rank in (-1, ctx.rank):
                    os.kill(os.getpid(), signal.SIGUSR2)
                if step == params.fault_step and ctx.rank == params.fault_rank and faulty:
                    if params.fault == "raise":
                        raise RuntimeError(f"injected failure on rank {ctx.rank} at step {step}")
                    if params.fault == "kill":
                        os.kill(os.getpid(), signal.SIGKILL)
                    if params.fault == "stop":
                        os.kill(os.getpid(), signal.SIGSTOP)
                    if params.fault == "stop_agent":  # the rank's in-process agent (its parent), for good
                        os.kill(os.getppid(), signal.SIGSTOP)
                    if params.fault == "hang":
                        time.sleep(10**6)
                    if params.fault == "skip_barrier":
                        dist.barrier()  # only this rank enters: the others never join
                    if params.fault == "exit0":
                        os._exit(0)
                    if params.fault == "desync":
                        with torch.no_grad():
                            self.linear.bias.add_(1.0)
            out: torch.Tensor = self.linear(inputs)
            return out

    restart = int(os.environ.get("SLURM_RESTART_COUNT") or 0) + int(os.environ.get("ORCH_ATTEMPT") or 0)
    faulty = params.fault_restart in (-1, restart)
    if params.fault == "abort_at_exit" and ctx.rank == params.fault_rank and faulty:
        leave = os._exit  # the task leaves through os._exit (no interpreter teardown): the abort comes there

        def abort(code: int) -> None:
            time.sleep(1.0)
            os.kill(os.getpid(), signal.SIGABRT)
            leave(code)

        os._exit = abort  # type: ignore[assignment]

    gen = torch.Generator().manual_seed(params.seed)
    teacher = torch.randn(10, 10, generator=gen)

    def split(n: int) -> TensorData:
        inputs = torch.randn(n, 10, generator=gen)
        return TensorData(inputs, (inputs @ teacher).argmax(dim=1))

    return TrainTask(model=Faulty(), train_set=split(params.samples), test_set=split(params.test_samples))


SPEC = JobSpec(name="faulty", params=FaultyParams, build=build,
               description="test-only: smoke with injected faults")
