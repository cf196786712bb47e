"""A launcher's world read only under ``--dist-url env://`` (orchestrator/launchstyles/envurl.py): an ImageNet-style
script whose ``--dist-url`` defaults to another URL never learns a launcher's world as it is started, so its
``--multiprocessing-distributed`` spawn is how it trains on several GPUs (``per-node``); with ``env://`` as the
default, or no ``--dist-url`` declared, it stays ImageNet's opt-in (``env``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from orchestrator.launchstyles import detect, read
from orchestrator.launchstyles.envurl import opt_in_env, ungated_reads, url_defaults
from orchestrator.launchstyles.nodevars import node_reads

_IMAGENET = """import argparse
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

parser = argparse.ArgumentParser()
{url}parser.add_argument("--world-size", default=-1, type=int)
parser.add_argument("--rank", default=-1, type=int)
parser.add_argument("--multiprocessing-distributed", action="store_true")


def main_worker(gpu, ngpus_per_node, args):
    if args.distributed:
        if args.dist_url == "env://" and args.rank == -1:
            args.rank = int(os.environ["RANK"])
        if args.multiprocessing_distributed:
            args.rank = args.rank * ngpus_per_node + gpu
        dist.init_process_group(backend="nccl", init_method=args.dist_url, world_size=args.world_size, rank=args.rank)
    torch.nn.Linear(2, 2)


def main():
    args = parser.parse_args()
    if args.dist_url == "env://" and args.world_size == -1:
        args.world_size = int(os.environ["WORLD_SIZE"])
    args.distributed = args.world_size > 1 or args.multiprocessing_distributed
    ngpus_per_node = torch.cuda.device_count()
    if args.multiprocessing_distributed:
        args.world_size = ngpus_per_node * args.world_size
        mp.spawn(main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node, args))
    else:
        main_worker(0, ngpus_per_node, args)


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(("url", "style"), [
    # SFA3D's and the ImageNet example's default: the WORLD_SIZE read needs --dist-url env:// passed
    ('parser.add_argument("--dist-url", default="tcp://127.0.0.1:29500", type=str)\n', "per-node"),
    ('parser.add_argument("--dist_url", dest="dist_url", default="tcp://224.66.41.62:23456")\n', "per-node"),
    # env:// by default: under a launcher the other branch reads the launcher's world as it is started
    ('parser.add_argument("--dist-url", default="env://", type=str)\n', "env"),
    # not declared here: its default is not known, so the read is taken as reachable
    ("", "env"),
])
def test_an_imagenet_style_spawn_is_per_node_when_env_url_is_only_a_flag_away(tmp_path: Path, url: str,
                                                                               style: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(_IMAGENET.format(url=url), encoding="utf-8")
    assert detect(read(script)).style == style


def test_url_defaults_are_keyed_by_the_attribute_argparse_stores() -> None:
    tree = ast.parse('p.add_argument("--dist-url", default="tcp://x:1")\n'
                     'p.add_argument("-u", "--init-url", dest="url", default="file:///tmp/f")\n'
                     'p.add_argument("--gpus", default=1)\n'
                     'p.add_argument("--backend", default=None)\n')
    assert url_defaults([tree]) == {"dist_url": "tcp://x:1", "url": "file:///tmp/f"}


@pytest.mark.parametrize(("test", "gated"), [
    ('args.dist_url == "env://" and args.world_size == -1', True),
    ('"env://" == args.dist_url', True),
    ('args.dist_url != "env://"', False),  # the other side: true by default
    ('args.init == "env://"', False),  # a flag this project does not declare
    ('args.env_url == "env://"', False),  # declared with env:// as its default
])
def test_opt_in_env_reads_only_an_equality_with_a_flag_of_another_default(test: str, gated: bool) -> None:
    defaults = {"dist_url": "tcp://127.0.0.1:29500", "env_url": "env://"}
    assert opt_in_env(ast.parse(test, mode="eval").body, defaults) is gated


def test_a_read_under_the_opt_in_test_is_gated_on_its_body_side_only() -> None:
    tree = ast.parse('if args.dist_url == "env://":\n'
                     '    n = os.environ["WORLD_SIZE"]\n'
                     'else:\n'
                     '    n = os.environ.get("SLURM_NTASKS")\n'
                     'r = os.environ["WORLD_SIZE"] if True else 0\n')
    reads = [(c.value, c.lineno) for c in ungated_reads(tree, frozenset({"WORLD_SIZE", "SLURM_NTASKS"}),
                                                           {"dist_url": "tcp://x:1"})]
    assert reads == [("SLURM_NTASKS", 4), ("WORLD_SIZE", 5)]


@pytest.mark.parametrize(("url", "reads"), [
    # the WORLD_SIZE and RANK reads run only under a passed --dist-url env://: started per node as it is, the
    # script multiplies its flags (the node count and index orch's per-node placeholders fill), not the variables
    ('parser.add_argument("--dist-url", default="tcp://127.0.0.1:29500", type=str)\n', []),
    # env:// by default: the per-node task's WORLD_SIZE taken for the node count (DDP008), RANK for its index (DDP016)
    ('parser.add_argument("--dist-url", default="env://", type=str)\n', [(31, "WORLD_SIZE"), (19, "RANK")]),
])
def test_a_node_read_only_a_passed_env_url_reaches_is_not_one(url: str, reads: list[tuple[int, str]]) -> None:
    tree = ast.parse(_IMAGENET.format(url=url))
    found = node_reads([("train.py", tree)])
    assert [(r.line, r.variable) for r in found] == reads
