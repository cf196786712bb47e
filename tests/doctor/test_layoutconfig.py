"""DDP023 from a config file the script loads: a Lightning Trainer made from a config section (``Trainer(**cfg.
trainer)``, ``hydra.utils.instantiate(cfg.trainer)``) or given ``num_nodes=cfg.trainer.num_nodes`` takes the layout
the file fixes (likely: the user may pass another config or an override); a section that lets the layout follow the
launch, or a config the script does not load, stays silent."""

from __future__ import annotations

from pathlib import Path

from orchestrator.doctor import Finding, check_file
from orchestrator.doctor.feasibility import across_nodes
from orchestrator.doctor.rules_layout import CONFIG_DEFAULT

_YAML_SCRIPT = """
import argparse
import yaml
import lightning.pytorch as pl
p = argparse.ArgumentParser()
p.add_argument("--config", default="configs/train.yaml")
args = p.parse_args()
with open(args.config) as f:
    cfg = yaml.safe_load(f)
trainer = pl.Trainer(strategy="ddp", **cfg["trainer"])
trainer.fit(object())
"""


def layout_findings(folder: Path, files: dict[str, str]) -> list[Finding]:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return [f for f in check_file(folder / next(iter(files))) if f.code == "DDP023"]


def test_a_trainer_spread_from_a_yaml_section_takes_its_node_count(tmp_path: Path) -> None:
    found = layout_findings(tmp_path, {"train.py": _YAML_SCRIPT,
                                       "configs/train.yaml": "seed: 1\ntrainer:\n  devices: 8\n  num_nodes: 1\n"})
    assert [(f.line, f.confidence) for f in found] == [(10, "likely")]
    assert "num_nodes=1 (configs/train.yaml:4" in found[0].message


def test_a_section_that_follows_the_launch_is_not_reported(tmp_path: Path) -> None:
    config = "trainer:\n  devices: auto\n  num_nodes: ${oc.env:N}\n"
    assert layout_findings(tmp_path, {"train.py": _YAML_SCRIPT, "configs/train.yaml": config}) == []


def test_a_hydra_apps_trainer_group_is_read_through_its_defaults(tmp_path: Path) -> None:
    found = layout_findings(tmp_path, {"src/train.py": """
import hydra
from omegaconf import DictConfig
def train(cfg: DictConfig) -> None:
    trainer = hydra.utils.instantiate(cfg.trainer)
    trainer.fit(object())
@hydra.main(version_base="1.3", config_path="../configs", config_name="train.yaml")
def main(cfg: DictConfig) -> None:
    train(cfg)
""", "configs/train.yaml": "defaults:\n  - _self_\n  - trainer: default\nseed: 1\n",
        "configs/trainer/default.yaml": "_target_: lightning.pytorch.trainer.Trainer\naccelerator: gpu\ndevices: 1\n"})
    assert [(f.line, f.confidence) for f in found] == [(5, "likely")]
    assert "devices=1 (trainer/default.yaml:3" in found[0].message


def test_a_num_nodes_read_from_the_config_and_a_config_not_loaded(tmp_path: Path) -> None:
    script = """
import json
import lightning.pytorch as pl
cfg = json.load(open("{name}"))
trainer = pl.Trainer(strategy="ddp", devices="auto", num_nodes=cfg["num_nodes"])
"""
    found = layout_findings(tmp_path / "a", {"train.py": script.format(name="cfg.json"),
                                             "cfg.json": '{"num_nodes": 1}'})
    assert [(f.line, f.confidence) for f in found] == [(5, "likely")]
    assert layout_findings(tmp_path / "b", {"train.py": script.format(name="other.json"),
                                            "cfg.json": '{"num_nodes": 1}'}) == []


_CLI = """
from pytorch_lightning.cli import LightningCLI
if __name__ == "__main__":
    cli = LightningCLI(run=False)
    cli.trainer.fit(model=cli.model, datamodule=cli.datamodule)
"""


