"""source/configvalues: the value a config chain (``h.dist_config["dist_url"]``, ``cfg.trainer.num_nodes``) reads
from the config file the script loads, followed through names, wrappers and parameters; nothing for a config the
script does not load."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from orchestrator.source.configvalues import ConfigValue, config_value
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
