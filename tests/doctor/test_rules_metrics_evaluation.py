"""DDP013 for an evaluation over the rank's shard shown by rank 0: the evaluating function may live in a project module
(snl_unet's ``val_score = evaluate(model, net, val_loader, device)`` from evaluate_multigpus.py), the figure may be
named as a score (Dice, IoU, PSNR, BLEU), and the helper's ``torch.cuda.synchronize`` waits for the GPU without
sharing anything; a function that reduces (``dist.all_reduce``) or a loader every rank reads whole is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_ENTRY = """
import logging
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from evaluation import evaluate

dist.init_process_group("nccl")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
train = DataLoader(range(10), sampler=DistributedSampler(range(10)))
val = DataLoader(range(10){sampler})
for epoch in range(3):
    train.sampler.set_epoch(epoch)
    for x in train:
        model(x).sum().backward()
    {name} = evaluate(model, val, "cuda")
    if dist.get_rank() == 0:
        logging.info("Validation score: %s", {name})
"""

_HELPER = """
import torch
import torch.distributed as dist


def evaluate(model, loader, device):
    model.eval()
    total = 0
    for batch in loader:
        with torch.no_grad():
            total += model(batch).sum().item()
    torch.cuda.synchronize(device){reduce}
    model.train()
    return total / len(loader)
"""

_SHARDED = ", sampler=DistributedSampler(range(10), shuffle=False)"
_REDUCE = "\n    total = torch.tensor(total)\n    dist.all_reduce(total)"


def _ddp013(folder: Path, sampler: str, name: str, reduce: str) -> list[int]:
    (folder / "train.py").write_text(_ENTRY.format(sampler=sampler, name=name))
    (folder / "evaluation.py").write_text(_HELPER.format(reduce=reduce))
    return [f.line for f in check_file(folder / "train.py") if f.code == "DDP013"]


@pytest.mark.parametrize(("sampler", "name", "reduce", "reported"), [
    (_SHARDED, "val_score", "", True),
    (_SHARDED, "dice", "", True),
    (_SHARDED, "val_psnr", "", True),
    (_SHARDED, "val_loss", "", True),
    (_SHARDED, "val_score", _REDUCE, False),  # the helper reduces its sum
    ("", "val_score", "", False),  # every rank evaluates the whole set
    (_SHARDED, "name", "", False),  # not a figure's name ("mae" inside a word is not one)
])
def test_an_evaluation_in_a_project_module_shown_by_rank_zero(tmp_path: Path, sampler: str, name: str, reduce: str,
                                                              reported: bool) -> None:
    shown = _ENTRY.format(sampler=sampler, name=name).splitlines().index(
        f'        logging.info("Validation score: %s", {name})') + 1
    assert _ddp013(tmp_path, sampler, name, reduce) == ([shown] if reported else [])


def test_the_finding_names_the_helper_modules_loop(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(_ENTRY.format(sampler=_SHARDED, name="val_score"))
    (tmp_path / "evaluation.py").write_text(_HELPER.format(reduce=""))
    [finding] = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP013"]
    assert "evaluation.py:9" in finding.message + finding.evidence

