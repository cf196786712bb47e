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
