"""A script that lives below the package it imports: the src/ layout of an installed package
(``src/tevatron/retriever/driver/train.py`` importing ``tevatron.retriever.trainer``) and a repository's ``bin/``
script importing its own package from the folder above (OpenNMT-py's ``onmt/bin/train.py``), and a recipe deep below
the repository's root (icefall's ``egs/.../train.py``): the modules are found, and a helper's calls of its own
module's functions are followed there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

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


def test_a_package_whose_parents_have_no_init_resolves_its_relative_imports_by_its_imported_name(
        tmp_path: Path) -> None:
    """``pkg/abc/trainers/__init__.py`` re-exports ``from .base import BaseTrainer``, and ``pkg/abc/`` and ``pkg/``
    were shipped without their ``__init__.py``: imported as ``pkg.abc.trainers``, its relative import starts there,
    so the class's module is read (not ``trainers.base``, a name nothing has)."""
    from orchestrator.doctor.frameworks import read_frameworks

    _write(tmp_path, {
        "pkg/abc/trainers/__init__.py": "from .base import BaseTrainer\n",
        "pkg/abc/trainers/base.py": "from transformers.trainer import Trainer\n\n\nclass BaseTrainer(Trainer):\n"
                                    "    pass\n",
        "pkg/run/__init__.py": "",
        "pkg/run/trainer.py": "from pkg.abc.trainers import BaseTrainer\n\n\nclass MyTrainer(BaseTrainer):\n"
                              "    pass\n",
    })
    script = tmp_path / "pkg" / "run" / "__main__.py"
    script.write_text("from pkg.run.trainer import MyTrainer\n\n\ndef main():\n    MyTrainer(model=None).train()\n",
                      encoding="utf-8")
    [framework] = read_frameworks(script)
    assert (framework.name, framework.why) == ("hf-trainer", "__main__.py:5: MyTrainer(model=None).train()")
    # the same package inside a complete one (every folder with its __init__.py) was read before, and still is
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "abc" / "__init__.py").write_text("")
    assert [f.name for f in read_frameworks(script)] == ["hf-trainer"]


def test_a_package_beside_the_scripts_folder_is_found_by_its_bare_name_and_a_module_file_there_is_not(
        tmp_path: Path) -> None:
    # SpeechTokenizer's layout: scripts/train_example.py does `from speechtokenizer import SpeechTokenizerTrainer`, the
    # package's __init__.py re-exporting it from its trainer module
    _write(tmp_path, {"speechtok/__init__.py": "from .trainer import spawned_train\n", "speechtok/trainer.py": DIST,
                      "helpers.py": DIST})
    project = _project(tmp_path / "scripts" / "train.py",
                       "from speechtok import spawned_train\nimport helpers\n")
    assert project.find("speechtok") == (tmp_path / "speechtok" / "__init__.py").resolve()
    reach = project.reach("speechtok.spawned_train")
    assert reach is not None and "torch.distributed.init_process_group" in reach.quals
    assert project.find("helpers") is None  # a module file above the script's folder is not its


def test_a_src_layout_package_beside_the_scripts_folder_is_found(tmp_path: Path) -> None:
    """LTX-Video-Trainer's ``scripts/train.py`` imports ``ltxv_trainer``, which lives in ``src/ltxv_trainer`` (installed
    with ``pip install -e .``): found there; a stray module file of that name in src/ is not a package."""
    _write(tmp_path / "src" / "pkg", {"__init__.py": "", "dist.py": DIST})
    (tmp_path / "src" / "stray.py").write_text("x = 1\n")
    project = _project(tmp_path / "scripts" / "train.py", "from pkg.dist import spawned_train\nimport stray\n")
    assert project.find("pkg.dist") == (tmp_path / "src" / "pkg" / "dist.py").resolve()
    assert project.find("stray") is None
    reach = project.reach("pkg.dist.spawned_train")
    assert reach is not None and "torch.distributed.init_process_group" in reach.quals


@pytest.mark.parametrize("mark", [".git", "setup.py", "LICENSE"])
def test_a_recipe_deep_below_the_repository_root_finds_the_package_there(tmp_path: Path, mark: str) -> None:
    """icefall's ``egs/librispeech/ASR/conformer_ctc/train.py``, run with ``PYTHONPATH`` at the repository's root,
    imports ``icefall.dist`` from there: the root is the nearest folder above that a repository holds."""
    _write(tmp_path, {"icefall/dist.py": DIST, mark: ""})
    project = _project(tmp_path / "egs" / "librispeech" / "ASR" / "conformer_ctc" / "train.py",
                       "from icefall.dist import spawned_train\n")
    assert project.find("icefall.dist") == (tmp_path / "icefall" / "dist.py").resolve()


def test_without_a_repository_root_a_package_far_above_is_not_taken(tmp_path: Path) -> None:
    _write(tmp_path, {"icefall/dist.py": DIST})
    project = _project(tmp_path / "egs" / "librispeech" / "ASR" / "conformer_ctc" / "train.py",
                       "from icefall.dist import spawned_train\n")
    assert project.find("icefall.dist") is None
