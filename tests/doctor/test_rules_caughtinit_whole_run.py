"""DDP019 and a catch around the whole run: ``try: run(cfg) except Exception: log(...)`` where ``run`` starts the
process group and trains: a failed rendezvous ends the training with it, so no rank trains alone (h2o-llmstudio's
entry). A caught init followed by the training outside the ``try`` is still reported."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import logging
import os
import torch
import torch.distributed as dist


def run(cfg):
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
    for _ in range(3):
        model(torch.ones(2, 2).cuda()).sum().backward()


if __name__ == "__main__":
    try:
        run(cfg=None)
    except Exception:
        logging.error("the run failed", exc_info=True)
"""

APART = """\
import os
import torch
import torch.distributed as dist


def setup():
    dist.init_process_group("nccl")


try:
    setup()
except Exception:
    print("no group: training alone")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
for _ in range(3):
    model(torch.ones(2, 2).cuda()).sum().backward()
"""


def test_a_catch_around_the_whole_run_is_not_a_swallowed_init() -> None:
    assert [f.code for f in check_source(SCRIPT, "train.py") if f.code == "DDP019"] == []


def test_a_caught_set_up_with_the_training_after_it_is_reported() -> None:
    assert [f.line for f in check_source(APART, "train.py") if f.code == "DDP019"] == [11]


@pytest.mark.parametrize(("caught", "found"), [
    ("Exception", True), ("RuntimeError", True), ("(KeyError, dist.DistNetworkError)", True), ("", True),
    ("KeyboardInterrupt", False), ("KeyError", False), ("(ImportError, KeyError)", False),
])
def test_only_a_handler_that_takes_a_failed_rendezvous_swallows_it(caught: str, found: bool) -> None:
    """A failed init raises torch's DistError family (RuntimeError), or a ValueError for a missing RANK: ``except
    KeyboardInterrupt`` (CPCM's ``main()``) or ``except KeyError`` lets it stop the rank."""
    source = APART.replace("except Exception:", f"except {caught}:".replace("except :", "except:"))
    assert [f.line for f in check_source(source, "train.py") if f.code == "DDP019"] == ([11] if found else [])
