"""A rank kept in a dict and read with ``.get``: ``config.get("rank", 0)`` holds what ``config["rank"]`` holds, so a
project helper that returns ``config.get('rank', 0) == 0`` is a rank-0 test whatever its name (seemore's
``is_process_main_process``, whose block all-reduces the validation loss on rank 0 alone: DDP002). Another key
(``config.get("lr", 0)``) is no rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_HELPER = """\
def first_of(config):
    return config.get({key!r}, 0) == 0
"""

_SCRIPT = """\
import torch
import torch.distributed as dist
from distributed import first_of


def train(config, model, loader):
    dist.init_process_group("gloo")
    for epoch in range(2):
        for batch in loader:
            model(batch).sum().backward()
        if first_of(config):
            loss = torch.tensor(1.0)
            dist.all_reduce(loss)
            print(loss.item())
"""


@pytest.mark.parametrize(("key", "found"), [("rank", [13]), ("lr", [])])
def test_a_rank_read_with_get_from_a_dict_makes_a_rank_test(tmp_path: Path, key: str, found: list[int]) -> None:
    (tmp_path / "distributed.py").write_text(_HELPER.format(key=key))
    (tmp_path / "train.py").write_text(_SCRIPT)
    assert [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP002"] == found
