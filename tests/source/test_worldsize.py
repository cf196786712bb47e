"""The launched world's size as a switch (orchestrator/source/worldsize.py): ``if world_size > 1:`` with the world
read from the launcher, asked of the group, or unpacked from the file's own set-up function (CryoNet's
``rank, world_size, local_rank = setup_ddp()``) puts its ``else`` on the run of one process, which no rank of a
launched world takes (``Flow.dead_side``); a flag's world size, or a subgroup's, is no such switch. A group started
with ``world_size=1`` (by keyword or the fourth positional argument) is a group of one process (``group_of_one``)."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.flow import Flow
from orchestrator.source.names import Module
from orchestrator.source.ranks import Ranks
from orchestrator.source.worldsize import group_of_one, launched_world

SETUP = """\
import os

import torch.distributed as dist


def setup_ddp():
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        rank = int(os.environ["RANK"])
        world_size = int(os.environ["WORLD_SIZE"])
    else:
        rank = 0
        world_size = 1
    if world_size > 1:
        dist.init_process_group("nccl")
    return rank, world_size


def main(args):
    rank, world_size = setup_ddp()
    flagged = args.world_size
    grouped = dist.get_world_size(args.group)
    asked = dist.get_world_size()
    print(world_size, flagged, grouped, asked)
"""


def _worlds(source: str) -> dict[str, bool]:
    module = Module(ast.parse(source))
    ranks = Ranks(module)
    printed = next(n for n in module.nodes if isinstance(n, ast.Call) and ast.unparse(n.func) == "print")
    return {ast.unparse(arg): launched_world(module, arg, ranks.env_key) for arg in printed.args}


def test_names_that_hold_the_launched_world_and_names_that_do_not() -> None:
    assert _worlds(SETUP) == {"world_size": True, "flagged": False, "grouped": False, "asked": True}


def test_a_name_with_no_launcher_value_is_not_the_world() -> None:
    assert _worlds(SETUP.replace('int(os.environ["WORLD_SIZE"])', "int(os.environ.get('NGPU', 1))")) == {
        "world_size": False, "flagged": False, "grouped": False, "asked": True}


STOP = SETUP.replace("    print(world_size, flagged, grouped, asked)\n", "") + """\
    for epoch in range(10):
        if world_size > 1:
            dist.broadcast(stop, src=0)
        else:
            break
"""


def test_the_one_process_side_of_a_world_size_switch_is_not_on_the_run() -> None:
    module = Module(ast.parse(STOP))
    flow = Flow(module, Ranks(module))
    sides = {ast.unparse(n.test): flow.dead_side(n.test) for n in module.nodes if isinstance(n, ast.If)}
    assert sides["world_size > 1"] == "orelse"
    module = Module(ast.parse(STOP.replace("world_size = int(os.environ[\"WORLD_SIZE\"])", "world_size = args.n")))
    flow = Flow(module, Ranks(module))
    assert {flow.dead_side(n.test) for n in module.nodes if isinstance(n, ast.If)
            and ast.unparse(n.test) == "world_size > 1"} == {None}


@pytest.mark.parametrize(("call", "alone"), [
    ('init_process_group("gloo", rank=0, world_size=1)', True),
    ('init_process_group("gloo", "tcp://127.0.0.1:23456", None, 1, 0)', True),
    ('init_process_group("gloo", "tcp://127.0.0.1:23456", world_size=2, rank=0)', False),
    ('init_process_group("gloo", "env://", None, n, 0)', False),
    ('init_process_group("gloo")', False),
])
def test_a_group_of_one_process_by_keyword_or_position(call: str, alone: bool) -> None:
    node = ast.parse(call).body[0]
    assert isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
    assert group_of_one(node.value) is alone
