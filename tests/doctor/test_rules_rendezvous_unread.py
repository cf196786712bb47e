"""DDP008 on ``os.environ["MASTER_ADDR"/"MASTER_PORT"] = constant``: silent when every process group the file starts
meets at a URL written in the call (a ``file://`` rendezvous, also formatted; a whole ``tcp://`` URL, said at the call
itself), which reads neither variable (Würstchen's per-node trainer); reported when a group reads the environment
(``env://``, no ``init_method``) or a formatted ``tcp://`` URL may hold what the file wrote."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

_SCRIPT = """
import os
import torch.distributed as dist


def setup(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "33751"
    dist.init_process_group("nccl", rank=rank, world_size=world_size, {method})
"""


def ddp008(method: str) -> list[int]:
    return [f.line for f in check_source(_SCRIPT.format(method=method), "t.py") if f.code == "DDP008"]


@pytest.mark.parametrize("method", [
    "init_method='file:///mnt/shared/dist_file'",
    "init_method=f'file://{os.getcwd()}/dist_file'",
])
def test_writes_no_group_reads_are_not_reported(method: str) -> None:
    assert ddp008(method) == []


def test_a_whole_tcp_url_is_said_at_the_call_only() -> None:
    assert ddp008("init_method='tcp://10.1.1.20:23456'") == [9]


@pytest.mark.parametrize("method", [
    "init_method='env://'",
    "init_method=f\"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}\"",
    "timeout=None",
])
def test_writes_a_group_reads_are_reported(method: str) -> None:
    assert ddp008(method)[:2] == [7, 8]
