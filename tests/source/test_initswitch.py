"""The switch a file starts its process group under (orchestrator/source/initswitch.py), followed through its own
functions' parameters (ABACBS's ``if ddp: setup(...)`` in ``train(..., ddp)``, ``save_checkpoint(..., ddp=ddp)`` and
``train(..., args.ddp)``), and the side of a test of it no rank of a distributed run takes (``Flow.dead_side``)."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.flow import Flow
from orchestrator.source.initswitch import init_switches
from orchestrator.source.names import Module
from orchestrator.source.ranks import Ranks

SCRIPT = """\
import argparse, os
import torch
import torch.distributed as dist


def setup(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)


def save(model, path, ddp=True):
    if ddp:
        if dist.get_rank() == 0:
            torch.save(model.state_dict(), path)
    else:
        torch.save(model.state_dict(), path)


def train(out, ddp=False):
    if ddp:
        setup(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    model = torch.nn.Linear(2, 2)
    for epoch in range(3):
        save(model, out, ddp=ddp)
    save(model, out)
    if not args.ddp:
        print("one process")


def main():
    global args
    parser = argparse.ArgumentParser()
    parser.add_argument("--ddp", action="store_true")
    args = parser.parse_args()
    train("ck.pt", args.ddp)
"""


def _switches(source: str) -> set[tuple[str | None, str]]:
    module = Module(ast.parse(source))
    return {(None if f is None else f.name, key) for f, key in init_switches(module)}


def _dead(source: str) -> dict[int, str | None]:
    module = Module(ast.parse(source))
    flow = Flow(module, Ranks(module))
    return {n.lineno: flow.dead_side(n.test) for n in module.nodes if isinstance(n, ast.If)}


def test_the_switch_is_followed_into_and_out_of_the_files_functions() -> None:
    assert _switches(SCRIPT) == {("train", "ddp"), ("save", "ddp"), (None, "args.ddp")}


def test_the_other_side_of_a_test_of_the_switch_runs_on_no_rank() -> None:
    dead = _dead(SCRIPT)
    assert dead[11] == "orelse"  # save's `if ddp:`: its else saves on every rank in no distributed run
    assert dead[19] == "orelse"
    assert dead[25] == "body"  # `if not args.ddp:`: turned round
    assert dead[12] is None  # the rank test is no switch


@pytest.mark.parametrize("change", [
    ('    train("ck.pt", args.ddp)\n', '    train("ck.pt", args.ddp)\n    dist.init_process_group("gloo")\n'),
    ("        save(model, out, ddp=ddp)\n", "        save(model, out, ddp=False)\n"),
    ("def save(model, path, ddp=True):", "def save(model, path, ddp=False):"),
    ("def train(out, ddp=False):\n", "def train(out, ddp=False):\n    ddp = ddp and torch.cuda.is_available()\n"),
])
def test_no_switch_where_it_does_not_hold(change: tuple[str, str]) -> None:
    """A process group started outside the switch, a call that passes something else or leaves a false default,
    and a parameter rebound in its function: the other side may run."""
    source = SCRIPT.replace(*change)
    assert source != SCRIPT
    assert ("save", "ddp") not in _switches(source)


def test_a_function_passed_around_is_not_followed_out() -> None:
    """``mp.spawn(train, ...)``: its parameter is still the switch inside it, but what its callers pass is out of
    sight."""
    source = SCRIPT.replace('    train("ck.pt", args.ddp)\n', '    torch.multiprocessing.spawn(train, nprocs=2)\n')
    assert _switches(source) == {("train", "ddp"), ("save", "ddp")}


def test_a_flag_the_file_assigns_is_no_switch() -> None:
    source = SCRIPT.replace("    args = parser.parse_args()\n", "    args = parser.parse_args()\n    args.ddp = True\n")
    assert (None, "args.ddp") not in _switches(source)
    assert ("save", "ddp") in _switches(source)
