"""DDP019 and a handler that returns from the function that trains after it (tunet's ``try: setup_ddp() except
Exception as e: logging.error(...); return`` at the top of ``train(config)``): a failed rendezvous skips that training,
so no rank trains alone. A handler that returns from a set-up helper, whose caller trains on, is still reported."""

from __future__ import annotations

from orchestrator.doctor import check_source

TRAIN = """\
import logging
import os
import torch
import torch.distributed as dist


def setup_ddp():
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))


def train(config):
    try:
        setup_ddp()
    except Exception as error:
        logging.error(f"DDP setup failed: {error}")
        {leave}
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
    for _ in range(3):
        model(torch.ones(2, 2).cuda()).sum().backward()


if __name__ == "__main__":
    train(None)
"""

HELPER = """\
import logging
import os
import torch
import torch.distributed as dist


def setup_ddp():
    try:
        dist.init_process_group("nccl")
    except Exception as error:
        logging.error(f"no group: {error}")
        return False
    return True


setup_ddp()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
for _ in range(3):
    model(torch.ones(2, 2).cuda()).sum().backward()
"""


def swallowed(source: str) -> list[int]:
    return [f.line for f in check_source(source, "train.py") if f.code == "DDP019"]


def test_a_handler_that_returns_from_the_function_that_trains_is_not_a_swallowed_init() -> None:
    assert swallowed(TRAIN.replace("{leave}", "return")) == []


def test_a_handler_that_goes_on_to_the_training_is_reported() -> None:
    assert swallowed(TRAIN.replace("{leave}", "pass")) == [14]


def test_a_handler_that_returns_from_a_set_up_helper_is_reported() -> None:
    assert swallowed(HELPER) == [9]
