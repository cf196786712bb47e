"""The doctor's catalog: one row per code (severity, what goes wrong, the fix). Codes are stable.

Severity policy (``orch submit``/``orch run`` refuse a script with an error; a warning never stops it):

- **error**: a certain defect that would hang or corrupt the run *under orch's launcher* (which sets
  RANK/LOCAL_RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT and binds each rank's GPU before the script
  starts), read from the code itself: a collective only some ranks reach, a loader that feeds every
  rank the whole data set, the process group destroyed inside the training loop; or that would crash it where it
  certainly runs: a name nothing defines (DDP020, pyflakes' analysis), on a line every run reaches.
- **warning**: everything that depends on a guess: about a branch (a flag may select another path),
  about a helper (a function of a local module the doctor could not read, or did not follow), about a
  flag's value (an argparse default), or about a name (``is_main`` taken for a rank-0 flag). A rule
  that is an error when the evidence is in the script downgrades that finding to a warning when the
  evidence is a guess (``Analysis.guess``); the rows below give each code's highest severity.
- **for the layout asked**: ``orch submit``/``orch run`` on more than one node make DDP010 (a device from the
  global rank), DDP021 (a file rendezvous in a local folder, or a file handed between ranks there) and DDP022 (a
  one-node check) errors (``orchestrator.doctor.feasibility``): each certainly fails across nodes, and works on one;
  so is a certain DDP023 (a framework layout written for another node count).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from orchestrator.spec.doctorcodes import DOCTOR_CODES

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Rule:
    code: str
    severity: Severity
    title: str
    fix: str


CATALOG: dict[str, Rule] = {rule.code: rule for rule in (
    Rule("DDP001", "warning",
         "CUDA used with no torch.cuda.set_device() before it: under plain torchrun every rank opens a context "
         "on GPU 0 (orch run/submit bind each rank's GPU before the script starts, so not there)",
         "call torch.cuda.set_device(local_rank) before init_process_group and any CUDA use (or pass "
         "device_id=torch.device('cuda', local_rank) to init_process_group): a device named only in .to(i) or "
         "device_ids=[i] leaves NCCL's communicator on GPU 0"),
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
         "checkpoint written to one path by every rank (or by every node's local rank 0), read back by every "
         "rank with no barrier after one rank wrote it, or the DDP wrapper saved instead of .module",
         "save once, on global rank 0 (if dist.get_rank() == 0:; in a Trainer callback if "
         "state.is_world_process_zero:; under Accelerate if accelerator.is_main_process:), then a barrier "
         "before any rank reads it, and save model.module.state_dict(), not the DDP wrapper's"),
    Rule("DDP007", "error",
         "destroy_process_group inside a loop or before later collectives",
         "call dist.destroy_process_group() once, after the last collective (at the end of the run)"),
    Rule("DDP008", "warning",
         "MASTER_ADDR / MASTER_PORT / world size / rank / rendezvous address hard-coded",
         "let the launcher set them (init_process_group('nccl') reads MASTER_ADDR, MASTER_PORT, "
         "WORLD_SIZE and RANK from the environment)"),
    Rule("DDP009", "warning",
         "torch.load without map_location in a distributed script: every rank loads onto GPU 0",
         "torch.load(path, map_location=f'cuda:{local_rank}') (or map_location='cpu')"),
    Rule("DDP010", "warning",
         "device chosen from the global rank: wrong from the second node on",
         "use the local rank (int(os.environ['LOCAL_RANK'])) for the device; keep the global rank for "
         "the process group and the sampler"),
    Rule("DDP011", "warning",
         "data split or shuffled with no seeded generator in a distributed script: each rank gets a different "
         "split",
         "pass generator=torch.Generator().manual_seed(SEED) (or seed every rank alike before the split: "
         "torch.manual_seed(SEED), the same SEED on every rank)"),
    Rule("DDP012", "warning",
         "device context manager used as a statement, never entered: no device is bound",
         "call torch.cuda.set_device(i) (or torch.accelerator.set_device_index(i)), or enter it: "
         "with torch.cuda.device(i): ..."),
    Rule("DDP013", "warning",
         "metric of the rank's own shard printed without a reduction (by rank 0, or by each rank after "
         "training): the number is one shard's, not the data set's",
         "dist.all_reduce the sums (correct, total, loss sum) on every rank before rank 0 prints them"),
    Rule("DDP014", "warning",
         "the script starts its own ranks (mp.spawn / start_processes / multiprocessing.Process, Lightning's "
         "ddp_spawn/ddp_notebook strategies) inside every rank the launcher started: nproc x N processes, each "
         "launched rank a world of its own",
         "under orch or torchrun run the worker directly with RANK/LOCAL_RANK/WORLD_SIZE from the environment; "
         "spawn only when they are absent: if 'LOCAL_RANK' not in os.environ: mp.spawn(...) else: "
         "main_worker(int(os.environ['LOCAL_RANK']), ...)"),
    Rule("DDP015", "warning",
         "the local rank (device or distributed mode) taken only from the legacy --local_rank flag: orch and "
         "torchrun pass no flag but set LOCAL_RANK, so every rank keeps the flag's default (all on one GPU, "
         "or not distributed at all)",
         "read the environment first: local_rank = int(os.environ.get(\"LOCAL_RANK\", args.local_rank))"),
    Rule("DDP016", "warning",
         "the local rank passed as the global rank (init_process_group(rank=LOCAL_RANK), a DistributedSampler's "
         "rank=, an index into what all_gather collected in global-rank order): from the second node on two "
         "processes claim each rank and the rendezvous fails or hangs (or the nodes read the same shards, or a "
         "rank takes another rank's entry)",
         "pass the global rank (int(os.environ['RANK'])) to init_process_group, or nothing: it reads RANK from "
         "the environment; keep LOCAL_RANK for the device"),
    Rule("DDP017", "warning",
         "forward through the DDP wrapper's .module in a training step (model.module(x), model.module.predict(x)): "
         "DDP's forward is bypassed, so that module's gradients are never averaged across ranks",
         "call the wrapper itself (model(x)); to reach another method, route it through the module's forward() "
         "(an argument that selects it), so the call goes through DDP"),
    Rule("DDP018", "warning",
         "a training step skipped on one rank before backward() (if not torch.isfinite(loss): continue, an empty "
         "batch, an exception caught with continue): the other ranks enter DDP's gradient all-reduce alone and hang",
         "decide together: flag = torch.tensor(float(ok), device=dev); dist.all_reduce(flag, op=dist.ReduceOp.MIN); "
         "skip on every rank when it is 0 (or zero the loss: (loss * 0).backward() keeps the all-reduce)"),
    Rule("DDP019", "warning",
         "a failed init_process_group caught and let go (try: ... except Exception: print(...)): the rank whose "
         "rendezvous failed trains on alone as a world of one, silently",
         "let the error stop the rank (no try, or re-raise in the except): the launcher reports the failure"),
    Rule("DDP020", "error",
         "a name used that nothing defines: a NameError when its line runs (after the whole training, if it is in "
         "the final save)",
         "define the name before that line, or use the one meant (the wrapped model's variable: "
         "model.module.state_dict(), not an undefined ddp_model's)"),
    Rule("DDP021", "warning",
         "a rendezvous only this machine can reach: a file:// init_method in a temporary or local folder (also a "
         "file one rank writes there and every rank reads: the other nodes never see it)",
         "let the launcher's address meet the ranks: init_process_group(backend) with no init_method (env://), "
         "or a file:// path on a file system every node mounts"),
    Rule("DDP022", "warning",
         "a check that the run is on one node (the world size equal to this machine's GPU count, a node count of 1, "
         "the local rank equal to the global one)",
         "drop the check (the world is nodes x GPUs per node), or run on one node (--nodes 1)"),
    Rule("DDP023", "warning",
         "a framework layout that cannot follow the launcher: the Trainer/Fabric (or detectron2 launch) num_nodes or "
         "devices is a fixed value (written in, left out: num_nodes defaults to 1, or a flag's default); under a "
         "launcher with other nodes or GPUs per node it stops at start-up (devices x num_nodes must be the world "
         "size) or trains on part of the machines",
         "let the layout follow the launch: devices='auto' (or -1) and num_nodes=int(os.environ.get("
         "'SLURM_NNODES', 1)) (or WORLD_SIZE // LOCAL_WORLD_SIZE); or pass the flags for the layout you run"),
    Rule("DDP024", "warning",
         "one rank leaves a loop (or the run) that the others go on in: a return, break or exit under a rank "
         "condition, or a stop decided on one rank's own value (a flag set under a rank condition, its shard's loss) "
         "and never shared: the others wait in the loop's next collective (DDP's gradient all-reduce in backward()) "
         "and the job hangs",
         "decide together: broadcast rank 0's decision (dist.broadcast_object_list([stop], src=0)) or reduce the "
         "value it rests on, then leave on every rank"),
)}

assert tuple(CATALOG) == DOCTOR_CODES, "orchestrator/spec/doctorcodes.py lists the catalog's codes"
