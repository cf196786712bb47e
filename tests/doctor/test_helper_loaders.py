"""DDP013 through a loader the project's other module builds (``train_loader, test_loader = get_loader(args)``): a
distributed sampler there (or picked when the run is distributed) shards the test loader; a sequential one does not.
A progress line inside the evaluation loop (a running value) is not the reported result."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_TRAIN = """import logging
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm
from helpers.data import get_loader

logger = logging.getLogger(__name__)

def valid(args, model, test_loader):
    eval_losses = AverageMeter()
    bar = tqdm(test_loader, disable=args.local_rank not in [-1, 0])
    for x, y in bar:
        eval_losses.update(torch.nn.functional.cross_entropy(model(x), y).item())
        bar.set_description("loss=%2.5f" % eval_losses.val)
    logger.info("Valid Loss: %2.5f" % eval_losses.avg)

def main(args):
    dist.init_process_group("nccl")
    model = DDP(Net().cuda())
    train_loader, test_loader = get_loader(args)
    valid(args, model, test_loader)
"""
_DATA = """from torch.utils.data import DataLoader, DistributedSampler, RandomSampler, SequentialSampler

def get_loader(args):
    train_sampler = RandomSampler(trainset) if args.local_rank == -1 else DistributedSampler(trainset)
    test_sampler = {sampler}
    train_loader = DataLoader(trainset, sampler=train_sampler, batch_size=8)
    test_loader = DataLoader(testset, sampler=test_sampler, batch_size=8) if testset is not None else None
    return train_loader, test_loader
"""


@pytest.mark.parametrize(("sampler", "reported"), [
    ("SequentialSampler(testset) if args.local_rank == -1 else DistributedSampler(testset)", True),
    ("DistributedSampler(testset, shuffle=False)", True),
    ("SequentialSampler(testset)", False),
], ids=["picked-when-distributed", "distributed", "sequential"])
def test_a_test_loader_the_projects_module_shards(tmp_path: Path, sampler: str, reported: bool) -> None:
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("")
    (tmp_path / "helpers" / "data.py").write_text(_DATA.format(sampler=sampler))
    (tmp_path / "train.py").write_text(_TRAIN)
    found = [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP013"]
    assert found == ([16] if reported else [])
