"""The legacy ``--local_rank`` flag declared under another first name (ParallelWaveGAN's
``add_argument("--rank", "--local_rank", default=0, type=int)``): argparse fills ``args.rank`` with the node-local rank
that ``torch.distributed.launch`` passes. The script is written for that launcher (``local-rank-arg``), the value is
the local rank for the doctor's rank reading, and a ``DistributedSampler(rank=args.rank)`` with the world's replicas
is DDP016 (across two nodes ranks k and 8+k read the same shard)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from orchestrator.doctor import check_file
from orchestrator.launchstyles import detect, read
from orchestrator.source.argflags import local_rank_attributes

SCRIPT = """\
import argparse
import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

parser = argparse.ArgumentParser()
parser.add_argument({options}, default=0, type=int)
args = parser.parse_args()
torch.cuda.set_device(args.{attribute})
if "WORLD_SIZE" in os.environ:
    args.world_size = int(os.environ["WORLD_SIZE"])
dist.init_process_group(backend="nccl", init_method="env://")
data = list(range(100))
sampler = DistributedSampler(data, num_replicas=args.world_size, rank=args.{attribute}, shuffle=True)
loader = DataLoader(data, sampler=sampler)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for batch in loader:
        pass
"""


def _script(tmp_path: Path, options: str = '"--rank", "--local_rank"', attribute: str = "rank") -> Path:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(options=options, attribute=attribute), encoding="utf-8")
    return script


@pytest.mark.parametrize(("declaration", "attributes"), [
    ('p.add_argument("--rank", "--local_rank", default=0)', {"rank"}),
    ('p.add_argument("--local-rank", "--local_rank", dest="lrank")', {"lrank"}),
    ('p.add_argument("--local_rank", "--rank")', set()),  # args.local_rank: its name says so
    ('p.add_argument("--rank", default=0)', set()),  # no launcher's flag among its spellings
])
def test_the_attributes_a_local_rank_flag_fills(declaration: str, attributes: set[str]) -> None:
    assert local_rank_attributes(ast.parse(declaration)) == attributes


def test_a_script_reading_the_flag_under_another_name_is_written_for_the_old_launcher(tmp_path: Path) -> None:
    assert detect(read(_script(tmp_path))).style == "local-rank-arg"
    assert detect(read(_script(tmp_path, options='"--rank"'))).style != "local-rank-arg"


def test_the_samplers_rank_from_the_aliased_flag_is_the_local_rank(tmp_path: Path) -> None:
    assert [f.line for f in check_file(_script(tmp_path)) if f.code == "DDP016"] == [16]
    # a rank flag that is no launcher's: the user's global rank, nothing to say
    assert [f.line for f in check_file(_script(tmp_path, options='"--rank"')) if f.code == "DDP016"] == []
