"""DDP002 through a call whose flag argument turns the collectives off: ``evaluate(model, False)`` under ``if rank ==
0:`` reaches no collective when the function makes them only under ``if train:``; called with ``True``, or with a
flag the caller does not fix, it still does (source/flow.py, ``falsy_arguments``)."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()


def epoch(model, train, steps=0):
    loss = torch.zeros(1)
    if train:
        dist.all_reduce(loss)
    if not train:
        print("validation loss", loss.item())
    return loss


model = torch.nn.Linear(2, 2)
for e in range(3):
    epoch(model, True)
    if rank == 0:
        {call}
"""


@pytest.mark.parametrize("call", ["epoch(model, False)", "epoch(model, train=False)", "epoch(model, None, 1)",
                                  "epoch(model, 0)"])
def test_a_call_that_turns_the_collectives_off_reaches_none(call: str) -> None:
    found = [f for f in check_source(SCRIPT.format(call=call), "t.py") if f.code == "DDP002"]
    assert found == []


@pytest.mark.parametrize("call", ["epoch(model, True)", "epoch(model, e > 1)", "epoch(model, train=1)",
                                  "epoch(model, steps=0, train=True)"])
def test_a_call_that_leaves_them_on_is_still_reported(call: str) -> None:
    found = [f for f in check_source(SCRIPT.format(call=call), "t.py") if f.code == "DDP002"]
    assert [(f.line, f.severity) for f in found] == [(22, "error")]


def test_a_flag_negated_puts_the_collective_in_its_else() -> None:
    script = SCRIPT.replace("    if train:\n        dist.all_reduce(loss)\n",
                            "    if not train:\n        pass\n    else:\n        dist.all_reduce(loss)\n")
    assert [f for f in check_source(script.format(call="epoch(model, False)"), "t.py") if f.code == "DDP002"] == []
    assert [f.line for f in check_source(script.format(call="epoch(model, True)"), "t.py")
            if f.code == "DDP002"] == [24]


def test_a_flag_the_function_assigns_again_is_not_the_callers() -> None:
    again = "    loss = torch.zeros(1)\n    train = train or steps > 0\n"
    script = SCRIPT.replace("    loss = torch.zeros(1)\n", again)
    assert [f.line for f in check_source(script.format(call="epoch(model, False, 5)"), "t.py")
            if f.code == "DDP002"] == [23]
    other = SCRIPT.replace("    loss = torch.zeros(1)\n", "    loss = torch.zeros(1)\n    model = model.eval()\n")
    assert [f for f in check_source(other.format(call="epoch(model, False)"), "t.py") if f.code == "DDP002"] == []
