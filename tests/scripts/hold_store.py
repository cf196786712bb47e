"""A torchrun-style script that holds its process group open (tests/task/test_reaper.py).

    python hold_store.py OUT HOW      HOW: env (init_method="env://") or tcp ("tcp://MASTER_ADDR:MASTER_PORT")

After the rendezvous, rank 0 writes OUT/ready (the MASTER_PORT) and every rank waits until the test
writes OUT/go, then a last barrier and exit 0.
"""

import os
import sys
import time

import torch.distributed as dist

OUT, HOW = sys.argv[1], sys.argv[2]
url = "env://" if HOW == "env" else f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
dist.init_process_group("gloo", init_method=url, rank=int(os.environ["RANK"]),
                        world_size=int(os.environ["WORLD_SIZE"]))
dist.barrier()
if dist.get_rank() == 0:
    with open(os.path.join(OUT, "ready.tmp"), "w") as fh:
        fh.write(os.environ["MASTER_PORT"])
    os.rename(os.path.join(OUT, "ready.tmp"), os.path.join(OUT, "ready"))
deadline = time.monotonic() + 120
while not os.path.exists(os.path.join(OUT, "go")) and time.monotonic() < deadline:
    time.sleep(0.05)
dist.barrier()
dist.destroy_process_group()
