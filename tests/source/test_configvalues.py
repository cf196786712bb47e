"""source/configvalues: the value a config chain (``h.dist_config["dist_url"]``, ``cfg.trainer.num_nodes``) reads
from the config file the script loads, followed through names, wrappers and parameters; nothing for a config the
script does not load."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from orchestrator.source.configfiles import ConfigValue
from orchestrator.source.configvalues import config_value
from orchestrator.source.names import Module

_URL = {"dist_config": {"dist_backend": "nccl", "dist_url": "tcp://localhost:54321", "world_size": 1}}


def read(script: Path, chain: str, helper: Path | None = None) -> ConfigValue | None:
    """What the first ``chain`` expression in ``helper`` (else the script) reads."""
    outer = Module(ast.parse(script.read_text()))
    module = Module(ast.parse(helper.read_text())) if helper is not None else outer
    expr = next(n for n in module.nodes if isinstance(n, ast.expr) and ast.unparse(n) == chain)
    return config_value(module, script, expr, outer if helper is not None else None)


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder / next(iter(files))


def test_a_json_config_named_by_a_flag_default_is_read_through_a_wrapper_and_a_spawned_function(
        tmp_path: Path) -> None:
    script = write(tmp_path, {"train.py": """
import argparse, json
import torch.multiprocessing as mp
from env import AttrDict
def train(rank, a, h):
    init(h.dist_config["dist_url"])
def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", default="configs/base.json")
    a = p.parse_args()
    with open(a.config) as f:
        data = f.read()
    h = AttrDict(json.loads(data))
    mp.spawn(train, nprocs=2, args=(a, h))
""", "configs/base.json": json.dumps(_URL, indent=2)})
    found = read(script, "h.dist_config['dist_url']")
    assert found is not None
    assert (found.value, found.by_default, found.agreed) == ("tcp://localhost:54321", True, True)
    assert found.where == "configs/base.json:4"


def test_a_required_flag_is_answered_by_the_one_project_config_that_holds_the_keys(tmp_path: Path) -> None:
    script = write(tmp_path, {"trainer.py": """
import argparse
from omegaconf import OmegaConf
from utils.train import train
p = argparse.ArgumentParser()
p.add_argument("-c", "--config", required=True)
args = p.parse_args()
hp = OmegaConf.load(args.config)
train(0, args, hp)
""", "utils/train.py": """
def train(rank, args, hp):
    init(hp.dist_config.dist_url, hp.dist_config.world_size)
""", "config/default.yaml": "dist_config:\n  dist_backend: nccl\n  dist_url: tcp://localhost:54321\n  world_size: 1\n",
        "data/other.yaml": "train:\n  seed: 1\n"})
    found = read(script, "hp.dist_config.dist_url", helper=tmp_path / "utils/train.py")
    assert found is not None
    assert (found.value, found.by_default, found.agreed, found.line) == ("tcp://localhost:54321", False, True, 3)


def test_project_configs_that_disagree_are_a_guess(tmp_path: Path) -> None:
    script = write(tmp_path, {"train.py": """
import argparse, yaml
p = argparse.ArgumentParser()
p.add_argument("--config")
cfg = yaml.safe_load(open(p.parse_args().config))
init(cfg["rank"])
""", "a.yaml": "rank: 0\n", "b.yaml": "rank: 1\n"})
    found = read(script, "cfg['rank']")
    assert found is not None and not found.agreed and found.value in (0, 1)


def test_a_literal_path_overrides_nothing_and_a_config_not_loaded_is_not_read(tmp_path: Path) -> None:
    script = write(tmp_path, {"train.py": """
import json
cfg = json.load(open("cfg.json"))
other = {"dist_url": "env://"}
init(cfg["dist_url"], other["dist_url"])
""", "cfg.json": '{"dist_url": "tcp://10.0.0.1:23456"}', "unused.json": '{"dist_url": "tcp://localhost:1"}'})
    found = read(script, "cfg['dist_url']")
    assert found is not None and (found.value, found.by_default) == ("tcp://10.0.0.1:23456", True)
    assert read(script, "other['dist_url']") is None


def test_a_key_the_config_lacks_is_not_a_value(tmp_path: Path) -> None:
    script = write(tmp_path, {"train.py": """
import json
cfg = json.load(open("cfg.json"))
init(cfg["dist_url"])
""", "cfg.json": '{"seed": 1}'})
    assert read(script, "cfg['dist_url']") is None


def test_a_function_of_the_script_that_loads_its_parameter_is_a_loader(tmp_path: Path) -> None:
    script = write(tmp_path, {"train.py": """
