"""DDP016 where the node-local rank stands for a global index.

A data set's own sharding: the world size as the number of shards and the node-local rank as the shard (a project's
``sharded_batch_iterator(ds, bs, world_size, local_rank)``, 🤗 Datasets' ``ds.shard(num_shards=..., index=...)``): from
the second node on the nodes read the same shards (🤗 Datasets' ``shard`` also by position). A per-node shard count,
the global rank, or another library's positional arguments (whose parameters are not known) are left alone.

The slice an all-gathering autograd function's backward keeps (``ctx.rank = args.local_rank``): from the second node on,
another rank's gradients."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_HELPERS = """
import os


def get_world_size():
    return int(os.environ.get("WORLD_SIZE", 1))


def get_local_rank():
    return int(os.environ.get("LOCAL_RANK", 0))


def sharded(ds, batch_size, num_shards, shard_index):
    return [x for i, x in enumerate(ds) if i % num_shards == shard_index]
"""

_SCRIPT = """
import os
import torch.distributed as dist
from helpers import get_local_rank, get_world_size, sharded

def evaluate(ds, use_tp):
    local_rank = get_local_rank()
    if use_tp:
        world, rank = 1, 0
    else:
        world = get_world_size()
        rank = {rank}
    return sharded(ds, 8, world, rank)

dist.init_process_group("nccl")
evaluate(list(range(100)), False)
"""


def _ddp016(tmp_path: Path, rank: str, script: str = _SCRIPT) -> list[int]:
    (tmp_path / "helpers.py").write_text(_HELPERS)
    (tmp_path / "train.py").write_text(script.format(rank=rank))
    return [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP016"]


def test_the_local_rank_as_the_shard_of_the_world_sizes_shards_is_reported(tmp_path: Path) -> None:
    assert _ddp016(tmp_path, "local_rank") == [13]


def test_a_rank_parameter_the_function_never_reads_shards_nothing(tmp_path: Path) -> None:
    """WF-VAE's ``gather_valid_result(..., rank, dist.get_world_size())`` all-gathers and never reads ``rank``."""
    unread = _HELPERS.replace("if i % num_shards == shard_index]", "]")
    (tmp_path / "helpers.py").write_text(unread)
    (tmp_path / "train.py").write_text(_SCRIPT.format(rank="local_rank"))
    assert [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP016"] == []


_DEVICE_PARAMETER = """
import os
import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler


def main(world_size, global_rank, rank, data):
    sampler = DistributedSampler(data, num_replicas=world_size, rank=global_rank)
    model = torch.nn.Linear(2, 2).to({use})
    return sampler, model


dist.init_process_group("nccl")
main(int(os.environ["WORLD_SIZE"]), dist.get_rank(), int(os.environ["LOCAL_RANK"]), list(range(10)))
"""


@pytest.mark.parametrize(("use", "found"), [
    ("rank", []),  # lorentz-gatr's main: `rank` is the GPU, the sampler gets the global rank
    ('f"cuda:{rank}"', []),
    ("rank % 2", [15]),  # read another way: the local rank may stand for a shard
])
def test_a_rank_parameter_the_function_takes_for_its_device_is_no_shard(tmp_path: Path, use: str,
                                                                         found: list[int]) -> None:
    (tmp_path / "train.py").write_text(_DEVICE_PARAMETER.format(use=use))
    assert [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP016"] == found


@pytest.mark.parametrize("rank", ["dist.get_rank()", "int(os.environ['RANK'])"])
def test_the_global_rank_as_the_shard_is_right(tmp_path: Path, rank: str) -> None:
    assert _ddp016(tmp_path, rank) == []


_DATASETS = """
import os
import torch.distributed as dist
from datasets import load_dataset
dist.init_process_group("nccl")
ds = load_dataset("x")
part = ds.shard({arguments})
"""


@pytest.mark.parametrize(("arguments", "found"), [
    ("num_shards=dist.get_world_size(), index=int(os.environ['LOCAL_RANK'])", [7]),
    ("num_shards=int(os.environ['LOCAL_WORLD_SIZE']), index=int(os.environ['LOCAL_RANK'])", []),  # per node
    # Dataset.shard(num_shards, index) by position (sparsify's trainer): its documented names
    ("dist.get_world_size(), int(os.environ['LOCAL_RANK'])", [7]),
    ("dist.get_world_size(), dist.get_rank()", []),
])
def test_a_libraries_shard_is_read_by_its_keywords(tmp_path: Path, arguments: str, found: list[int]) -> None:
    (tmp_path / "train.py").write_text(_DATASETS.format(arguments=arguments))
    assert [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP016"] == found


def test_another_libraries_positional_arguments_are_not_guessed(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(_DATASETS.replace("ds.shard(", "ds.take_every(").format(
        arguments="dist.get_world_size(), int(os.environ['LOCAL_RANK'])"))
    assert [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP016"] == []


_ALL_GATHER = """
import os
import torch
import torch.distributed as dist


class AllGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, args):
        output = [torch.empty_like(tensor) for _ in range(args.world_size)]
        dist.all_gather(output, tensor)
        ctx.rank = {rank}
        ctx.batch_size = tensor.shape[0]
        return torch.cat(output, dim=0)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output[ctx.batch_size * ctx.rank: ctx.batch_size * (ctx.rank + 1)], None


dist.init_process_group("nccl")
"""


@pytest.mark.parametrize(("rank", "found"), [
    ("args.local_rank", [12]),
    ("int(os.environ['LOCAL_RANK'])", [12]),
    ("args.rank", []),  # the global rank: the slice of this rank's own features
    ("dist.get_rank()", []),
])
def test_the_slice_an_all_gathers_backward_keeps_is_the_global_ranks(tmp_path: Path, rank: str,
                                                                      found: list[int]) -> None:
    (tmp_path / "train.py").write_text(_ALL_GATHER.format(rank=rank))
    assert [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP016"] == found


_GLOBAL_NAMED = """
import os
import torch.distributed as dist


class Frames:
    def __init__(self, accelerator, args):
        global_rank = {value}
        self.global_rank = global_rank


dist.init_process_group("nccl")
"""


@pytest.mark.parametrize(("value", "found"), [
    ("accelerator.local_process_index", [8]),  # FollowYourPose's data set, once (its copy is not said again)
    ("int(os.environ['LOCAL_RANK'])", [8]),
    ("accelerator.process_index", []),  # the global rank
    ("int(os.environ['NODE_RANK']) * 8 + int(os.environ['LOCAL_RANK'])", []),  # the node's offset added
])
def test_a_name_that_says_global_rank_given_the_local_one(tmp_path: Path, value: str, found: list[int]) -> None:
    (tmp_path / "train.py").write_text(_GLOBAL_NAMED.format(value=value))
    assert [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP016"] == found
