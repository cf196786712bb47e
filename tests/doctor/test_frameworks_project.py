"""The framework a launch must be named for when its object is made in a project module (an ``Accelerator()`` in
the ``__init__`` of the trainer class the entry builds, also in a package folder shipped without its
``__init__.py``), with the file and line that decided; and ``LightningCLI(...)``, which builds Lightning's Trainer
from a config file (its layout is not in the call, so none is judged)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor.frameworks import read_frameworks

_ENGINE = """\
from accelerate import Accelerator


class Runner:
    def __init__(self, model, lr):
        self.accelerator = Accelerator(mixed_precision="bf16")
        self.model = model

    def fit(self, loader):
        model, loader = self.accelerator.prepare(self.model, loader)
"""

_ENTRY = """\
from mypkg.engine import Runner


def main():
    runner = Runner(model=None, lr=1e-3)
    runner.fit([])


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("with_init", [True, False])
def test_an_accelerator_made_by_the_entrys_trainer_class_names_accelerate(tmp_path: Path, with_init: bool) -> None:
    (tmp_path / "mypkg").mkdir()
    if with_init:
        (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "engine.py").write_text(_ENGINE)
    entry = tmp_path / "train.py"
    entry.write_text(_ENTRY.replace("mypkg.engine", "mypkg.engine" if with_init else "mypkg"))
    [framework] = read_frameworks(entry)
    assert framework.name == "accelerate"
    assert framework.why.startswith("mypkg/engine.py:6:") and "Accelerator(" in framework.why


def test_a_class_no_module_of_the_folder_defines_names_nothing(tmp_path: Path) -> None:
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "engine.py").write_text(_ENGINE.replace("class Runner", "class Other"))
    entry = tmp_path / "train.py"
    entry.write_text(_ENTRY.replace("mypkg.engine", "mypkg"))
    assert read_frameworks(entry) == []


@pytest.mark.parametrize("module", ["lightning.pytorch.cli", "pytorch_lightning.cli",
                                    "pytorch_lightning.utilities.cli"])
def test_lightning_cli_is_lightning_with_no_layout_judged(tmp_path: Path, module: str) -> None:
    entry = tmp_path / "train.py"
    entry.write_text(f"from {module} import LightningCLI\n\n\ndef main():\n"
                     "    cli = LightningCLI(run=False, seed_everything_default=42)\n"
                     "    cli.trainer.fit(cli.model, datamodule=cli.datamodule)\n\n\nmain()\n")
    [framework] = read_frameworks(entry)
    assert (framework.name, framework.layouts) == ("lightning", [])
    assert framework.why.startswith("train.py:5:")


_WORKSPACE = """\
from accelerate import Accelerator


class TrainWorkspace:
    def __init__(self, cfg):
        self.cfg = cfg

    def run(self):
        accelerator = Accelerator(log_with="wandb")
        accelerator.print("training")
"""

