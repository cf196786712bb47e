"""A correct script that also forms subgroups: the default group through env://, then ``new_group`` of
each rank alone and of every rank, with an all-reduce in each."""

import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
mine = [dist.new_group([r]) for r in range(world)][rank]  # every rank makes every group, in the same order
everyone = dist.new_group(list(range(world)))
total = torch.ones(1)
dist.all_reduce(total, group=everyone)
alone = torch.ones(1)
dist.all_reduce(alone, group=mine)
assert (total.item(), alone.item()) == (world, 1), (total, alone)
assert int(os.environ["WORLD_SIZE"]) == world
dist.barrier()
dist.destroy_process_group()
