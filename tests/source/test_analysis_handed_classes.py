"""What a script's calls reach in its project (``Analysis.helper``), also where no call of the project's code is
written: a class handed to Lightning's command line (``LightningCLI(Point2Vec)``, by keyword, through a class of the
file built on ``LightningCLI``), the classes a class-less ``LightningCLI()`` offers from the file's imports, and a
module's own class built by a method (a classmethod's ``cls(...)``, ``TinyStoriesModel(model)``): Lightning runs
their hooks, so the doctor reads them as the run's."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from orchestrator.source.analysis import Analysis

_MODEL = """\
import lightning.pytorch as pl


class Model(pl.LightningModule):
    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self.layer(batch).sum())

    @classmethod
    def initialize(cls, config):
        return {build}
"""


def _reached(tmp_path: Path, script: str, build: str = "cls(config)") -> frozenset[str]:
    (tmp_path / "models.py").write_text(_MODEL.format(build=build))
    path = tmp_path / "main.py"
    path.write_text(script)
    analysis = Analysis(ast.parse(script), str(path))
    assert analysis.project is not None
    list(analysis.helper_quals)
    return analysis.project.reached(tmp_path / "models.py")


@pytest.mark.parametrize("script", [
    "from lightning.pytorch.cli import LightningCLI\nfrom models import Model\nLightningCLI(Model)\n",
    "from pytorch_lightning.cli import LightningCLI\nimport models\nLightningCLI(model_class=models.Model)\n",
    "from lightning.pytorch.cli import LightningCLI\nfrom models import Model\nLightningCLI()\n",
    "from lightning.pytorch.cli import LightningCLI\nfrom models import Model\n"
    "class MyCLI(LightningCLI):\n    pass\nMyCLI(Model, subclass_mode_model=True)\n",
    "from models import Model\nmodel = Model.initialize({})\n",
])
def test_a_class_lightning_runs_or_a_method_builds_is_reached(tmp_path: Path, script: str) -> None:
    assert "Model" in _reached(tmp_path, script)


@pytest.mark.parametrize("script", [
    "from models import Model\nprint(Model)\n",  # named, never built nor handed to a framework
    "from other import LightningCLI\nfrom models import Model\nLightningCLI(Model)\n",  # not Lightning's
    "from lightning.pytorch.cli import LightningCLI\nfrom models import Model\nLightningCLI(Other)\n",
])
def test_a_class_only_named_is_not(tmp_path: Path, script: str) -> None:
    assert "Model" not in _reached(tmp_path, script)


def test_a_method_that_builds_the_class_by_its_name_reaches_it(tmp_path: Path) -> None:
    script = "from models import Model\nmodel = Model.initialize({})\n"
    assert "Model" in _reached(tmp_path, script, build="Model(config)")
    assert "Model" not in _reached(tmp_path, script, build="dict(config)")
