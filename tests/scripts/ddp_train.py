"""An ordinary torchrun-style DDP script (no orch import): what users bring to ``orch run``/``orch submit``.

It reads torchrun's variables, calls ``init_process_group`` with ``env://``, runs a few DDP steps
on rank-dependent data and writes ``<out>/rank<R>.json``: every torchrun variable it saw, its
arguments as hex bytes, cwd, sys.path[0], the device and a checksum of the parameters.

    python ddp_train.py --out DIR [--steps N] [--lr LR] [--exit-code C] [--fail-first-attempt R]
                        [--kill-first-attempt R] [-- ARGS...]

``--fail-first-attempt R``: rank R exits with code 1 after its first step in the first attempt
(``TORCHELASTIC_RESTART_COUNT`` 0), so a restarted world trains again from the start.
``--kill-first-attempt R``: the same, but rank R dies of SIGKILL (kill -9: no exit code, no clean-up).
"""

import argparse
import json
import os
import signal
import sys

import torch
import torch.distributed as dist
from ddp_model import make_model  # a sibling module: needs the script's folder on sys.path
from torch.nn.parallel import DistributedDataParallel

# torchrun's worker variables (torch/distributed/elastic/agent/server/local_elastic_agent.py), plus
# NODE_RANK, which torchrun does not set (and neither should orch for a script).
NAMES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
         "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
         "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
         "TORCH_NCCL_ASYNC_ERROR_HANDLING", "OMP_NUM_THREADS", "NODE_RANK", "TORCHELASTIC_ERROR_FILE")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--exit-code", type=int, default=0)
    parser.add_argument("--fail-first-attempt", type=int, default=None, metavar="RANK")
    parser.add_argument("--kill-first-attempt", type=int, default=None, metavar="RANK")
    parser.add_argument("extra", nargs="*")
    args = parser.parse_args()
    rank = int(os.environ["RANK"])
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo", init_method="env://")
    try:
        model = make_model(seed=1 + rank)  # different start on every rank: DDP broadcasts rank 0's
        ddp = DistributedDataParallel(model)
        opt = torch.optim.SGD(ddp.parameters(), lr=args.lr)
        gen = torch.Generator().manual_seed(100 + rank)
        first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
        for step in range(args.steps):
            x = torch.randn(4, 8, generator=gen)
            loss = ddp(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step == 0 and first_attempt and rank == args.fail_first_attempt:
                os._exit(1)  # a crash: no clean-up, the other ranks wait in their next all-reduce
            if step == 0 and first_attempt and rank == args.kill_first_attempt:
                os.kill(os.getpid(), signal.SIGKILL)  # kill -9, mid-run
        flat = torch.cat([p.detach().flatten() for p in model.parameters()])
        record = {
            "env": {name: os.environ[name] for name in NAMES if name in os.environ},
            "argv_hex": [os.fsencode(a).hex() for a in sys.argv[1:]],
            "argv0": sys.argv[0],
            "extra_hex": [os.fsencode(a).hex() for a in args.extra],
            "cwd": os.getcwd(),
            "path0": sys.path[0],
            "params": [float(v) for v in flat.tolist()],
            "backend": dist.get_backend(),
            "world": dist.get_world_size(),
            "cuda_visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "orch_test_tag": os.environ.get("ORCH_TEST_TAG"),  # set by tests through --env / env=
        }
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"rank{rank}.json"), "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
