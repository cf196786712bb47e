"""The script's own ``from module import *`` of its project: each public name the module defines or imports (its
``__all__`` where it has one) is the script's name for it, so the script's calls are followed into the project
(``orchestrator/source/starimports.py``, ``Project``); a name the script binds itself keeps its own meaning."""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator.launchstyles import detect, read
from orchestrator.source.names import Module
from orchestrator.source.project import Project
from orchestrator.source.starimports import dunder_all, exported, star_sources

FUNCTIONS = """\
import torch.distributed as dist
from data import build as make_loader

def create_model(args):
    dist.init_process_group("nccl")

class Trainer:
    pass

def _private():
    pass
"""


def _project(tmp_path: Path, source: str) -> tuple[Project, Module]:
    script = tmp_path / "main.py"
    script.write_text(source)
    tree = ast.parse(source)
    module = Module(tree)
    return Project(script, module, tree), module


def test_the_public_names_of_a_star_imported_module_are_the_scripts(tmp_path: Path) -> None:
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    (tmp_path / "data.py").write_text("def build():\n    pass\n")
    project, module = _project(tmp_path, "import os\nfrom functions import *\n\ncreate_model(None)\n")
    assert module.aliases["create_model"] == "functions.create_model"
    assert module.aliases["Trainer"] == "functions.Trainer"
    assert module.aliases["make_loader"] == "data.build"  # what the star module imported, as it named it
    assert "_private" not in module.aliases
    reach = project.reach(module.aliases["create_model"])
    assert reach is not None and "torch.distributed.init_process_group" in reach.quals


def test_all_limits_the_names_and_the_scripts_own_imports_win(tmp_path: Path) -> None:
    (tmp_path / "functions.py").write_text(f'__all__ = ["Trainer"]\n{FUNCTIONS}')
    _, module = _project(tmp_path, "from functions import *\nfrom mine import Trainer\n")
    assert "create_model" not in module.aliases
    assert module.aliases["Trainer"] == "mine.Trainer"


def test_a_star_import_of_an_installed_or_missing_module_adds_nothing(tmp_path: Path) -> None:
    _, module = _project(tmp_path, "from torch.nn import *\nfrom missing import *\n")
    assert set(module.aliases) <= {"*"}  # the star itself, as names.Module records it


def test_the_helpers_read_what_star_imports_name(tmp_path: Path) -> None:
    tree = ast.parse("from .build import *\nfrom pkg.misc import *\nfrom .. import *\n__all__ = ('a', 'b')\n")
    assert star_sources(Module(tree), "pkg.utils") == ["pkg.utils.build", "pkg.misc", "pkg"]
    assert dunder_all(tree) == {"a", "b"}
    assert dunder_all(ast.parse("x = 1\n")) is None


def test_a_spawned_worker_that_joins_through_a_star_imported_package_is_per_node(tmp_path: Path) -> None:
    """A driver class the script takes from its package with ``from .drivers import *`` joins the group in its
    constructor, in the worker the script spawns itself: the script is written for the per-node style."""
    driver = tmp_path / "driver"
    (driver / "drivers").mkdir(parents=True)
    (driver / "__init__.py").write_text("")
    (driver / "drivers" / "__init__.py").write_text("from .ddp import DDPDriver\n")
    (driver / "drivers" / "ddp.py").write_text(
        "import torch.distributed as dist\n\nclass DDPDriver:\n    def __init__(self, rank, world):\n"
        "        dist.init_process_group('nccl', rank=rank, world_size=world)\n")
    (driver / "main.py").write_text(
        "import torch.multiprocessing as mp\nfrom .drivers import *\n\ndef ddp_main(rank, world):\n"
        "    DDPDriver(rank, world)\n\nif __name__ == '__main__':\n    mp.spawn(ddp_main, args=(2,), nprocs=2)\n")
    assert detect(read(driver / "main.py")).style == "per-node"


def test_a_packages_star_brings_the_submodules_its_init_imports_from(tmp_path: Path) -> None:
    """YouReID's ``from utils import *``, whose ``__init__.py`` has ``from .evaluate import eval_result``: importing a
    submodule binds it in its package, so the script's ``evaluate.eval_result(...)`` is defined; with ``__all__``
    only its names come, as Python does."""
    from orchestrator.source.starimports import star_names

    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "evaluate.py").write_text("def eval_result():\n    pass\n")
    (tmp_path / "utils" / "_private.py").write_text("x = 1\n")
    init = "from .evaluate import eval_result\nfrom ._private import x\nfrom . import sibling\n"
    (tmp_path / "utils" / "__init__.py").write_text(init)
    project, module = _project(tmp_path, "from utils import *\nevaluate.eval_result()\n")
    assert star_names(module, None, project) == {"eval_result", "evaluate", "x", "sibling"}
    (tmp_path / "utils" / "__init__.py").write_text(f"__all__ = ['eval_result']\n{init}")
    project, module = _project(tmp_path, "from utils import *\nevaluate.eval_result()\n")
    assert star_names(module, None, project) == {"eval_result"}


def test_exported_keeps_all_else_the_public_names() -> None:
    names = {"pl": "pytorch_lightning", "_hidden": "os", "np": "numpy"}
    assert exported(ast.parse("import os\n"), names) == {"pl": "pytorch_lightning", "np": "numpy"}
    assert exported(ast.parse("__all__ = ['np', '_hidden']\n"), names) == {"np": "numpy", "_hidden": "os"}
