"""A module-level name's values, at the top level and under ``global`` in the module's functions."""

from __future__ import annotations

import ast

from orchestrator.source.moduleglobals import global_values

SOURCE = """\
import os

dist_rank = 0
if os.environ.get("X"):
    dist_rank = 1


def set_gpu_mode():
    global dist_rank
    dist_rank = int(os.environ.get("SLURM_PROCID", 0))

    def inner():
        dist_rank = 5  # a local of inner(), not the module's


def other():
    dist_rank = 7  # a local: no global statement


class Holder:
    dist_rank = 9
"""


def test_the_top_level_and_every_global_assignment_in_order() -> None:
    values = global_values(ast.parse(SOURCE), "dist_rank")
    assert [ast.unparse(v) for v in values] == ["0", "1", "int(os.environ.get('SLURM_PROCID', 0))"]


def test_a_name_the_module_never_assigns_has_none() -> None:
    assert global_values(ast.parse(SOURCE), "world_size") == []
