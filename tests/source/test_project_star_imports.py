"""A package's ``__init__`` that re-exports a module's names with ``from .build import *``: a call of
``pkg.utils.get_port`` reaches what ``pkg/utils/build.py``'s ``get_port`` calls (the star import is followed, in
import order), and a name no star module defines reaches nothing."""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator.source.names import Module
from orchestrator.source.project import Project


def _project(tmp_path: Path) -> Project:
    (tmp_path / "pkg" / "utils").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "utils" / "__init__.py").write_text("from .misc import *\nfrom .build import *\n")
    (tmp_path / "pkg" / "utils" / "misc.py").write_text("def log(x):\n    print(x)\n")
    (tmp_path / "pkg" / "utils" / "build.py").write_text(
        "import random\n\n\ndef get_port():\n    return random.randint(15000, 30000)\n")
    script = tmp_path / "train.py"
    source = "from pkg.utils import get_port\n\nport = get_port()\n"
    script.write_text(source)
    tree = ast.parse(source)
    return Project(script, Module(tree), tree)


def test_a_name_re_exported_by_a_star_import_reaches_its_module(tmp_path: Path) -> None:
    project = _project(tmp_path)
    reach = project.reach("pkg.utils.get_port")
    assert reach is not None and "random.randint" in reach.quals
    log = project.reach("pkg.utils.log")
    assert log is not None and "print" in log.quals


def test_a_name_no_star_module_defines_reaches_nothing(tmp_path: Path) -> None:
    reach = _project(tmp_path).reach("pkg.utils.missing")
    assert reach is not None and reach.quals == frozenset()