_HYDRA_APP = """\
import hydra


@hydra.main(version_base=None, config_path="policy/config")
def main(cfg):
    cls = hydra.utils.get_class(cfg._target_)
    workspace = cls(cfg)
    workspace.run()


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(("target", "expected"), [
    ("policy.workspace.train_workspace.TrainWorkspace",
     ("accelerate", "policy/workspace/train_workspace.py:9: accelerator = Accelerator(log_with=\"wandb\")")),
    ("policy.workspace.missing.TrainWorkspace", None),  # no such module in the project: nothing read
])
def test_the_workspace_class_a_hydra_config_builds_names_its_loops_framework(
        tmp_path: Path, target: str, expected: tuple[str, str] | None) -> None:
    """diffusion_policy's layout: ``train.py`` makes ``hydra.utils.get_class(cfg._target_)`` of the config's
    top-level ``_target_``, a workspace class of the project that the entry never imports; its Accelerate loop is
    the run's framework. A nested ``_target_`` (a model, a scheduler) is not the app's class and is not read."""
    (tmp_path / "policy" / "workspace").mkdir(parents=True)
    (tmp_path / "policy" / "config").mkdir()
    (tmp_path / "policy" / "workspace" / "train_workspace.py").write_text(_WORKSPACE, encoding="utf-8")
    (tmp_path / "policy" / "workspace" / "model.py").write_text(_WORKSPACE.replace("TrainWorkspace", "Model"),
                                                                 encoding="utf-8")
    (tmp_path / "policy" / "config" / "train.yaml").write_text(
        f"_target_: {target}\npolicy:\n  _target_: policy.workspace.model.Model\n", encoding="utf-8")
    (tmp_path / "train.py").write_text(_HYDRA_APP, encoding="utf-8")
    found = {f.name: f.why for f in read_frameworks(tmp_path / "train.py")}
    if expected is None:
        assert found == {"hydra": "train.py:4: @hydra.main(version_base=None, config_path=\"policy/config\")"}
    else:
        assert found.get(expected[0]) == expected[1]


@pytest.mark.parametrize(("engine", "found"), [
    ("import pytorch_lightning as pl\n\n\ndef build():\n    return None\n", ["lightning"]),
    ("import numpy as np\n\n\ndef build():\n    return None\n", []),  # the star brings no `pl`
])
def test_a_framework_name_a_star_import_of_a_project_module_brings(tmp_path: Path, engine: str,
                                                                     found: list[str]) -> None:
    """EEGPT's ``from engine_pretraining import *`` brings the ``pl`` that module imports; the entry's
    ``pl.Trainer(...)`` is Lightning's."""
    (tmp_path / "engine_pretraining.py").write_text(engine)
    entry = tmp_path / "run_pretraining.py"
    entry.write_text("from engine_pretraining import *\n\nmodel = build()\n"
                     "trainer = pl.Trainer(devices=[0], max_epochs=1)\ntrainer.fit(model)\n")
    assert [f.name for f in read_frameworks(entry)] == found


def test_a_project_trainer_built_on_a_frameworks_star_import_names_it(tmp_path: Path) -> None:
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("from .trainer import MyTrainer\n", encoding="utf-8")
    (tmp_path / "utils" / "trainer.py").write_text(
        "from transformers.trainer import *\n\n\nclass MyTrainer(Trainer):\n    pass\n", encoding="utf-8")
    script = tmp_path / "run.py"
    script.write_text("import utils\n\ntrainer = utils.MyTrainer(model=None)\ntrainer.train()\n", encoding="utf-8")
    assert [f.name for f in read_frameworks(script)] == ["hf-trainer"]


@pytest.mark.parametrize(("name", "found"), [
    ("DiffusionTrainer", ["accelerate"]),  # a Trainer a config section builds: its loop's framework
    ("DiffusionModel", []),  # another class a section names (a model) is not read
])
def test_the_trainer_a_config_section_builds_names_its_framework(tmp_path: Path, name: str,
                                                                 found: list[str]) -> None:
    """semanticist's layout: ``instantiate_from_config(config.trainer)`` of ``trainer: {target: ...}`` in the config
    the user passes (``--cfg configs/x.yaml``), a project class the entry never imports."""
    (tmp_path / "pkg" / "engine").mkdir(parents=True)
    (tmp_path / "configs").mkdir()
    (tmp_path / "pkg" / "engine" / "trainer.py").write_text(_WORKSPACE.replace("TrainWorkspace", name),
                                                            encoding="utf-8")
    (tmp_path / "configs" / "x.yaml").write_text(f"trainer:\n  target: pkg.engine.trainer.{name}\n  params: {{}}\n",
                                                 encoding="utf-8")
    (tmp_path / "train.py").write_text(
        "import argparse\nfrom omegaconf import OmegaConf\nfrom pkg.utils import instantiate_from_config\n\n"
        "p = argparse.ArgumentParser()\np.add_argument('--cfg', default='configs/x.yaml')\n"
        "config = OmegaConf.load(p.parse_args().cfg)\ninstantiate_from_config(config.trainer).train()\n",
        encoding="utf-8")
    assert [f.name for f in read_frameworks(tmp_path / "train.py")] == found
