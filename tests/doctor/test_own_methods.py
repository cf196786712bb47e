"""The methods of the project's own classes, read from their bodies.

DDP013 for an evaluation run inside the training loop: ``eval_metrics = accumulator.reduce()`` printed on every rank
after a loop over the evaluation loader's shard is the shard's figure (DDP013, not DDP005), when the accumulator's class
is the project's and its ``reduce`` only divides this process's sums; a ``reduce`` that calls a collective is a
reduction, and an accumulator whose class has a base not read keeps the reading of its method's name.

DDP006 for a saver method run on each node's local rank 0: likely when the project's own method reaches a
``torch.save``, possible when only its name says it saves."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_METRICS = """
class TopK{base}:
    def __init__(self):
        self.total = 0
        self.hits = 0

    def accumulate(self, actual, top_k):
        self.total += len(actual)
        self.hits += int((actual == top_k).sum())

    def reduce(self):
{reduce}
"""
_LOCAL = "        return {'hits': self.hits / self.total}"
_SYNCED = """        t = torch.tensor([self.hits, self.total])
        torch.distributed.all_reduce(t)
        return {'hits': float(t[0] / t[1])}"""

_SCRIPT = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from tqdm import tqdm
from metrics import TopK

def main():
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
    train = DataLoader(range(10), sampler=DistributedSampler(range(10), shuffle=False))
    evald = DataLoader(range(10), sampler=DistributedSampler(range(10), shuffle=False))
    accumulator = TopK()
    for step, x in enumerate(train):
        model(x).sum().backward()
        if step % 100 == 0:
            with tqdm(evald) as bar:
                for batch in bar:
                    accumulator.accumulate(actual=batch, top_k=model(batch))
            eval_metrics = accumulator.reduce()
            print(eval_metrics)

main()
"""


def _codes(tmp_path: Path, reduce: str = _LOCAL, base: str = "") -> list[tuple[int, str]]:
    (tmp_path / "metrics.py").write_text("import torch\n" + _METRICS.format(base=base, reduce=reduce))
    (tmp_path / "train.py").write_text(_SCRIPT)
    return [(f.line, f.code) for f in check_file(tmp_path / "train.py") if f.code in ("DDP005", "DDP013")]


def test_a_project_accumulators_local_reduce_printed_in_the_training_loop_is_the_shards_figure(tmp_path: Path) -> None:
    assert _codes(tmp_path) == [(21, "DDP013")]


def test_an_accumulator_whose_reduce_calls_a_collective_is_a_reduction(tmp_path: Path) -> None:
    assert _codes(tmp_path, reduce=_SYNCED) == []


def test_an_accumulator_with_a_base_class_not_read_keeps_the_names_reading(tmp_path: Path) -> None:
    # its reduce may be a base's that syncs: no DDP013, and the print stays the training loop's (DDP005)
    assert _codes(tmp_path, base="(torch.nn.Module)") == [(21, "DDP005")]


_ENGINE = """
import torch


class Engine{base}:
    def __init__(self, local_rank):
        self.local_rank = local_rank

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def save_checkpoint(self, path):
        {write}

    def save_and_link_checkpoint(self, folder):
        self.save_checkpoint(folder + "/last.pth")
"""

_TRAIN = """
import os
import torch
import torch.distributed as dist
from engine import Engine

dist.init_process_group("nccl")
with Engine(int(os.environ["LOCAL_RANK"])) as engine:
    for epoch in range(3):
        if engine.local_rank == 0:
            engine.save_and_link_checkpoint("/shared/run")
"""


@pytest.mark.parametrize(("base", "write", "confidence"), [
    ("", "torch.save({}, path)", "likely"),  # the project's own method reaches torch.save
    ("", "print(path)", "possible"),  # it writes nothing: the name alone says checkpoint
    ("(Base)", "torch.save({}, path)", "possible"),  # a base not read may change what it does
])
def test_a_saver_method_of_the_projects_own_class_run_on_each_nodes_local_rank_0(
        tmp_path: Path, base: str, write: str, confidence: str) -> None:
    (tmp_path / "engine.py").write_text(("class Base:\n    pass\n" if base else "") + _ENGINE.format(base=base,
                                                                                                     write=write))
    (tmp_path / "train.py").write_text(_TRAIN)
    found = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP006" and f.file.endswith("train.py")]
    assert [(f.line, f.confidence) for f in found] == [(11, confidence)]