import yaml
def load(path):
    with open(path) as f:
        return yaml.safe_load(f)
cfg = load("cfg.yaml")
init(cfg["trainer"]["num_nodes"])
""", "cfg.yaml": "trainer:\n  num_nodes: 1\n"})
    found = read(script, "cfg['trainer']['num_nodes']")
    assert found is not None and (found.value, found.line) == (1, 2)


_LAYOUT = frozenset({"devices", "num_nodes", "gpus"})


def spread(script: Path, holding: frozenset[str] = _LAYOUT) -> ConfigValue | None:
    """What the ``**`` argument of the script's ``Trainer(...)`` call reads (a section, or the whole config)."""
    module = Module(ast.parse(script.read_text()))
    call = next(n for n in module.nodes if isinstance(n, ast.Call) and ast.unparse(n.func) == "Trainer")
    return config_value(module, script, next(k.value for k in call.keywords if k.arg is None), holding=holding)


def test_a_section_named_by_a_positional_path_is_followed_through_merge_instantiate_and_a_config_class(
        tmp_path: Path) -> None:
    script = write(tmp_path, {"scripts/train.py": """
import sys
from dataclasses import dataclass
import hydra
from omegaconf import OmegaConf
@dataclass
class TrainConfig:
    trainer: dict | None = None
def train(raw_config, args):
    raw_config = OmegaConf.load(raw_config)
    raw_config = OmegaConf.merge(raw_config, OmegaConf.from_dotlist(args))
    cfg = TrainConfig(**hydra.utils.instantiate(raw_config))
    trainer = cfg.trainer
    if trainer is None:
        trainer = {}
    trainer = Trainer(
        strategy="auto",
        **trainer,
    )
if __name__ == "__main__":
    train(sys.argv[1], sys.argv[2:])
""", "scripts/configs/model.yaml": "trainer:\n  precision: 32\n",
        "scripts/configs/train.yaml": "trainer:\n  accelerator: gpu\n  devices: 1\n"})
    found = spread(script)
    assert found is not None
    assert (found.value, found.by_default, found.agreed) == ({"accelerator": "gpu", "devices": 1}, False, True)
    assert found.file.name == "train.yaml"  # model.yaml's trainer sets no layout: not this config


def test_the_whole_config_of_a_hydra_app_with_no_config_name_is_read_through_a_parser_and_a_key_filter(
        tmp_path: Path) -> None:
    script = write(tmp_path, {"main.py": """
import hydra
from omegaconf import OmegaConf
def parse_cfg(cfg):
    cfg.num_nodes = cfg.get("num_nodes", 1)
    return cfg
@hydra.main(version_base="1.2")
def main(cfg):
    cfg = parse_cfg(cfg)
    kwargs = OmegaConf.to_container(cfg)
    kwargs = {name: kwargs[name] for name in ("devices", "strategy") if name in kwargs}
    kwargs.update({"logger": None})
    trainer = Trainer(**kwargs)
""", "scripts/byol.yaml": "method: byol\ndevices: [0, 1]\nstrategy: ddp\n", "scripts/wandb.yaml": "project: x\n"})
    found = spread(script)
    assert found is not None and (found.value, found.file.name) == ({"method": "byol", "devices": [0, 1],
                                                                     "strategy": "ddp"}, "byol.yaml")
    (tmp_path / "scripts/byol.yaml").write_text("method: byol\n")
    assert spread(script) is None  # no project file sets a layout: nothing is read


def test_a_parser_that_returns_something_else_is_not_the_config(tmp_path: Path) -> None:
    script = write(tmp_path, {"main.py": """
import hydra
def build(cfg):
    return dict(devices="auto")
@hydra.main(version_base="1.2")
def main(cfg):
    kwargs = build(cfg)
    trainer = Trainer(**kwargs)
""", "conf.yaml": "devices: 1\n"})
    assert spread(script) is None


_EXPERIMENT = """
import hydra
from lightning import Trainer


class Experiment:
    def __init__(self, *, cfg):
        self._cfg = cfg
        self._exp_cfg = cfg.experiment

    def train(self):
        trainer = Trainer(**self._exp_cfg.trainer, devices=[0, 1])
        trainer.fit(None)


@hydra.main(version_base=None, config_path="../configs", config_name="base.yaml")
def main(cfg):
    exp = Experiment({made})
    exp.train()
"""


