"""``args.rank`` filled by ``add_argument("--rank", "--local_rank")`` (ParallelWaveGAN's flag) holds the node-local rank
that the old launcher passes, whatever its name says; an ``args.rank`` the script sets itself, or one from a flag with
no launcher's spelling, keeps what its value (or name) says."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.names import Module
from orchestrator.source.ranks import Ranks

SCRIPT = """
import argparse
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument({options}, default=0, type=int)
args = parser.parse_args()
{before}
if args.rank == 0:
    print("main")
"""


@pytest.mark.parametrize(("options", "before", "kind"), [
    ('"--rank", "--local_rank"', "", "local"),
    ('"--rank", "--local-rank"', "", "local"),
    ('"--rank", "--local_rank"', "args.rank = dist.get_rank()", "global"),  # set again: what it is given
    ('"--rank"', "", "rankish"),  # the user's own flag: its name alone
])
def test_a_rank_flag_aliased_to_the_launchers_local_rank(options: str, before: str, kind: str) -> None:
    module = Module(ast.parse(SCRIPT.format(options=options, before=before)))
    test = next(n for n in ast.walk(module.tree) if isinstance(n, ast.If)).test
    assert isinstance(test, ast.Compare)
    assert Ranks(module).source(test.left) == kind
