"""A per-node script whose processes print many lines at once into the descriptors they share: ``-g``
processes per node (``mp.spawn``, as tests/scripts/spawn_per_node.py), each of which joins the world (gloo),
waits at a barrier for the others, then prints ``--lines`` lines, alternately to stdout and stderr, each
``print`` of several parts (unbuffered, each part would be a write of its own):

    CHATTER <out|err> rank <R> line <I> <pad>

    python spawn_chatter.py -n NODES -g PROCS -nr NODE [--lines N] [--pad K]
"""

import argparse
import sys

import torch.distributed as dist
import torch.multiprocessing as mp


def chatter(index, args):
    rank = args.nr * args.gpus + index
    dist.init_process_group(backend="gloo", init_method="env://", world_size=args.gpus * args.nodes, rank=rank)
    dist.barrier()  # every process starts printing at once
    pad = "x" * args.pad
    for i in range(args.lines):
        if i % 2:
            print("CHATTER", "err", "rank", rank, "line", i, pad, file=sys.stderr)
        else:
            print("CHATTER", "out", "rank", rank, "line", i, pad)
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", "--nodes", default=1, type=int)
    parser.add_argument("-g", "--gpus", default=1, type=int, help="processes per node")
    parser.add_argument("-nr", "--nr", default=0, type=int, help="this node's index")
    parser.add_argument("--lines", default=2000, type=int)
    parser.add_argument("--pad", default=40, type=int)
    args = parser.parse_args()
    mp.spawn(chatter, nprocs=args.gpus, args=(args,))


if __name__ == "__main__":
    main()