def test_a_lightning_cli_takes_the_layout_of_the_projects_trainer_config(tmp_path: Path) -> None:
    found = layout_findings(tmp_path / "a", {"train.py": _CLI, "configs/vocoder.yaml":
                                             "seed_everything: 4444\ntrainer:\n  strategy: ddp\n  devices: [0]\n"})
    assert [(f.line, f.confidence) for f in found] == [(4, "likely")]
    assert "devices=[0] (configs/vocoder.yaml:4" in found[0].message
    follows = "trainer:\n  strategy: ddp\n  devices: auto\n  num_nodes: ${oc.env:SLURM_NNODES}\n"
    assert layout_findings(tmp_path / "b", {"train.py": _CLI, "configs/vocoder.yaml": follows}) == []
    # no file sets a layout: Lightning's one node, unless the command line says (layoutconfig.cli_defaults)
    unset = layout_findings(tmp_path / "c", {"train.py": _CLI, "configs/data.yaml": "trainer:\n  max_epochs: 3\n"})
    assert [(f.line, f.confidence, "num_nodes=1 (Lightning's default" in f.message) for f in unset] == [
        (4, "likely", True)]


def test_configs_that_differ_in_other_settings_but_agree_on_the_layout_are_likely(tmp_path: Path) -> None:
    def config(steps: int, devices: str) -> str:
        return f"trainer:\n  max_steps: {steps}\n  strategy: ddp\n  devices: {devices}\n"

    agree = {"train.py": _CLI, "configs/small.yaml": config(100, "[0, 1]"), "configs/large.yaml": config(900, "[0, 1]")}
    assert [(f.line, f.confidence) for f in layout_findings(tmp_path / "a", agree)] == [(4, "likely")]
    differ = {"train.py": _CLI, "configs/small.yaml": config(100, "[0, 1]"),
              "configs/large.yaml": config(100, "[0, 1, 2, 3]")}
    assert [(f.line, f.confidence) for f in layout_findings(tmp_path / "b", differ)] == [(4, "possible")]


def test_a_hydra_app_whose_config_folder_is_built_from_the_root_and_a_pytorch_lightning_target(
        tmp_path: Path) -> None:
    found = layout_findings(tmp_path, {"train.py": """
import hydra
import pyrootutils
root = pyrootutils.setup_root(search_from=__file__, indicator=[".git"])
@hydra.main(version_base="1.2", config_path=str(root / "pkg/configs"), config_name="train.yaml")
def main(cfg):
    trainer = hydra.utils.instantiate(cfg.trainer, callbacks=[])
    trainer.fit(object())
""", "pkg/configs/train.yaml": "defaults:\n  - _self_\n  - trainer: ddp.yaml\n",
        "pkg/configs/trainer/ddp.yaml": "_target_: pytorch_lightning.Trainer\nstrategy: ddp\ndevices: 8\n"
                                        "num_nodes: 1\n"})
    assert [(f.line, f.confidence) for f in found] == [(7, "likely")]
    assert "num_nodes=1 (trainer/ddp.yaml:4" in found[0].message


def test_a_dict_that_spreads_the_section_and_adds_keys_is_read_through(tmp_path: Path) -> None:
    """HULC's ``trainer_args = {**cfg.trainer, "logger": ..., "callbacks": ...}`` then ``Trainer(**trainer_args)``:
    the layout is the section's; silent where the dict (or a later ``trainer_args["devices"] = ...``) sets it."""
    script = _YAML_SCRIPT.replace('trainer = pl.Trainer(strategy="ddp", **cfg["trainer"])',
                                  'trainer_args = {**cfg["trainer"], "logger": None, "callbacks": []}\n'
                                  'trainer = pl.Trainer(strategy="ddp", **trainer_args)')
    config = "trainer:\n  devices: 1\n"
    found = layout_findings(tmp_path, {"train.py": script, "configs/train.yaml": config})
    assert [(f.line, f.confidence) for f in found] == [(11, "likely")]
    set_later = script.replace("trainer = pl.Trainer(", 'trainer_args["devices"] = "auto"\ntrainer = pl.Trainer(')
    assert layout_findings(tmp_path, {"train.py": set_later, "configs/train.yaml": config}) == []


