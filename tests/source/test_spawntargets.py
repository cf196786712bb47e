"""The functions a file hands to torch.multiprocessing.spawn, directly or through the spawner's parameter; not a
function merely passed around."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.names import Module
from orchestrator.source.spawntargets import started_by_spawner

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
