"""DDP016 on ``DistributedSampler(rank=args.local_rank)`` (or ``args["local_rank"]``) where the value is the legacy
``--local_rank`` flag that the script or a project module it imports declares: the flag is the node-local rank (the
old launcher's, and orch's local-rank-arg style's), so with the world's replicas the nodes read the same shards
(CLTR's ``train_distributed.py``). Silent where the script sets the value itself, where no such flag is declared (a
name alone says too little), and on a per-node world of replicas."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

CONFIG = """import argparse
parser = argparse.ArgumentParser()
parser.add_argument('--local_rank', type=int, default=-1)
args = vars(parser.parse_args())
"""

TRAIN = """import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

from config import args

{before}
dist.init_process_group('nccl')
data = list(range(100))
sampler = DistributedSampler(data, {replicas}rank={rank})
loader = DataLoader(data, sampler=sampler)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for batch in loader:
        pass
"""


def _ranks(tmp_path: Path, rank: str = "args['local_rank']", before: str = "", replicas: str = "",
           config: str = CONFIG) -> list[int]:
    (tmp_path / "config.py").write_text(config, encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(TRAIN.format(before=before, replicas=replicas, rank=rank), encoding="utf-8")
    return [f.line for f in check_file(script) if f.code == "DDP016"]


@pytest.mark.parametrize(("rank", "parsed"), [
    ("args['local_rank']", "vars(parser.parse_args())"),  # the flags as a dict
    ("args.local_rank", "parser.parse_args()"),
])
def test_the_declared_flags_value_as_the_samplers_rank(tmp_path: Path, rank: str, parsed: str) -> None:
    assert _ranks(tmp_path, rank, config=CONFIG.replace("vars(parser.parse_args())", parsed)) == [9]


def test_silent_where_the_value_is_set_or_no_flag_is_declared_or_the_world_is_the_nodes(tmp_path: Path) -> None:
    assert _ranks(tmp_path, before="args['local_rank'] = dist.get_rank()") == []  # the script makes it global
    assert _ranks(tmp_path, config="args = {'local_rank': 0}\n") == []  # no --local_rank flag: a name alone
    assert _ranks(tmp_path, replicas="num_replicas=torch.cuda.device_count(), ") == []  # a per-node world


HF_ARGS = """from dataclasses import dataclass

from transformers import HfArgumentParser, TrainingArguments


@dataclass
class MyTrainingArguments(TrainingArguments):
    clip_grad_norm: float = 1.0


training_args = HfArgumentParser(MyTrainingArguments).parse_args_into_dataclasses()[0]
"""

HF_TRAINER = """from torch.utils.data import DistributedSampler


class Trainer:
    def __init__(self, model, training_args, train_dataset):
        self.training_args = training_args
        self.train_dataset = train_dataset

    def get_train_sampler(self):
        return DistributedSampler(self.train_dataset, num_replicas=self.training_args.world_size,
                                  rank=self.training_args.local_rank)

    def train(self):
        for epoch in range(2):
            sampler = self.get_train_sampler()
            sampler.set_epoch(epoch)
"""

HF_TRAIN = """import torch.distributed as dist

from args import training_args
from trainer import Trainer

dist.init_process_group("nccl")
Trainer(None, training_args, list(range(100))).train()
"""


@pytest.mark.parametrize(("imports", "found"), [
    ("from transformers import HfArgumentParser, TrainingArguments", [11]),  # at rank=
    ("from mytools import HfArgumentParser, TrainingArguments", []),  # not transformers': a name alone
])
def test_transformers_training_args_local_rank_in_a_helpers_sampler(tmp_path: Path, imports: str,
                                                                    found: list[int]) -> None:
    """``TrainingArguments.local_rank`` is the field transformers fills from ``LOCAL_RANK`` (LOMO's trainer hands it
    to its samplers over the world's replicas): read in a helper module of a script that imports it."""
    (tmp_path / "args.py").write_text(HF_ARGS.replace(
        "from transformers import HfArgumentParser, TrainingArguments", imports), encoding="utf-8")
    (tmp_path / "trainer.py").write_text(HF_TRAINER, encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(HF_TRAIN, encoding="utf-8")
    assert [f.line for f in check_file(script) if f.code == "DDP016" and f.file.endswith("trainer.py")] == found


LIGHTNING = """import pytorch_lightning as pl
from torch.utils.data import DataLoader

from sampler import RandomBucketSampler


class Model(pl.LightningModule):
    def train_dataloader(self):
        sampler = RandomBucketSampler(8, self.lengths, 16, world_size=self.trainer.world_size,
                                      rank={rank})
        return DataLoader(self.data, batch_sampler=sampler)


trainer = pl.Trainer(devices=8, num_nodes=2, strategy="ddp")
"""


@pytest.mark.parametrize(("rank", "found"), [
    ("self.trainer.local_rank", [10]),  # Lightning's node-local rank, to a project's bucket sampler
    ("self.trainer.global_rank", []),
])
def test_lightnings_local_rank_given_to_a_projects_sampler(tmp_path: Path, rank: str, found: list[int]) -> None:
    """MQTTS's ``RandomBucketSampler(..., world_size=self.trainer.world_size, rank=self.trainer.local_rank)``: a
    sampler of the project's own, over the world's replicas, given the node-local rank."""
    script = tmp_path / "train.py"
    script.write_text(LIGHTNING.format(rank=rank), encoding="utf-8")
    findings = [f for f in check_file(script) if f.code == "DDP016"]
    assert [f.line for f in findings] == found
    assert all("RandomBucketSampler(rank=self.trainer.local_rank)" in f.message for f in findings)


def test_a_lightning_trainers_local_rank_read_from_the_trainer_itself(tmp_path: Path) -> None:
    """``trainer = pl.Trainer(...)`` then ``rank=trainer.local_rank``: the same node-local rank, read through
    ``Module.qualname``'s Lightning Trainer; a ``trainer`` of another library is not it."""
    source = """import pytorch_lightning as pl
from sampler import BucketSampler

trainer = {make}
sampler = BucketSampler(list(range(100)), world_size=trainer.world_size, rank=trainer.local_rank)
"""
    script = tmp_path / "train.py"
    for make, found in (("pl.Trainer(devices=8, num_nodes=2)", [5]), ("make_trainer()", [])):
        script.write_text(source.format(make=make), encoding="utf-8")
        assert [f.line for f in check_file(script) if f.code == "DDP016"] == found, make
