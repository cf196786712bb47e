"""Test script (warm restarts): times its own top-level imports and records them per rank and attempt in the job
folder (``imports-rank<R>.jsonl``: restart count, seconds, pid, whether torch was loaded before); rank 1 fails in
the first attempt after one all-reduce, so a job with restarts runs the world a second time, which completes."""

import time

began = time.perf_counter()
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

loaded = "torch" in sys.modules

import numpy  # noqa: E402, F401
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

took = time.perf_counter() - began
count = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
rank = int(os.environ["RANK"])
with open(os.path.join(os.environ["ORCH_JOB_DIR"], f"imports-rank{rank}.jsonl"), "a") as fh:
    fh.write(json.dumps({"restart": count, "imports_s": took, "pid": os.getpid(), "torch_loaded": loaded}) + "\n")
dist.init_process_group("gloo")
total = torch.ones(1)
dist.all_reduce(total)
assert total.item() == dist.get_world_size()
if count == 0 and rank == 1:
    sys.exit(1)
dist.barrier()
dist.destroy_process_group()
