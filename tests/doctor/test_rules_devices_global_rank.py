"""DDP010 is reported once per file, at the GPU bound from the global rank (``set_device``, where every later
``.to(device)`` follows from) even where a function defined above it uses the device first (LNO's ``train()``
above its main's ``local_rank = dist.get_rank(); torch.cuda.set_device(local_rank)``); with no binding, at the first
device picked from the global rank."""

from __future__ import annotations

from orchestrator.doctor import check_source

LNO = """\
import torch
import torch.distributed as dist


def train(loader, model, local_rank):
    device = local_rank
    for x in loader:
        model(x.to(device)).sum().backward()


if __name__ == "__main__":
    dist.init_process_group("nccl")
    local_rank = dist.get_rank()
    device = local_rank
    torch.cuda.set_device(device)
    model = torch.nn.Linear(2, 2).to(device)
    train([torch.randn(4, 2)], model, local_rank)
"""


def _ddp010(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.message) for f in check_source(source, "train.py") if f.code == "DDP010"]


def test_the_binding_is_the_line_named() -> None:
    [(line, message)] = _ddp010(LNO)
    assert line == 15 and "torch.cuda.set_device(device)" in message


def test_without_a_binding_the_first_device_is_named() -> None:
    [(line, message)] = _ddp010(LNO.replace("    torch.cuda.set_device(device)\n", ""))
    assert line == 8 and "x.to(device)" in message


# nia23soc's train_ddp.py: the rank is set on a config object that main passes to train(config); train also has a
# data frame of its own called ``train``, which does not make the function one that is passed around
CONFIG_OBJECT = """\
import importlib
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(config):
    train = [1, 2]
    print(len(train))
    model = torch.nn.Linear(2, 2).to(f"cuda:{config.{attr}}")
    model = DDP(model, device_ids=[config.{attr}])


if __name__ == "__main__":
    CFG = getattr(importlib.import_module("cfg"), "Config")
    CFG.rank = int(os.environ["RANK"])
    CFG.local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl", rank=CFG.rank, world_size=int(os.environ["WORLD_SIZE"]))
    train(CFG)
"""


def test_a_rank_set_on_the_object_the_caller_passes_is_read_through_the_parameter() -> None:
    [(line, message)] = _ddp010(CONFIG_OBJECT.replace("{attr}", "rank"))
    assert line == 12 and "config.rank" in message
    assert _ddp010(CONFIG_OBJECT.replace("{attr}", "local_rank")) == []
