"""A spawned worker's first parameter is its process index, the node-local rank, whatever it is called (``device``,
``proc_id``): where a spawn of the file starts the worker, directly or through the spawner's parameter. The first
parameter of a function merely passed around (``launch(job_fn=main)``, a callback) is not read as a rank."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.names import Module
from orchestrator.source.ranks import Ranks

SCRIPT = """
import torch.multiprocessing as mp


def worker(device, args):
    if device == 0:
        save()


def main(job, args):
    mp.spawn(job, args=(args,), nprocs=2)


def job_fn(config):
    if config == 0:
        save()


if __name__ == "__main__":
    main(worker, None)
    launch(job_fn, num_gpus=2)
"""


@pytest.mark.parametrize(("function", "kind", "condition"), [("worker", "local", True), ("job_fn", None, False)])
def test_a_spawned_workers_index_is_the_local_rank(function: str, kind: str | None, condition: bool) -> None:
    module = Module(ast.parse(SCRIPT))
    ranks = Ranks(module)
    ranks.names = False  # by what the code says, not by the names
    test = next(n for n in ast.walk(module.top_functions[function]) if isinstance(n, ast.If)).test
    assert isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
    assert ranks.source(test.left) == kind
    assert ranks.is_condition(test) is condition