def test_a_section_held_in_an_attribute_of_the_experiment_class_leaves_num_nodes_at_one(tmp_path: Path) -> None:
    """FrameFlow: ``self._exp_cfg = cfg.experiment`` in the class the Hydra app makes, then
    ``Trainer(**self._exp_cfg.trainer, devices=ids)`` with no ``num_nodes`` in the section: Lightning's default, one
    node (the section's ``strategy: ddp`` says the script is meant for several GPUs or nodes)."""
    script = """
import hydra
from lightning import Trainer


class Experiment:
    def __init__(self, *, cfg):
        self._exp_cfg = cfg.experiment

    def train(self, ids):
        trainer = Trainer(**self._exp_cfg.trainer, devices=ids)
        trainer.fit(None)


@hydra.main(version_base=None, config_path="../configs", config_name="base.yaml")
def main(cfg):
    Experiment(cfg=cfg).train(pick_free_gpus())
"""
    found = layout_findings(tmp_path, {"experiments/train.py": script, "configs/base.yaml":
                                       "experiment:\n  trainer:\n    strategy: ddp\n    max_epochs: 3\n"})
    assert [(f.line, f.confidence) for f in found] == [(11, "likely")]
    assert "num_nodes=1 (not in configs/base.yaml:2" in found[0].evidence


def test_a_device_list_written_in_is_a_literal_layout(tmp_path: Path) -> None:
    script = "import lightning as L\ntrainer = L.Trainer(devices=[0, 1], num_nodes=1)\ntrainer.fit(object())\n"
    found = layout_findings(tmp_path, {"train.py": script})
    assert [(f.line, f.confidence) for f in found] == [(2, "certain")]
    assert "devices=[0, 1]" in found[0].evidence


def test_a_helper_trainer_factory_reads_the_config_the_user_passes_from_the_project_root(tmp_path: Path) -> None:
    """SaProt: ``python scripts/training.py -c config/task/model.yaml`` from the root (``-c`` required), the config
    handed to ``utils/module_loader.load_trainer``, whose ``pl.Trainer(**copy.deepcopy(config.Trainer), ...)`` takes
    the section's layout: DDP023 in the helper, likely (a warning: never a refusal from a helper)."""
    script = """
import argparse
import yaml
from easydict import EasyDict
from utils.module_loader import *


def run(config):
    trainer = load_trainer(config)
    trainer.fit(None)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-c", "--config", required=True)
    args = p.parse_args()
    with open(args.config) as r:
        config = EasyDict(yaml.safe_load(r))
    run(config)


main()
"""
    helper = """
import copy
import pytorch_lightning as pl


def load_trainer(config):
    trainer_config = copy.deepcopy(config.Trainer)
    strategy = trainer_config.pop("strategy")
    return pl.Trainer(**trainer_config, strategy=strategy, callbacks=[])
"""
    found = layout_findings(tmp_path, {"scripts/training.py": script, "utils/__init__.py": "",
                                       "utils/module_loader.py": helper, "LICENSE": "MIT",
                                       "config/task/model.yaml": "Trainer:\n  devices: 4\n  num_nodes: 1\n"
                                                                 "  strategy: ddp\n"})
    assert [(Path(f.file).name, f.line, f.severity, f.confidence) for f in found] == [
        ("module_loader.py", 9, "warning", "likely")]
    assert "num_nodes=1 (task/model.yaml:3" in found[0].evidence


def test_a_project_subclass_of_lightning_cli_is_a_lightning_cli(tmp_path: Path) -> None:
    """PDEArena's ``utils.PDECLI(PDEModel, ...)`` with ``class PDECLI(LightningCLI)`` in the project: the Trainer comes
    from the ``trainer:`` section of the project's config (``num_nodes: 1``)."""
    utils = ("from pytorch_lightning.cli import LightningCLI\n\n\nclass PDECLI(LightningCLI):\n"
             "    def add_arguments_to_parser(self, parser):\n        pass\n")
    script = ("from pdearena import utils\n\n\ndef main():\n    cli = utils.PDECLI(object, run=False)\n"
              "    cli.trainer.fit(cli.model)\n\n\nmain()\n")
    config = "trainer:\n  strategy: ddp\n  devices: 8\n  num_nodes: 1\n"
    found = layout_findings(tmp_path, {"scripts/train.py": script, "pdearena/__init__.py": "",
                                       "pdearena/utils.py": utils, "configs/ns2d.yaml": config, "LICENSE": "MIT"})
    assert [(f.line, f.confidence) for f in found] == [(5, "likely")]
    assert "num_nodes=1 (configs/ns2d.yaml:4" in found[0].evidence
    plain = utils.replace("(LightningCLI)", "(object)")  # a project class of its own: not read as a CLI
    assert layout_findings(tmp_path / "b", {"scripts/train.py": script, "pdearena/__init__.py": "",
                                            "pdearena/utils.py": plain, "configs/ns2d.yaml": config,
                                            "LICENSE": "MIT"}) == []


