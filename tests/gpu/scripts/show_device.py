"""What a rank was given (no orch import): ``CUDA_VISIBLE_DEVICES``, the GPUs it sees and the device current
when the script began (orch binds it before a script runs), then one all-reduce on that device.

``<out>/rank<R>.json``: rank, local_rank, visible, device_count, current, uuid (of the current device), sum.

    python show_device.py --out DIR
"""

import argparse
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    cuda = torch.cuda.is_available()
    record = {"rank": rank, "local_rank": local_rank, "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
              "device_count": torch.cuda.device_count() if cuda else 0}
    if cuda:
        current = torch.cuda.current_device()  # as orch left it: no set_device of our own
        device = torch.device("cuda", current)
        record.update(current=current, uuid=str(torch.cuda.get_device_properties(current).uuid))
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        record.update(current=None, uuid=None)
        dist.init_process_group("gloo")
    try:
        tensor = torch.ones(1024, device=device)
        dist.all_reduce(tensor)
        record.update(sum=float(tensor[0].item()), world=dist.get_world_size(), backend=dist.get_backend())
    finally:
        dist.destroy_process_group()
    (Path(args.out) / f"rank{rank}.json").write_text(json.dumps(record), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
