"""A script that lives below the package it imports: the src/ layout of an installed package
(``src/tevatron/retriever/driver/train.py`` importing ``tevatron.retriever.trainer``) and a repository's ``bin/``
script importing its own package from the folder above (OpenNMT-py's ``onmt/bin/train.py``): the modules are found,
and a helper's calls of its own module's functions are followed there."""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator.source.names import Module
from orchestrator.source.project import Project

DIST = """import torch.distributed


def multi_init(opt, device_id):
    torch.distributed.init_process_group("nccl", rank=opt.ranks[device_id])


def spawned_train(fn, opt, device_id):
    multi_init(opt, device_id)
    fn(opt, device_id)
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _project(script: Path, source: str) -> Project:
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(source)
    tree = ast.parse(source)
    return Project(script, Module(tree), tree)


def test_a_src_layout_package_is_found_from_a_script_inside_it(tmp_path: Path) -> None:
    _write(tmp_path / "src" / "pkg", {"retriever/__init__.py": "", "retriever/dist.py": DIST})
    project = _project(tmp_path / "src" / "pkg" / "retriever" / "driver" / "train.py",
                       "from pkg.retriever.dist import spawned_train\n")
    assert project.find("pkg.retriever.dist") == (tmp_path / "src" / "pkg" / "retriever" / "dist.py").resolve()
    reach = project.reach("pkg.retriever.dist.spawned_train")
    assert reach is not None and "torch.distributed.init_process_group" in reach.quals


def test_a_helper_of_the_package_above_follows_its_own_functions(tmp_path: Path) -> None:
    _write(tmp_path / "onmt", {"utils/dist.py": DIST})
    project = _project(tmp_path / "onmt" / "bin" / "train.py", "from onmt.utils.dist import spawned_train\n")
    reach = project.reach("onmt.utils.dist.spawned_train")
    assert reach is not None and "torch.distributed.init_process_group" in reach.quals  # through multi_init


def test_a_package_of_another_name_above_is_not_taken(tmp_path: Path) -> None:
    _write(tmp_path / "src" / "other", {"retriever/__init__.py": "", "retriever/dist.py": DIST})
    project = _project(tmp_path / "src" / "pkg" / "retriever" / "driver" / "train.py",
                       "from other.retriever.dist import x\n")
    assert project.find("other.retriever.dist") is None  # not an ancestor's package: an installed one
