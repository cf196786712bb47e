"""DDP004 for a streamed 🤗 Datasets data set: ``.shuffle(seed=..., buffer_size=...)`` with no ``set_epoch`` streams
the same order every epoch (LucaOne's ``split_dataset_by_node(...).shuffle(buffer_size=..., seed=...)``). Silent
where the stream's ``set_epoch`` is called (here or in a helper), for a map-style ``shuffle(seed)`` and in a script
that is not distributed; a sampler's ``set_epoch`` elsewhere in the project is not the stream's."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source

_SCRIPT = """
import torch.distributed as dist
from datasets import load_dataset
from datasets.distributed import split_dataset_by_node

dist.init_process_group("nccl")
stream = load_dataset("c4", streaming=True)["train"]
stream = split_dataset_by_node(stream, rank=dist.get_rank(), world_size=dist.get_world_size())
stream = stream.{shuffle}
for epoch in range(3):
    {epoch}
    for row in stream:
        pass
"""


def ddp004(shuffle: str, epoch: str = "pass", distributed: bool = True) -> list[tuple[int, str | None]]:
    source = _SCRIPT.format(shuffle=shuffle, epoch=epoch)
    if not distributed:
        source = source.replace('dist.init_process_group("nccl")', "").replace(
            "dist.get_rank()", "0").replace("dist.get_world_size()", "1")
    return [(f.line, f.confidence) for f in check_source(source, "t.py") if f.code == "DDP004"]


def test_a_stream_shuffled_by_seed_with_no_set_epoch_is_reported() -> None:
    assert ddp004("shuffle(seed=42, buffer_size=10_000)") == [(9, "likely")]


@pytest.mark.parametrize(("shuffle", "epoch", "distributed"), [
    ("shuffle(seed=42, buffer_size=10_000)", "stream.set_epoch(epoch)", True),  # the stream's own set_epoch
    ("shuffle(seed=42)", "pass", True),  # a map-style data set's one-off permutation
    ("shuffle(seed=42, buffer_size=10_000)", "pass", False),  # one process
])
def test_a_stream_whose_order_changes_or_that_is_not_distributed(shuffle: str, epoch: str, distributed: bool) -> None:
    assert ddp004(shuffle, epoch, distributed) == []


def test_a_samplers_set_epoch_in_a_helper_is_not_the_streams(tmp_path: Path) -> None:
    (tmp_path / "trainer.py").write_text("def fit(loader, train_sampler=None):\n    for epoch in range(3):\n"
                                         "        if train_sampler:\n            train_sampler.set_epoch(epoch)\n")
    source = _SCRIPT.format(shuffle="shuffle(seed=42, buffer_size=10_000)", epoch="pass")
    (tmp_path / "train.py").write_text(source + "from trainer import fit\nfit(stream)\n")
    assert [(f.line, f.confidence) for f in check_file(tmp_path / "train.py") if f.code == "DDP004"] == [(9, "likely")]
    (tmp_path / "trainer.py").write_text("def fit(loader):\n    for epoch in range(3):\n"
                                         "        loader.set_epoch(epoch)\n")
    assert [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP004"] == []
