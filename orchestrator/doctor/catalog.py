"""The doctor's catalog: one row per code (severity, what goes wrong, the fix). Codes are stable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Rule:
    code: str
    severity: Severity
    title: str
    fix: str


CATALOG: dict[str, Rule] = {rule.code: rule for rule in (
    Rule("DDP001", "error",
         "CUDA used with no torch.cuda.set_device() before it: every rank opens a context on GPU 0",
         "call torch.cuda.set_device(local_rank) right after init_process_group, before any CUDA use"),
    Rule("DDP002", "error",
         "collective reachable only under a rank condition: the other ranks never call it, the job hangs",
         "call the collective on every rank: move it out of the rank condition (keep only the I/O inside)"),
    Rule("DDP003", "error",
         "DataLoader without a DistributedSampler: every rank trains on the whole data set",
         "pass sampler=DistributedSampler(dataset) (and shuffle=False) to the DataLoader"),
    Rule("DDP004", "warning",
         "shuffling DistributedSampler whose set_epoch() is never called: the same order every epoch",
         "call sampler.set_epoch(epoch) at the start of every epoch"),
    Rule("DDP005", "warning",
         "loss/metric printed or logged in the training loop on every rank, unreduced",
         "print on rank 0 only (if rank == 0:), after dist.all_reduce(...) if you want the global value"),
    Rule("DDP006", "warning",
         "torch.save on every rank, or of the DDP wrapper instead of .module",
         "save once (if rank == 0:) and save model.module.state_dict(), not the DDP wrapper's"),
    Rule("DDP007", "error",
         "destroy_process_group inside a loop or before later collectives",
         "call dist.destroy_process_group() once, after the last collective (at the end of the run)"),
    Rule("DDP008", "warning",
         "MASTER_ADDR / MASTER_PORT / world size / rank hard-coded",
         "let the launcher set them (init_process_group('nccl') reads MASTER_ADDR, MASTER_PORT, "
         "WORLD_SIZE and RANK from the environment)"),
    Rule("DDP009", "warning",
         "torch.load without map_location in a distributed script: every rank loads onto GPU 0",
         "torch.load(path, map_location=f'cuda:{local_rank}') (or map_location='cpu')"),
    Rule("DDP010", "warning",
         "device chosen from the global rank: wrong from the second node on",
         "use the local rank (int(os.environ['LOCAL_RANK'])) for the device; keep the global rank for "
         "the process group and the sampler"),
)}
