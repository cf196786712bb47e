"""A flag that holds a rank test written as ``True if <test> else False`` (Hyformer's ``self._master_process = True if
int(os.environ.get('LOCAL_RANK', 0)) == 0 else False``) is that test: a rank condition where it guards a save; a
conditional of other values, or of a test of no rank, is none."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.names import Module
from orchestrator.source.ranks import Ranks

SCRIPT = """
import os


class Trainer:
    def __init__(self, epoch):
        self.master = True if int(os.environ.get("LOCAL_RANK", 0)) == 0 else False
        self.worker = False if int(os.environ.get("RANK", 0)) == 0 else True
        self.late = True if epoch > 3 else False
        self.named = "main" if int(os.environ.get("RANK", 0)) == 0 else "worker"

    def save(self):
        if self.{flag}:
            pass
"""


@pytest.mark.parametrize(("flag", "condition"), [
    ("master", True), ("worker", True), ("late", False), ("named", False)])
def test_a_flag_set_true_if_a_rank_test_holds_is_a_rank_condition(flag: str, condition: bool) -> None:
    module = Module(ast.parse(SCRIPT.format(flag=flag)))
    test = next(n.test for n in ast.walk(module.tree) if isinstance(n, ast.If))
    assert Ranks(module).is_condition(test) is condition
