"""A module the script imports by bare name from another folder of its repository, which the README's command puts on
``PYTHONPATH`` (AudioSet ConvNeXt's ``import idr_torch`` in ``src/.../pytorch/main.py`` of ``src/.../utils/``): the
one module of that name in the repository is the script's (``syspath.elsewhere_in_repository``), so its reading of
Slurm's variables decides the launch style; not where two modules have the name, where the name is the standard
library's or a well-known installed package's, nor outside a repository."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from orchestrator.launchstyles import detect, read
from orchestrator.source.names import Module
from orchestrator.source.project import Project

IDR = """import os

rank = int(os.environ["SLURM_PROCID"])
local_rank = int(os.environ["SLURM_LOCALID"])
size = int(os.environ["SLURM_NTASKS"])
"""
MAIN = """import torch
import torch.distributed as dist
import idr_torch


def main():
    dist.init_process_group("nccl", rank=idr_torch.rank, world_size=idr_torch.size)
    torch.cuda.set_device(idr_torch.local_rank)


main()
"""


def _repository(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"LICENSE": "MIT\n", "src/pkg/pytorch/main.py": MAIN, **files}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path / "src/pkg/pytorch/main.py"


def test_a_bare_import_from_another_folder_of_the_repository_is_the_projects(tmp_path: Path) -> None:
    script = _repository(tmp_path, {"src/pkg/utils/idr_torch.py": IDR})
    project = Project(script, Module(ast.parse(MAIN)), ast.parse(MAIN))
    assert project.find("idr_torch") == (tmp_path / "src/pkg/utils/idr_torch.py").resolve()
    launch = detect(read(script))
    assert launch.style == "slurm" and "idr_torch.py" in launch.why


@pytest.mark.parametrize("files", [
    {"src/pkg/utils/idr_torch.py": IDR, "tools/idr_torch.py": IDR},  # two of that name: which one is a guess
    {"LICENSE": "", "src/pkg/utils/other.py": IDR},  # none
])
def test_no_one_module_of_that_name_is_no_module(tmp_path: Path, files: dict[str, str]) -> None:
    script = _repository(tmp_path, files)
    assert Project(script, Module(ast.parse(MAIN)), ast.parse(MAIN)).find("idr_torch") is None
    assert detect(read(script)).style == "env"


@pytest.mark.parametrize("name", ["datasets", "logging", "wandb"])
def test_an_installed_or_standard_name_is_never_looked_for_in_the_tree(tmp_path: Path, name: str) -> None:
    script = _repository(tmp_path, {f"data/{name}/__init__.py": IDR, f"tools/{name}.py": IDR})
    source = f"import {name}\n"
    assert Project(script, Module(ast.parse(source)), ast.parse(source)).find(name) is None


def test_outside_a_repository_nothing_is_searched(tmp_path: Path) -> None:
    script = _repository(tmp_path, {"src/pkg/utils/idr_torch.py": IDR})
    (tmp_path / "LICENSE").unlink()
    assert Project(script, Module(ast.parse(MAIN)), ast.parse(MAIN)).find("idr_torch") is None


VARIABLE = """import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    dist.init_process_group("nccl")
    ddp = DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
    ddp.train()


main()
"""


def test_a_variable_named_like_a_module_elsewhere_is_never_that_module(tmp_path: Path) -> None:
    # `ddp.train()` on a local `ddp`: another folder's ddp.py, which reads Slurm's variables, is not the script's
    script = _repository(tmp_path, {"src/pkg/pytorch/main.py": VARIABLE, "experiments/ddp.py": IDR})
    assert Project(script, Module(ast.parse(VARIABLE)), ast.parse(VARIABLE)).find("ddp") is None
    assert detect(read(script)).style == "env"
    # imported by name, it is the one module of that name in the repository
    imported = VARIABLE.replace("import torch\n", "import torch\nimport ddp\n", 1)
    assert Project(script, Module(ast.parse(imported)), ast.parse(imported)).find("ddp") == (
        tmp_path / "experiments/ddp.py").resolve()


def test_a_name_a_module_read_later_imports_is_looked_for_again(tmp_path: Path) -> None:
    # asked first as a variable's name (no module read imports it), then imported by a helper read after
    script = _repository(tmp_path, {"src/pkg/pytorch/main.py": VARIABLE, "experiments/ddp.py": IDR,
                                    "src/pkg/pytorch/helper.py": "import ddp\n"})
    project = Project(script, Module(ast.parse(VARIABLE)), ast.parse(VARIABLE))
    assert project.find("ddp") is None
    assert project.read((tmp_path / "src/pkg/pytorch/helper.py").resolve()) is not None
    assert project.find("ddp") == (tmp_path / "experiments/ddp.py").resolve()
