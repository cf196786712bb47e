"""A loss logged through a logger that only the main rank lets through (its level set by rank, in the script or, for
a helper module, in the script that calls it; Accelerate's ``get_logger``) is no DDP005; a ``warning`` line, a level
set for every rank, another logger, or ``main_process_only=False`` still is."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source

LOOP = """\
import logging
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

logger = logging.getLogger(__name__)


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
{setup}
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    data = list(range(10))
    sampler = DistributedSampler(data)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for step, batch in enumerate(DataLoader(data, sampler=sampler)):
            loss = model(batch).sum()
            loss.backward()
            {log}("step %d loss %f", step, loss.item())
"""

QUIETED = {
    "basicConfig by rank": "    logging.basicConfig(level=logging.INFO if rank in [-1, 0] else logging.WARN)",
    "setLevel by rank": "    logger.setLevel(logging.INFO if rank == 0 else logging.WARNING)",
    "setLevel under a rank test": "    if rank != 0:\n        logger.setLevel(logging.WARNING)",
    "root under a rank test": "    if rank == 0:\n        logging.basicConfig(level=logging.INFO)",
    "transformers' process level": "    logger.setLevel(training_args.get_process_log_level())",
    "the project's set-up told the rank": "    set_logger('train.log', False, rank)",
    "the project's set-up told the rank by keyword": "    setup_logger('train.log', distributed_rank=rank)",
}

EVERY_RANK = {
    "no setup": ("    pass", "logger.info"),
    "a level for every rank": ("    logging.basicConfig(level=logging.INFO)", "logger.info"),
    "a warning line": (QUIETED["basicConfig by rank"], "logger.warning"),
    "another logger quieted": ("    logging.getLogger('other').setLevel(logging.INFO if rank == 0 else logging.WARN)",
                               "logger.info"),
    "the project's set-up told nothing of the rank": ("    set_logger('train.log', False)", "logger.info"),
}


def ddp005(source: str) -> list[int]:
    return [f.line for f in check_source(source, "train.py") if f.code == "DDP005"]


@pytest.mark.parametrize("setup", QUIETED.values(), ids=QUIETED.keys())
def test_info_lines_of_a_logger_quieted_off_the_main_rank_are_not_every_ranks(setup: str) -> None:
    assert ddp005(LOOP.format(setup=setup, log="logger.info")) == []


@pytest.mark.parametrize(("setup", "log"), EVERY_RANK.values(), ids=EVERY_RANK.keys())
def test_lines_every_rank_still_logs_are_reported(setup: str, log: str) -> None:
    assert len(ddp005(LOOP.format(setup=setup, log=log))) == 1


ACCELERATE = """\
import torch
from accelerate import Accelerator
from accelerate.logging import get_logger

logger = get_logger(__name__)


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(list(range(10)))
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for epoch in range(3):
        for step, batch in enumerate(loader):
            loss = model(batch).sum()
            accelerator.backward(loss)
            opt.step()
            logger.info(f"step {{step}} loss {{loss.item()}}"{extra})
"""


def test_accelerates_logger_logs_on_the_main_process_unless_a_call_says_otherwise() -> None:
    assert ddp005(ACCELERATE.format(extra="")) == []
    assert len(ddp005(ACCELERATE.format(extra=", main_process_only=False"))) == 1


HELPER = """\
import logging

logger = logging.getLogger(__name__)


def train_epoch(model, loader, opt):
    for batch in loader:
        loss = model(batch).sum()
        loss.backward()
        opt.step()
        logger.info("loss %f", loss.item())
"""

SCRIPT = """\
import logging
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

from engine import train_epoch


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
{setup}
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    data = list(range(10))
    sampler = DistributedSampler(data)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        train_epoch(model, DataLoader(data, sampler=sampler), opt)


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(("setup", "reported"), [(QUIETED["basicConfig by rank"], False), ("    pass", True)])
def test_a_helpers_logger_follows_the_level_its_script_sets(tmp_path: Path, setup: str, reported: bool) -> None:
    (tmp_path / "engine.py").write_text(HELPER)
    (tmp_path / "train.py").write_text(SCRIPT.format(setup=setup))
    found = [(Path(f.file).name, f.code) for f in check_file(tmp_path / "train.py") if f.code == "DDP005"]
    assert found == ([("engine.py", "DDP005")] if reported else [])


def test_a_logger_handed_to_the_training_function_is_the_one_its_callers_hand() -> None:
    """``def train_one_epoch(model, logger):`` called with the module's logger: the level set by rank is its level."""
    source = LOOP.format(setup=QUIETED["basicConfig by rank"], log="logger.info").replace(
        "    for epoch in range(3):",
        "    train(model, sampler, data, logger)\n\n\ndef train(model, sampler, data, logger):\n"
        "    for epoch in range(3):")
    assert "def train(model, sampler, data, logger)" in source
    assert ddp005(source) == []
    assert len(ddp005(source.replace("logger.setLevel", "x").replace(QUIETED["basicConfig by rank"], "    pass"))) == 1
