"""A rank test held in a variable, a parameter or an attribute and used later as a guard is a rank guard wherever
the rules look for one (a save, a print, a collective under it)."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

HEAD = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

"""

PARAMETER = HEAD + """\
def train(model, opt, log_here):
    for step in range(10):
        loss = model(torch.randn(4, 2).cuda()).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    if log_here:
        torch.save(model.module.state_dict(), "ckpt.pt")


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    first = dist.get_rank() == 0
    model = DDP(torch.nn.Linear(2, 2).cuda(), device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, opt, first)
    train(model, opt, log_here=dist.get_rank() == 0)
"""

COLLECTIVE = HEAD + """\
def report(value, on_writer):
    if on_writer:
        dist.barrier()
        print(value)


def main():
    dist.init_process_group("nccl")
    report(1.0, int(os.environ["RANK"]) == 0)
"""

ATTRIBUTE = HEAD + """\
class Runner:
    def __init__(self, args, model):
        self.chief = args.local_rank in (-1, 0)
        self.leader = dist.get_rank() == 0
        self.model = model

    def fit(self, opt):
        for step in range(10):
            loss = self.model(torch.randn(4, 2).cuda()).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if self.leader:
            torch.save(self.model.module.state_dict(), "last.pt")
        if self.chief:
            torch.save(self.model.module.state_dict(), "node.pt")
"""


def _codes(source: str) -> list[tuple[str, int, str]]:
    return [(f.code, f.line, f.message) for f in check_source(source, "train.py")]


def test_a_parameter_its_callers_fill_with_a_rank_test_guards_the_save() -> None:
    assert [c for c, _, _ in _codes(PARAMETER) if c == "DDP006"] == []


def test_a_collective_under_a_parameter_holding_a_rank_test_is_reached_by_some_ranks_only() -> None:
    found = [(line, message) for code, line, message in _codes(COLLECTIVE) if code == "DDP002"]
    assert [line for line, _ in found] == [8] and "on_writer" in found[0][1]


def test_attributes_holding_rank_tests_guard_saves_and_a_local_rank_test_is_a_per_node_guard() -> None:
    saves = [(line, message) for code, line, message in _codes(ATTRIBUTE) if code == "DDP006"]
    assert [line for line, _ in saves] == [21]  # self.leader's save is fine; self.chief's is one per node
    assert "guarded by the local rank" in saves[0][1]


UPDATED = HEAD + """\
def worker(index, opt):
    opt.dist_rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    opt.dist_rank = opt.dist_rank * opt.ngpus_per_node + index
    dist.init_process_group("nccl", rank=opt.dist_rank, world_size=opt.world_size)
    opt.is_master_node = not opt.distributed or opt.dist_rank == 0
    model = DDP(torch.nn.Linear(2, 2).cuda(index), device_ids=[index])
    if {guard}:
        torch.save(model.module.state_dict(), "ckpt.pt")
"""


def test_an_attribute_updated_from_itself_keeps_the_rank_it_holds() -> None:
    """``opt.dist_rank = opt.dist_rank * ngpus + index`` is still a rank: the flag built from it guards the save."""
    saves = [f.line for f in check_source(UPDATED.format(guard="opt.is_master_node"), "t.py") if f.code == "DDP006"]
    assert saves == []
    assert [f.line for f in check_source(UPDATED.format(guard="opt.distributed"), "t.py")
            if f.code == "DDP006"] == [13]


PRIVATE = HEAD + """\
def save_checkpoint(model, cfg, path):
    if cfg.environment._local_rank == 0:
        torch.save(model.state_dict(), path)


def main(cfg):
    dist.init_process_group("nccl")
    torch.cuda.set_device(cfg.environment._local_rank)
    model = DDP(torch.nn.Linear(2, 2).cuda())
    save_checkpoint(model, cfg, "checkpoint.pth")
"""


def test_a_private_attribute_named_for_a_rank_holds_that_rank() -> None:
    """``cfg.environment._local_rank`` (H2O LLM Studio's config) is the local rank its name says, as ``local_rank``
    is: the save under it is one writer per node, not a save on every rank."""
    (save,) = [f for f in check_source(PRIVATE, "train.py") if f.code == "DDP006"]
    assert "guarded by the local rank" in save.message and "runs on every rank" not in save.message


FALLBACK = HEAD + """\
class Trainer:
    def __init__(self, model, distributed):
        self.distributed = distributed
        self.rank = {fallback}
        if distributed:
            self.rank = {rank}
            self.model = DDP(model.cuda(), device_ids=[torch.cuda.current_device()])

    def write_checkpoint(self, path):
        if self.distributed and self.rank != 0:
            return
        torch.save(self.model.module.state_dict(), path)


def main():
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    trainer = Trainer(torch.nn.Linear(2, 2), True)
    trainer.write_checkpoint("checkpoint.pth")
"""


@pytest.mark.parametrize("fallback", ["0", "-1"])
def test_an_attributes_constant_fallback_does_not_hide_the_rank_it_holds(fallback: str) -> None:
    """``self.rank = 0`` (or ``-1``), then ``if distributed: self.rank = int(os.environ["LOCAL_RANK"])`` (SevenNet's
    trainer): the constant is the run with no launcher, and the save after ``if self.rank != 0: return`` is one
    writer per node."""
    local = [f for f in check_source(FALLBACK.format(fallback=fallback, rank='int(os.environ["LOCAL_RANK"])'),
                                     "t.py") if f.code == "DDP006"]
    assert [f.line for f in local] == [17] and "guarded by the local rank" in local[0].message
    assert [f for f in check_source(FALLBACK.format(fallback=fallback, rank="dist.get_rank()"), "t.py")
            if f.code == "DDP006"] == []
