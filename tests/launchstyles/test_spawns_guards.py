"""Which spawns a launcher check keeps from running (orchestrator/launchstyles/spawns.py): a test that reads the
launcher's variables only on one side of an ``or`` keeps nothing out, and a spawn's bare target is the module's own
function even when a class of the file has a method of that name."""

from __future__ import annotations

from pathlib import Path

from orchestrator.launchstyles import detect, read


def _style(tmp_path: Path, name: str, text: str) -> tuple[str, list[str]]:
    """The style read for ``text`` written as ``name``, and the file and line that decided it."""
    script = tmp_path / name
    script.write_text(text, encoding="utf-8")
    launch = detect(read(script))
    return launch.style, launch.why.split(":")[:2]

# litehandnet's boot(): ImageNet's world-size reading, but the spawn's test is ``world_size > 1 or`` a config switch
CONFIG_SWITCH = """\
import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

CFG = {{"distributed": True}}


def main(gpu, args):
    dist.init_process_group("nccl", init_method=args.dist_url, world_size=args.world_size, rank=gpu)


def boot():
    parser = argparse.ArgumentParser()
    parser.add_argument("--world-size", default=1, type=int)
    parser.add_argument("--dist-url", default="tcp://127.0.0.1:65432")
    args = parser.parse_args()
    if args.dist_url == "env://" and args.world_size == -1:
        args.world_size = int(os.environ["WORLD_SIZE"])
    args.distributed = {test}
    if args.distributed:
        mp.spawn(main, nprocs=torch.cuda.device_count(), args=(args,))
    else:
        main(0, args)


boot()
"""


def test_a_launcher_read_or_a_config_switch_keeps_no_spawn_out(tmp_path: Path) -> None:
    text = CONFIG_SWITCH.format(test='args.world_size > 1 or CFG["distributed"]')
    assert _style(tmp_path, "dist_train.py", text) == ("per-node", ["dist_train.py", "24"])


def test_a_test_that_reads_the_launcher_on_every_side_of_an_or_keeps_the_spawn_out(tmp_path: Path) -> None:
    script = tmp_path / "dist_train.py"
    script.write_text(CONFIG_SWITCH.format(test='"WORLD_SIZE" in os.environ or "LOCAL_RANK" in os.environ'),
                      encoding="utf-8")
    assert read(script).spawns == ()
    assert detect(read(script)).style == "env"


# PVD's train_generation.py: ``mp.spawn(train, ...)`` with ``class Model: def train(self)`` earlier in the file
METHOD_NAMESAKE = """\
import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


class Model(nn.Module):
    def train(self):
        self.model.train()


def train(gpu, opt):
    if opt.distribution_type == "multi":
        dist.init_process_group("nccl", init_method=opt.dist_url, world_size=opt.world_size, rank=gpu)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--distribution_type", default="single", choices=["multi", "single", None])
    opt = parser.parse_args()
    if opt.distribution_type == "multi":
        mp.spawn(train, nprocs=torch.cuda.device_count(), args=(opt,))
    else:
        train(0, opt)


main()
"""


def test_a_spawn_starts_the_modules_function_not_a_method_of_its_name(tmp_path: Path) -> None:
    assert _style(tmp_path, "train_generation.py", METHOD_NAMESAKE) == ("per-node", ["train_generation.py", "24"])


# Seg_model's train_ddp.py: the spawned worker builds the file's Trainer, whose __init__ starts the process group
CONSTRUCTED = """\
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class Trainer:
    def __init__(self, cfg):
        dist.init_process_group("nccl", init_method=cfg["url"], world_size=cfg["world"], rank=cfg["rank"])


def main_worker(local_rank, cfg):
    cfg["rank"] = local_rank
    Trainer(cfg)


if __name__ == "__main__":
    mp.spawn(main_worker, nprocs=torch.cuda.device_count(), args=({"url": "tcp://127.0.0.1:23456", "world": 2},))
"""


def test_a_worker_that_builds_a_class_whose_init_sets_up_the_group_is_spawned_training(tmp_path: Path) -> None:
    assert _style(tmp_path, "train_ddp.py", CONSTRUCTED) == ("per-node", ["train_ddp.py", "17"])