def test_a_section_held_in_an_attribute_is_read_from_the_config_the_class_was_made_with(tmp_path: Path) -> None:
    """FrameFlow's ``self._exp_cfg = cfg.experiment`` in ``__init__``, then ``Trainer(**self._exp_cfg.trainer)``,
    with ``Experiment(cfg=cfg)`` in the Hydra app: the section is the app's config's ``experiment.trainer``."""
    configs = {"configs/base.yaml": "experiment:\n  seed: 1\n  trainer:\n    strategy: ddp\n    max_epochs: 3\n"}
    for made in ("cfg=cfg", "cfg"):  # by keyword (to a keyword-only parameter), by position
        source = _EXPERIMENT.format(made=made).replace("*, cfg", "*, cfg" if "=" in made else "cfg")
        script = write(tmp_path, {"experiments/train.py": source, **configs})
        found = read(script, "self._exp_cfg.trainer")
        assert found is not None, made
        assert (found.value, found.where) == ({"strategy": "ddp", "max_epochs": 3}, "configs/base.yaml:3")


def test_an_attribute_given_two_values_is_not_followed(tmp_path: Path) -> None:
    source = _EXPERIMENT.format(made="cfg=cfg").replace(
        "        self._exp_cfg = cfg.experiment\n",
        "        self._exp_cfg = cfg.experiment\n"
        "        if cfg.debug:\n            self._exp_cfg = cfg.debug_experiment\n")
    script = write(tmp_path, {"experiments/train.py": source,
                              "configs/base.yaml": "experiment:\n  trainer:\n    strategy: ddp\n"})
    assert read(script, "self._exp_cfg.trainer") is None


def test_the_options_that_name_the_file_and_the_keys_read_are_said(tmp_path: Path) -> None:
    script = write(tmp_path, {"train.py": """
import argparse
from pathlib import Path
import yaml
from addict import Dict as Adict
def get_args():
    parser = argparse.ArgumentParser()
    arg = parser.add_argument
    arg("-c", "--config_path", type=Path, required=True)
    return parser.parse_args()
args = get_args()
with args.config_path.open() as f:
    config = Adict(yaml.load(f, Loader=yaml.SafeLoader))
build(config.trainer.num_nodes)
""", "configs/run.yaml": "trainer:\n  num_nodes: 1\n"})
    found = read(script, "config.trainer.num_nodes")
    assert found is not None
    assert (found.value, found.by_default, found.options, found.keys) == (1, False, ("-c", "--config_path"),
                                                                          ("trainer", "num_nodes"))
    literal = write(tmp_path / "literal", {"train.py": "import yaml\ncfg = yaml.safe_load(open('run.yaml'))\n"
                                                       "build(cfg['trainer']['num_nodes'])\n",
                                           "run.yaml": "trainer:\n  num_nodes: 1\n"})
    found = read(literal, "cfg['trainer']['num_nodes']")
    assert found is not None and (found.by_default, found.options) == (True, ())  # written in: no option names it


def test_a_section_handed_to_a_dataclass_field_is_read_through_self(tmp_path: Path) -> None:
    script = write(tmp_path, {"train.py": """
from dataclasses import dataclass
import yaml
@dataclass
class Experiment:
    trainer_cfg: dict
    seed: int = 0
    def __call__(self):
        build(**self.trainer_cfg)
def main():
    cfg = yaml.safe_load(open("conf/run.yaml"))
    trainer_cfg = cfg["trainer"]
    Experiment(trainer_cfg=trainer_cfg, seed=1)()
""", "conf/run.yaml": "trainer:\n  devices: auto\n"})
    module = Module(ast.parse(script.read_text()))
    expr = next(n for n in module.nodes if isinstance(n, ast.Attribute) and ast.unparse(n) == "self.trainer_cfg")
    found = config_value(module, script, expr, holding=frozenset({"devices"}))
    assert found is not None
    assert (found.value, found.keys, found.by_default) == ({"devices": "auto"}, ("trainer",), True)
    plain = script.read_text().replace("@dataclass\n", "")  # not a dataclass: the call's keyword is no field
    (tmp_path / "plain.py").write_text(plain)
    module = Module(ast.parse(plain))
    expr = next(n for n in module.nodes if isinstance(n, ast.Attribute) and ast.unparse(n) == "self.trainer_cfg")
    assert config_value(module, tmp_path / "plain.py", expr, holding=frozenset({"devices"})) is None
