"""DDP016 through an attribute: ``args.rank = gpu`` in a worker whose callers pass it the local rank, then
``init_process_group(rank=args.rank)`` (a public T5 trainer's pattern: on two nodes the second node's processes claim
ranks 0..7 again), even where the script set it to the global rank before. An attribute that holds the global rank
stays quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

SCRIPT = """\
import argparse
import os

import torch.distributed as dist


def main_worker(gpu, args):
    args.gpu = gpu
    args.rank = {assigned}
    dist.init_process_group(backend="gloo", init_method="env://", rank=args.rank, world_size=args.world_size)


if __name__ == "__main__":
    args = argparse.ArgumentParser().parse_args()
    args.world_size = int(os.environ["WORLD_SIZE"])
    args.local_rank = int(os.environ["LOCAL_RANK"])
    args.rank = int(os.environ["RANK"])  # overwritten in the worker
    main_worker(args.local_rank, args)
"""


@pytest.mark.parametrize(("assigned", "found"), [
    ("gpu", True),  # the local rank the caller passes
    ('int(os.environ["RANK"])', False),
    ("dist.get_rank() if dist.is_initialized() else 0", False),
])
def test_an_attribute_set_from_the_callers_local_rank_is_the_local_rank(tmp_path: Path, assigned: str,
                                                                        found: bool) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(assigned=assigned), encoding="utf-8")
    hits = [f.line for f in check_file(script) if f.code == "DDP016"]
    assert hits == ([10] if found else [])
