"""DDP008 from a config file the script loads: ``init_process_group(init_method=h.dist_config["dist_url"])`` with a
``tcp://`` address in the JSON/YAML file (and a rank fixed there) is reported with the file and line; ``env://`` in
the config, or a config the script does not load, is not."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.doctor import Finding, check_file
from orchestrator.doctor.feasibility import across_nodes

_SCRIPT = """
import argparse, json
import torch.distributed as dist
import torch.multiprocessing as mp
from types import SimpleNamespace
def train(rank, h):
    dist.init_process_group("nccl", init_method=h.dist_config["dist_url"], rank=rank, world_size=h.world_size)
def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", default="{config}")
    a = p.parse_args()
    h = SimpleNamespace(**json.load(open(a.config)))
    mp.spawn(train, nprocs=2, args=(h,))
if __name__ == "__main__":
    main()
"""


def rendezvous(folder: Path, config: str, url: str) -> list[Finding]:
    (folder / "configs").mkdir(parents=True)
    (folder / "configs" / "base.json").write_text(json.dumps({"dist_config": {"dist_url": url}}, indent=2))
    (folder / "train.py").write_text(_SCRIPT.format(config=config))
    return [f for f in check_file(folder / "train.py") if f.code == "DDP008"]


def test_a_loopback_address_in_the_loaded_config_is_reported_with_its_file_and_line(tmp_path: Path) -> None:
    found = rendezvous(tmp_path, "configs/base.json", "tcp://localhost:54321")
    assert [(f.line, f.confidence) for f in found] == [(7, "likely")]
    assert "configs/base.json:3" in found[0].message and "tcp://localhost:54321" in found[0].message


def test_the_launchers_address_in_the_config_is_not_reported(tmp_path: Path) -> None:
    assert rendezvous(tmp_path, "configs/base.json", "env://") == []


def test_a_config_the_script_does_not_load_is_not_read(tmp_path: Path) -> None:
    assert rendezvous(tmp_path, "configs/other.json", "tcp://localhost:54321") == []


def test_a_loopback_from_the_config_is_an_error_across_nodes_only(tmp_path: Path) -> None:
    found = rendezvous(tmp_path, "configs/base.json", "tcp://127.0.0.1:54321")
    assert [f.severity for f in across_nodes(found, 1)] == ["warning"]
    refused = across_nodes(found, 2)
    assert [f.severity for f in refused] == ["error"] and "cannot work on 2 nodes" in refused[0].message
    remote = rendezvous(tmp_path / "remote", "configs/base.json", "tcp://10.1.2.3:54321")
    assert [f.severity for f in across_nodes(remote, 2)] == ["warning"]


def test_a_project_function_that_loads_the_config_is_followed(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "ddp.yaml").write_text("dist:\n  url: tcp://localhost:23456\n  rank: 0\n")
    (tmp_path / "config_io.py").write_text("import yaml\n\ndef read_settings(path):\n    with open(path) as f:\n"
                                           "        return yaml.safe_load(f)\n\ndef read_other(path):\n"
                                           "    return yaml.safe_load(open('configs/ddp.yaml'))\n")
    script = """
import argparse
import torch.distributed as dist
from config_io import {loader}
p = argparse.ArgumentParser()
p.add_argument("--config", default="configs/ddp.yaml")
cfg = {loader}(p.parse_args().config)
dist.init_process_group("nccl", init_method=cfg["dist"]["url"], world_size=cfg["dist"]["size"])
"""
    (tmp_path / "train.py").write_text(script.format(loader="read_settings"))
    found = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP008"]
    assert [(f.line, f.confidence) for f in found] == [(8, "likely")]
    assert "configs/ddp.yaml:2" in found[0].message
    (tmp_path / "train.py").write_text(script.format(loader="read_other"))  # its parameter is not what it loads
    assert [f for f in check_file(tmp_path / "train.py") if f.code == "DDP008"] == []


def test_a_rank_fixed_in_the_config_is_reported(tmp_path: Path) -> None:
    (tmp_path / "dist.yaml").write_text("world_size: 4\nrank: 0\n")
    (tmp_path / "train.py").write_text("import yaml\nimport torch.distributed as dist\n"
                                       "config = yaml.safe_load(open('dist.yaml'))\n"
                                       "dist.init_process_group('nccl', rank=config['rank'], "
                                       "world_size=int(__import__('os').environ['WORLD_SIZE']))\n")
    found = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP008"]
    assert [(f.line, f.confidence) for f in found] == [(4, "likely")]
    assert "rank from the config file" in found[0].message and "dist.yaml:2" in found[0].message
