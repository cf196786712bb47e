"""A script whose entry point is decorated with torchelastic's ``@record`` (as torchrun's docs advise);
rank 1 raises, so its error file (``TORCHELASTIC_ERROR_FILE``) gets the exception and its traceback.

    torchrun --nproc-per-node 2 record_error.py   (or orch run --nproc 2)
"""

import os

import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


def check_batch(rank: int) -> None:
    if rank == 1:
        raise ValueError(f"rank {rank}: batch 3 has no labels")


@record
def main() -> None:
    dist.init_process_group("gloo")
    check_batch(int(os.environ["RANK"]))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
