"""DDP009 where each process is masked to its own GPU: scGPT sets ``os.environ["CUDA_VISIBLE_DEVICES"] =
str(args.local_rank)`` before CUDA starts, so a ``torch.load`` without ``map_location`` lands on ``cuda:0``, which is
that process's own GPU: no finding. A mask to one list of every GPU (``"0,1,2,3"``, or CLTR's ``args.gpu_id``, a flag
of default ``'0,1'`` whose name alone says device) leaves every rank's ``cuda:0`` one GPU: the load stays DDP009."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

SCRIPT = """\
import argparse
import os

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--local-rank", type=int, default=-1)
parser.add_argument("--resume", default="")
parser.add_argument("--gpu_id", type=str, default="0,1")
args = parser.parse_args()
os.environ["CUDA_VISIBLE_DEVICES"] = {mask}
dist.init_process_group("nccl", init_method="env://")
model = torch.nn.Linear(4, 4).cuda()
model.load_state_dict(torch.load(args.resume))
model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
"""


@pytest.mark.parametrize(("mask", "found"), [("str(args.local_rank)", False), ('os.environ["LOCAL_RANK"]', False),
                                             ('"0,1,2,3"', True), ("args.gpu_id", True)])
def test_a_load_onto_a_process_masked_to_its_own_gpu(tmp_path: Path, mask: str, found: bool) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(mask=mask), encoding="utf-8")
    assert bool([f for f in check_file(script) if f.code == "DDP009"]) is found
