"""A package folder shipped without its ``__init__.py`` (``from pkg.training import setup``, where the package's
``__init__`` would re-export ``torch_setup.setup``): the name is looked for in the folder's modules, and taken only
when exactly one defines it at its top level."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from orchestrator.source.names import Module
from orchestrator.source.project import Project
from orchestrator.source.syspath import script_roots

SETUP = "import torch\n\n\ndef setup(config):\n    torch.cuda.set_device(0)\n    return config\n"


def _project(tmp_path: Path, source: str) -> Project:
    script = tmp_path / "train.py"
    script.write_text(source)
    tree = ast.parse(source)
    return Project(script, Module(tree), tree)


def _folder(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / "pkg" / "training" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / "training" / name).write_text(text)


def test_a_name_of_a_folder_without_init_is_found_in_the_module_that_defines_it(tmp_path: Path) -> None:
    _folder(tmp_path, {"torch_setup.py": SETUP, "losses.py": "def l2(a, b):\n    return (a - b) ** 2\n"})
    project = _project(tmp_path, "from pkg.training import setup\n\nsetup(None)\n")
    reach = project.reach("pkg.training.setup")
    assert reach is not None and "torch.cuda.set_device" in reach.quals
    found = project.function("pkg.training.setup")
    assert found is not None and found[1].name == "setup"


def test_a_name_two_modules_define_is_not_guessed(tmp_path: Path) -> None:
    _folder(tmp_path, {"torch_setup.py": SETUP, "other_setup.py": SETUP})
    project = _project(tmp_path, "from pkg.training import setup\n")
    assert project.reach("pkg.training.setup") is None
    assert project.function("pkg.training.setup") is None


def test_a_folder_with_its_init_is_read_as_python_reads_it(tmp_path: Path) -> None:
    _folder(tmp_path, {"__init__.py": "", "torch_setup.py": SETUP})
    project = _project(tmp_path, "from pkg.training import setup\n")
    reach = project.reach("pkg.training.setup")
    assert reach is not None and reach.quals == frozenset()  # the __init__ defines no setup: nothing reached
    assert project.function("pkg.training.setup") is None


def test_a_module_of_a_namespace_package_resolves_its_relative_imports_there(tmp_path: Path) -> None:
    """``import pkg.train`` of a folder with no ``__init__.py`` (a namespace package): the module's ``from .utils
    import init_dist`` is ``pkg.utils``, as Python resolves it, and followed into that file."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "utils.py").write_text(SETUP.replace("setup", "init_dist"))
    (tmp_path / "pkg" / "train.py").write_text("from .utils import init_dist\n\n\ndef run(c):\n    init_dist(c)\n")
    project = _project(tmp_path, "import pkg.train\n\npkg.train.run(None)\n")
    reach = project.reach("pkg.train.run")
    assert reach is not None and "torch.cuda.set_device" in reach.quals


def test_modules_are_looked_for_beside_the_script_then_above_its_package(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "tools").mkdir(parents=True)
    for folder in (tmp_path / "pkg", tmp_path / "pkg" / "tools"):
        (folder / "__init__.py").write_text("")
    assert script_roots(tmp_path / "pkg" / "tools" / "train.py") == [tmp_path / "pkg" / "tools", tmp_path]
    assert script_roots(tmp_path / "scripts" / "train.py") == [tmp_path / "scripts"]


@pytest.mark.parametrize(("imports", "found"), [
    # a console script of a namespace package (src/tool/cli.py, no __init__.py): its relative imports are the package's
    ("from .train_ddp import run\n", True),
    # a plain script that falls back on the absolute import: it runs as a script, the relative import cannot work
    ("try:\n    from .train_ddp import run\nexcept ImportError:\n    from elsewhere import run\n", False),
])
def test_a_script_whose_own_imports_are_relative_is_its_folders_package(tmp_path: Path, imports: str,
                                                                        found: bool) -> None:
    folder = tmp_path / "src" / "tool"
    folder.mkdir(parents=True)
    (folder / "train_ddp.py").write_text(SETUP.replace("setup(config)", "run(config)"))
    source = f"{imports}\n\ndef main():\n    run(None)\n"
    (folder / "cli.py").write_text(source)
    tree = ast.parse(source)
    module = Module(tree)
    project = Project(folder / "cli.py", module, tree)
    assert (project.package == "tool") is found
    assert module.aliases["run"] == ("tool.train_ddp.run" if found else "elsewhere.run")
    if found:
        reach = project.reach(module.aliases["run"])
        assert reach is not None and "torch.cuda.set_device" in reach.quals
