"""Where a function or class is defined: in a module's body (under an ``if``/``try`` too), and in a script's project
through re-exports by name and by star."""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator.source.definitions import definition, definition_in
from orchestrator.source.names import Module
from orchestrator.source.project import Project

BODY = """
try:
    from apex import amp
except ImportError:
    def amp_init(model):
        return model

if HAS_X:
    class Trainer:
        def fit(self):
            pass

def main():
    def inner():
        pass
"""


def test_a_definition_under_an_if_or_an_except_is_found() -> None:
    module = Module(ast.parse(BODY))
    found = definition(module, "amp_init")
    assert isinstance(found, ast.FunctionDef) and found.name == "amp_init"
    trainer = definition(module, "Trainer")
    assert isinstance(trainer, ast.ClassDef)
    fit = definition_in(trainer.body, "fit")
    assert isinstance(fit, ast.FunctionDef)


def test_a_function_nested_in_another_is_not_the_modules() -> None:
    module = Module(ast.parse(BODY))
    assert definition(module, "inner") is None and definition(module, "missing") is None


def _project(tmp_path: Path) -> Project:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "__init__.py").write_text("from .trainer import Trainer\nfrom .dist import *\n")
    (tmp_path / "core" / "trainer.py").write_text("class Trainer:\n    def __init__(self, rank):\n        pass\n")
    (tmp_path / "core" / "dist.py").write_text("def setup(rank):\n    pass\n\n\ndef _private():\n    pass\n")
    script = tmp_path / "train.py"
    source = "from core import Trainer, setup\n"
    script.write_text(source)
    tree = ast.parse(source)
    return Project(script, Module(tree), tree)


def test_a_class_re_exported_by_name_is_found_in_its_module(tmp_path: Path) -> None:
    found = _project(tmp_path).definition("core.Trainer")
    assert found is not None
    path, _, node = found
    assert path.name == "trainer.py" and isinstance(node, ast.ClassDef) and node.name == "Trainer"


def test_a_function_re_exported_by_star_is_found_and_is_a_function(tmp_path: Path) -> None:
    project = _project(tmp_path)
    found = project.definition("core.setup")
    assert found is not None and found[0].name == "dist.py"
    function = project.function("core.setup")
    assert function is not None and function[1].name == "setup"
    assert project.function("core.Trainer") is None  # a class is not a function


def test_a_name_no_module_defines_is_none(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert project.definition("core.missing") is None and project.definition("numpy.zeros") is None
