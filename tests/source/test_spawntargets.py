"""The functions a file hands to torch.multiprocessing.spawn, directly or through the spawner's parameter; not a
function merely passed around."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.names import Module
from orchestrator.source.spawntargets import is_spawner, spawn_target, started_by_spawner

SCRIPT = """
import torch.multiprocessing as mp
from torch.multiprocessing import start_processes


def worker(device, args):
    pass


def main(job, args):
    mp.spawn(job, args=(args,), nprocs=2)


def other(index):
    pass


def callback(step):
    pass


def run(fn):
    start_processes(fn=fn, nprocs=2)


if __name__ == "__main__":
    main(worker, None)
    mp.spawn(other, nprocs=2)
    register(callback)
"""


@pytest.mark.parametrize(("name", "started"), [
    ("worker", True),  # through main's parameter, filled by main(worker, ...)
    ("other", True),  # handed to mp.spawn itself
    ("callback", False),  # passed around, not to a spawn
    ("run", False),
])
def test_what_a_spawn_starts(name: str, started: bool) -> None:
    module = Module(ast.parse(SCRIPT))
    function = module.top_functions[name]
    assert started_by_spawner(module, function) is started


@pytest.mark.parametrize(("qualified", "spawner"), [
    ("torch.multiprocessing.spawn", True),
    ("torch.multiprocessing.start_processes", True),
    ("torch.multiprocessing.spawn.start_processes", True),  # `from torch.multiprocessing.spawn import ...`
    ("multiprocessing.spawn", True),
    ("torch.distributed.launch", False),
    ("mylib.spawn", False),  # a project's own spawn is not torch's
    (None, False),
])
def test_a_spawner_wherever_it_is_imported_from(qualified: str | None, spawner: bool) -> None:
    assert is_spawner(qualified) is spawner


@pytest.mark.parametrize(("call", "target"), [
    ("mp.spawn(worker, nprocs=2)", "worker"),
    ("start_processes(fn=run, nprocs=2)", "run"),
    ("mp.Process(target=train, args=(0,))", "train"),
    ("mp.Process(args=(0,))", None),  # no target: nothing known to run
    ("mp.spawn(nprocs=2)", None),
])
def test_the_function_a_process_starting_call_runs(call: str, target: str | None) -> None:
    node = ast.parse(call).body[0]
    assert isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
    found = spawn_target(node.value)
    assert (ast.unparse(found) if found is not None else None) == target
