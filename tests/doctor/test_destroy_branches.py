"""DDP007 and the sides of an ``if``: a teardown at the end of one side is not "before later collectives" because
another side, which the run does not take, makes some (LucaOne's ``if args.training_optim: train_optim(...)`` /
``elif ...: train_continue(...)`` / ``else: train(...)``, each helper ending in ``destroy_process_group``; SimTeG's
``cleanup()`` after one branch's loop of runs); a collective after the ``if`` still is, and so is one on the same
side."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import torch
import torch.distributed as dist


def fit(model):
    loss = torch.ones(1)
    dist.all_reduce(loss)
    dist.destroy_process_group()


def fit_again(model):
    dist.barrier()
    dist.destroy_process_group()


def main(args):
    dist.init_process_group("gloo")
    model = torch.nn.Linear(2, 2)
{body}


if __name__ == "__main__":
    main(None)
"""


def ddp007(body: str) -> list[int]:
    return [f.line for f in check_source(SCRIPT.format(body=body), "train.py") if f.code == "DDP007"]


@pytest.mark.parametrize("body", [
    # each side ends in its own teardown: a run takes one
    "    if args.optim:\n        fit(model)\n    elif args.resume:\n        fit_again(model)\n    else:\n"
    "        fit(model)",
    # the teardown after one side's loop, the other side's collectives its own
    "    if args.link:\n        for seed in range(3):\n            dist.all_reduce(torch.ones(1))\n"
    "        dist.destroy_process_group()\n    else:\n        dist.barrier()\n        dist.destroy_process_group()",
])
def test_a_teardown_on_one_side_is_not_before_the_other_sides_collectives(body: str) -> None:
    assert ddp007(body) == []


@pytest.mark.parametrize(("body", "lines"), [
    # after the if: every side's run reaches it
    ("    if args.optim:\n        fit(model)\n    else:\n        fit_again(model)\n    dist.barrier()", [20, 22]),
    # on the same side, after the teardown
    ("    if args.optim:\n        dist.destroy_process_group()\n        dist.barrier()\n    else:\n"
     "        fit(model)", [20]),
])
def test_a_collective_every_run_reaches_after_the_teardown_is_still_reported(body: str, lines: list[int]) -> None:
    assert ddp007(body) == lines


@pytest.mark.parametrize(("body", "found"), [
    # UDPM: the teardown in an if inside the if that returns next: the run ends there
    ("    for step in range(100):\n        dist.barrier()\n        if step > args.steps:\n"
     "            if args.world_size > 1:\n                dist.destroy_process_group()\n            return", False),
    # the same, the loop left by a break after a with block
    ("    for step in range(100):\n        dist.barrier()\n        if step > args.steps:\n"
     "            with open('done', 'w'):\n                dist.destroy_process_group()\n            break", False),
    # nothing leaves after the if: the next pass runs its collectives on a torn-down group
    ("    for step in range(100):\n        dist.barrier()\n        if step > args.steps:\n"
     "            if args.world_size > 1:\n                dist.destroy_process_group()\n        print(step)", True),
])
def test_a_teardown_the_enclosing_block_leaves_after_is_not_inside_the_loop(body: str, found: bool) -> None:
    assert bool(ddp007(body)) is found