def test_the_config_a_script_loads_with_no_argument_refuses_a_run_across_nodes_only_then(tmp_path: Path) -> None:
    """The node count of the config file the script loads when started with no argument (``--config`` defaults to
    it): with no argument passed the run takes it, so on 2 nodes the stuck layout is the error that refuses the run;
    with any argument (an override, another config) or unknown arguments (``orch doctor``) it stays the warning."""
    [found] = layout_findings(tmp_path, {"train.py": _YAML_SCRIPT,
                                         "configs/train.yaml": "trainer:\n  devices: 8\n  num_nodes: 1\n"})
    assert CONFIG_DEFAULT in found.marks and found.nodes == 1
    assert [f.severity for f in across_nodes([found], 2, 8, [])] == ["error"]
    assert [f.severity for f in across_nodes([found], 1, 8, [])] == ["warning"]
    assert [f.severity for f in across_nodes([found], 2, 8, ["--config", "configs/two_nodes.yaml"])] == ["warning"]
    assert [f.severity for f in across_nodes([found], 2, 8)] == ["warning"]


def test_a_config_the_user_must_pass_is_never_the_one_run_with_no_argument(tmp_path: Path) -> None:
    script = _YAML_SCRIPT.replace('p.add_argument("--config", default="configs/train.yaml")',
                                  'p.add_argument("--config", required=True)')
    found = layout_findings(tmp_path, {"train.py": script,
                                       "configs/train.yaml": "trainer:\n  devices: 8\n  num_nodes: 1\n"})
    assert all(CONFIG_DEFAULT not in f.marks for f in found)
    assert [f.severity for f in across_nodes(found, 2, 8, [])] == ["warning"] * len(found)


def test_a_trainer_instantiated_from_the_config_a_re_exported_loader_reads(tmp_path: Path) -> None:
    """EpiDiff: ``cfg = load_config(args.config)`` with ``load_config(*yamls)`` loading each file in a comprehension,
    re-exported by the package's ``__init__``, then ``hydra.utils.instantiate(cfg.trainer)`` of a section naming a
    DDP strategy and no ``num_nodes``: the project's one config gives num_nodes=1, likely."""
    script = """
import argparse
import hydra
from proj.utils import load_config


def train(cfg):
    trainer = hydra.utils.instantiate(cfg.trainer, callbacks=[])
    trainer.fit(None)


def main(args, extras):
    cfg = load_config(args.config, cli_args=extras)
    train(cfg)


p = argparse.ArgumentParser()
p.add_argument("--config", required=True)
main(*p.parse_known_args())
"""
    loader = """
from omegaconf import OmegaConf


def load_config(*yamls, cli_args=[]):
    confs = [OmegaConf.load(f) for f in yamls]
    return OmegaConf.merge(*confs, OmegaConf.from_cli(cli_args))
"""
    trainer = "trainer:\n  _target_: lightning.pytorch.trainer.Trainer\n  strategy: {strategy}\n  accelerator: gpu\n"
    files = {"train.py": script, "proj/__init__.py": "", "proj/utils/__init__.py": "from .config import load_config\n",
             "proj/utils/config.py": loader, "LICENSE": "MIT"}
    found = layout_findings(tmp_path / "a", {**files, "configs/base.yaml": trainer.format(strategy="ddp")})
    assert [(f.line, f.confidence) for f in found] == [(8, "likely")]
    assert "num_nodes=1 (not in configs/base.yaml" in found[0].evidence
    # one process: a strategy that is not data-parallel, and no other sign of several GPUs
    assert layout_findings(tmp_path / "b", {**files, "configs/base.yaml": trainer.format(strategy="single_device")
                                            .replace("  accelerator: gpu\n", "")}) == []


def test_a_section_taken_by_getattr_with_an_empty_fallback(tmp_path: Path) -> None:
    """MIC-DKFZ's ``trainer_args = getattr(cfg, "pl_trainer") if has_not_empty_attr(cfg, "pl_trainer") else {}`` then
    ``Trainer(**trainer_args)``: the section ``pl_trainer`` of the Hydra config (devices -1, no num_nodes)."""
    script = """
import hydra
from lightning.pytorch import Trainer
from lightning.pytorch.strategies import DDPStrategy


@hydra.main(config_path="config", config_name="training", version_base="1.3")
def training_loop(cfg):
    trainer_args = getattr(cfg, "pl_trainer") if has_not_empty_attr(cfg, "pl_trainer") else {}
    trainer = Trainer(callbacks=[], strategy=DDPStrategy(), **trainer_args)
    trainer.fit(None)
"""
    found = layout_findings(tmp_path, {"training.py": script, "config/training.yaml":
                                       "defaults:\n  - _self_\n  - experiment/default\n",
                                       "config/experiment/default.yaml":
                                       "# @package _global_\npl_trainer:\n  accelerator: gpu\n  devices: -1\n"})
    assert [(f.line, f.confidence) for f in found] == [(10, "likely")]
    assert "num_nodes=1 (not in experiment/default.yaml" in found[0].evidence


