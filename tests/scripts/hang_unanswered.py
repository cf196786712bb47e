"""Rank 1 ignores SIGTERM at C level (as a native library may) and blocks in native code at step 5 (a pthread
mutex locked twice), while rank 0 waits in the next all_reduce: faulthandler never runs in it, so its log has no
dump; only a reader from outside (py-spy) finds where it is. Rank 1 prints ``rank 1 hung at <time.time()>``."""

import ctypes
import time

import torch
import torch.distributed as dist


def block_unanswered():
    libc = ctypes.CDLL(None)
    libc.signal(15, ctypes.c_void_p(1))  # SIGTERM -> SIG_IGN, behind Python's back: no handler runs
    mutex = ctypes.create_string_buffer(64)  # zeroed: an unlocked default mutex
    libc.pthread_mutex_lock(mutex)
    libc.pthread_mutex_lock(mutex)


dist.init_process_group("gloo")
rank = dist.get_rank()
value = torch.ones(4)
for i in range(20):
    if rank == 1 and i == 5:
        print(f"rank 1 hung at {time.time():.3f}", flush=True)
        block_unanswered()
    dist.all_reduce(value)
dist.destroy_process_group()
