"""A parameter holds what every call of its function passes, whatever it is called: LNO's ``train(...,
local_rank)`` called with its main's ``local_rank = dist.get_rank()`` holds the global rank, and a guard
``if local_rank == 0:`` in it tests rank 0 alone. Where the calls disagree, or pass nothing the reader can tell,
the name says what it holds."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.names import Module
from orchestrator.source.ranks import Ranks

SCRIPT = """
import os

import torch.distributed as dist


def train(model, local_rank):
    if local_rank == 0:
        save(model)


def evaluate(model, local_rank):
    if local_rank == 0:
        report(model)


if __name__ == "__main__":
    dist.init_process_group("nccl")
    local_rank = dist.get_rank()
    train(None, local_rank)
    evaluate(None, local_rank)
    evaluate(None, int(os.environ["LOCAL_RANK"]))
"""


@pytest.mark.parametrize(("function", "kind"), [("train", "global"), ("evaluate", "local")])
def test_a_parameter_holds_what_its_callers_pass(function: str, kind: str) -> None:
    module = Module(ast.parse(SCRIPT))
    ranks = Ranks(module)
    test = next(n for n in ast.walk(module.top_functions[function]) if isinstance(n, ast.If)).test
    assert isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
    assert ranks.source(test.left) == kind  # evaluate: the calls disagree, its name says local
