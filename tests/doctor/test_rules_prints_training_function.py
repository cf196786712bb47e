"""DDP005 where the training function itself reaches a reduction (its evaluation all_reduces): calling it
(``main_worker(args.gpu, args)``) does not make its arguments reduced values, so a loss it prints with ``args.gpu``
on every rank is still reported; a value handed to a helper that reduces in place stays quiet."""

from __future__ import annotations

from orchestrator.doctor import check_source

_SCRIPT = """
import torch
import torch.distributed as dist


def reduce_in_place(value):
    dist.all_reduce(value)


def main_worker(gpu, args):
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1).cuda(gpu), device_ids=[gpu])
    for step in range(10):
        loss = model(torch.randn(4, 2).cuda(gpu)).pow(2).mean()
        loss.backward()
        {before}
        print("GPU {{}} loss {{:.4f}}".format(args.gpu, loss))
    total = torch.zeros(1).cuda(gpu)
    dist.all_reduce(total)


def main(args):
    main_worker(args.gpu, args)
"""


def ddp005(before: str) -> list[int]:
    return [f.line for f in check_source(_SCRIPT.format(before=before), "t.py") if f.code == "DDP005"]


def test_a_loss_printed_on_every_rank_in_the_training_function_is_reported() -> None:
    assert ddp005("pass") == [17]


def test_a_loss_a_helper_reduced_in_place_is_quiet() -> None:
    assert ddp005("reduce_in_place(loss)") == []
