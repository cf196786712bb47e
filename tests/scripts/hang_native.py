"""Rank 1 blocks in native code at step 5 (a pthread mutex locked twice: no signal ends the wait, so Python never
runs a handler again) while rank 0 waits in the next all_reduce; rank 1 prints ``rank 1 hung at <time.time()>``."""

import ctypes
import time

import torch
import torch.distributed as dist


def block_in_native_code():
    libc = ctypes.CDLL(None)
    mutex = ctypes.create_string_buffer(64)  # zeroed: an unlocked default mutex
    libc.pthread_mutex_lock(mutex)
    libc.pthread_mutex_lock(mutex)


dist.init_process_group("gloo")
rank = dist.get_rank()
value = torch.ones(4)
for i in range(20):
    if rank == 1 and i == 5:
        print(f"rank 1 hung at {time.time():.3f}", flush=True)
        block_in_native_code()
    dist.all_reduce(value)
dist.destroy_process_group()