def test_a_trainer_object_from_dict_builds_from_its_type_section(tmp_path: Path) -> None:
    script = """
import argparse
import yaml
from iglovikov_helper_functions.config_parsing.utils import object_from_dict
parser = argparse.ArgumentParser()
arg = parser.add_argument
arg("-c", "--config_path", required=True)
args = parser.parse_args()
with open(args.config_path) as f:
    hparams = yaml.load(f, Loader=yaml.SafeLoader)
trainer = object_from_dict(hparams["trainer"], logger=None)
trainer.fit(object_from_dict(hparams["model"]))
"""
    config = ("model:\n  type: unet.Unet\ntrainer:\n  type: pytorch_lightning.Trainer\n  gpus: 4\n"
              "  distributed_backend: ddp\n")
    found = layout_findings(tmp_path, {"train.py": script, "configs/run.yaml": config})
    assert [(f.line, f.confidence) for f in found] == [(11, "likely")]
    assert "gpus=4 (configs/run.yaml:5" in found[0].message
    other = layout_findings(tmp_path / "other", {"train.py": script,
                                                 "configs/run.yaml": config.replace("pytorch_lightning.Trainer",
                                                                                    "mytrainer.Loop")})
    assert other == []  # another class's section is not a Trainer's layout


def test_a_hydra_trainer_of_the_projects_own_subclass_takes_its_sections_layout(tmp_path: Path) -> None:
    script = """
import hydra
@hydra.main(version_base="1.3", config_path="configs", config_name="train.yaml")
def main(cfg):
    trainer = hydra.utils.instantiate(cfg.trainer, callbacks=[])
    trainer.fit(object())
main()
"""
    config = "trainer:\n  _target_: proj.utils.trainer.ProjTrainer\n  devices: auto\n  strategy: ddp\n  num_nodes: 1\n"
    files = {"proj/train.py": script, "proj/configs/train.yaml": config,
             "proj/utils/trainer.py": "from lightning import Trainer\nclass ProjTrainer(Trainer):\n    pass\n"}
    found = layout_findings(tmp_path, files)
    assert [(f.line, f.confidence) for f in found] == [(5, "likely")]
    assert "num_nodes=1 (configs/train.yaml:5" in found[0].message
    files["proj/utils/trainer.py"] = "class ProjTrainer:\n    pass\n"  # not Lightning's
    assert layout_findings(tmp_path / "other", files) == []


def test_a_fabric_spread_from_a_config_a_helpers_parser_names(tmp_path: Path) -> None:
    """naifu's ``pl.Fabric(strategy=strategy, **config.lightning)`` with ``config = OmegaConf.load(args.config)`` and
    ``args`` from the project's ``parse_args()``: the flag named as a config is a file the user passes."""
    script = """
import lightning as pl
from omegaconf import OmegaConf
from common.utils import parse_args
args = parse_args()
config = OmegaConf.load(args.config)
fabric = pl.Fabric(strategy="ddp", **config.lightning)
fabric.launch()
"""
    helper = "import argparse\ndef parse_args():\n    p = argparse.ArgumentParser()\n" \
             "    p.add_argument('--config', required=True)\n    return p.parse_args()\n"
    config = "lightning:\n  accelerator: gpu\n  devices: -1\n"
    found = layout_findings(tmp_path, {"train.py": script, "common/utils.py": helper, "config/run.yaml": config})
    assert [(f.line, f.confidence) for f in found] == [(7, "likely")]
    assert found[0].args_config is not None and found[0].args_config.options == ("--config",)
    renamed = script.replace("args.config", "args.lr")  # not named as a config: not read
    assert layout_findings(tmp_path / "other", {"train.py": renamed, "common/utils.py": helper,
                                                "config/run.yaml": config}) == []
