"""DDP008 at the ``init_process_group`` of a spawned worker whose world is one node's process count (the GPU count,
or the value the spawn starts that many processes by), with no node count in it: a warning on one node, an error
across nodes (``feasibility.across_nodes``). Silent for a world with a node count, one read from the environment,
``env://`` with no ``world_size=``. Where the rank is the spawn index itself DDP016 names the rank and DDP008 the
world: two lines to fix."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source
from orchestrator.doctor.feasibility import ACROSS_MARK, across_nodes
from orchestrator.doctor.rules_spawnworld import ONE_NODE_WORLD

SCRIPT = """\
import argparse
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def setup(rank, world_size):
    dist.init_process_group("nccl", init_method="env://", world_size=world_size, rank=rank)


def worker(gpu, ngpus, cfg, args):
    rank = args.node_rank * ngpus + gpu
    {init}
    torch.cuda.set_device(gpu)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--node_rank", type=int, default=0)
    args = parser.parse_args()
    ngpus = {ngpus}
    cfg = {{"world_size": {world}, "gpus": torch.cuda.device_count()}}
    mp.spawn(worker, nprocs=ngpus, args=(ngpus, cfg, args))


if __name__ == "__main__":
    main()
"""


def findings(init: str, ngpus: str = "torch.cuda.device_count()", world: str = "args.gpus") -> list:
    source = SCRIPT.format(init=init, ngpus=ngpus, world=world)
    return [f for f in check_source(source, "train.py") if f.code == "DDP008"]


@pytest.mark.parametrize(("init", "ngpus", "world"), [
    ('dist.init_process_group("nccl", world_size=ngpus, rank=rank)', "torch.cuda.device_count()", "1"),
    ('dist.init_process_group("nccl", world_size=ngpus, rank=rank)', "args.gpus", "1"),  # nprocs' own value
    ('dist.init_process_group("nccl", world_size=int(ngpus), rank=rank)', "min(args.gpus, 8)", "1"),
    ('dist.init_process_group("nccl", world_size=cfg["world_size"], rank=rank)', "args.gpus", "args.gpus"),
    ("setup(rank, ngpus)", "torch.cuda.device_count()", "1"),  # through the file's helper
])
def test_a_world_of_one_nodes_processes_is_ddp008(init: str, ngpus: str, world: str) -> None:
    found = [f for f in findings(init, ngpus, world) if ONE_NODE_WORLD in f.marks]
    assert [f.confidence for f in found] == ["likely"]
    assert found[0].severity == "warning"  # one node: it trains
    assert "NODE_RANK" in found[0].fix and "WORLD_SIZE" in found[0].fix


@pytest.mark.parametrize(("init", "world"), [
    ('dist.init_process_group("nccl", world_size=ngpus * args.nodes, rank=rank)', "1"),  # a node count
    ('dist.init_process_group("nccl", world_size=int(os.environ["WORLD_SIZE"]), rank=rank)', "1"),
    ('dist.init_process_group("nccl", init_method="env://", rank=rank)', "1"),  # WORLD_SIZE from the environment
    ('dist.init_process_group("nccl", world_size=cfg["world_size"], rank=rank)', "args.gpus * args.nodes"),
    ('dist.init_process_group("nccl", world_size=cfg["world_size"], rank=rank)', "16"),  # not the count spawned
])
def test_a_world_with_a_node_count_or_the_launchers_is_not(init: str, world: str) -> None:
    assert [f for f in findings(init, "torch.cuda.device_count()", world) if ONE_NODE_WORLD in f.marks] == []


def test_the_spawn_index_as_the_rank_is_ddp016_and_its_one_node_world_ddp008() -> None:
    source = SCRIPT.format(init='dist.init_process_group("nccl", world_size=ngpus, rank=gpu)',
                           ngpus="torch.cuda.device_count()", world="1")
    found = [f for f in check_source(source, "train.py") if f.code in ("DDP008", "DDP016")]
    assert sorted(f.code for f in found) == ["DDP008", "DDP016"]
    world = next(f for f in found if f.code == "DDP008")
    assert ONE_NODE_WORLD in world.marks and "form a world of their own" in world.message


CONFIG_KEY = """\
import json
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def get_world_size():
    return torch.cuda.device_count()


def worker(index, config):
    dist.init_process_group("nccl", init_method=config["init_method"], world_size=config["world_size"],
                            rank=config["global_rank"])


if __name__ == "__main__":
    config = json.load(open("config.json"))
    config["world_size"] = get_world_size()
    mp.spawn(worker, nprocs=config["world_size"], args=(config,))
"""


def test_a_world_set_into_a_config_key_is_reported_where_it_is_set() -> None:
    """STTN's: ``config["world_size"] = get_world_size()`` (one node's GPUs) spawns that many workers that join a
    world of ``config["world_size"]``: reported at the key's assignment, where the fix belongs."""
    found = [f for f in check_source(CONFIG_KEY, "train.py") if f.code == "DDP008" and ONE_NODE_WORLD in f.marks]
    assert [(f.line, f.confidence) for f in found] == [(18, "likely")]
    assert "get_world_size()" in found[0].message


OVERWRITTEN = """\
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(gpu, ngpus, args):
    args.rank = args.node_rank * ngpus + gpu
    dist.init_process_group("nccl", init_method=args.dist_url, world_size=args.world_size, rank=args.rank)


def main(args):
    ngpus = torch.cuda.device_count()
    if args.dist_url == "env://" and args.world_size == -1:
        args.world_size = int(os.environ["WORLD_SIZE"])
    {last}
    mp.spawn(worker, nprocs=ngpus, args=(ngpus, args))
"""


@pytest.mark.parametrize(("last", "found"), [
    ("args.world_size = ngpus", [(16, "likely")]),
    ("args.world_size = ngpus * args.nodes", []),
    ("pass", []),  # the environment's world where it is read, the flag's elsewhere: not one node's
])
def test_a_world_overwritten_just_before_the_spawn_is_what_the_workers_get(last: str, found: list) -> None:
    """doppelgangers' ``args.world_size = ngpus_per_node`` right before ``mp.spawn``, after a branch that read
    ``WORLD_SIZE``: the overwrite is what every worker joins with, reported where it is made."""
    source = OVERWRITTEN.format(last=last)
    got = [f for f in check_source(source, "train.py") if f.code == "DDP008" and ONE_NODE_WORLD in f.marks]
    assert [(f.line, f.confidence) for f in got] == found


def test_across_nodes_it_is_the_error_that_refuses_the_run() -> None:
    found = findings('dist.init_process_group("nccl", world_size=ngpus, rank=rank)')
    one, two = across_nodes(found, 1), across_nodes(found, 2, 8)
    assert [f.severity for f in one] == ["warning"]
    assert [f.severity for f in two] == ["error"]
    assert ACROSS_MARK in two[0].marks and "past a world of one node's processes" in two[0].message
    assert two[0].fix.endswith("or run on one node (--nodes 1)")


WRITTEN_IN = """\
import argparse
import os
import torch.distributed as dist
import torch.multiprocessing as mp


def main_worker(gpu, args):
    args.gpu = gpu
    args.rank = {offset} + args.gpu
    dist.init_process_group(backend="nccl", init_method="env://", world_size=args.world_size, rank=args.rank)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nr", type=int, default=0)
    args = parser.parse_args()
    args.gpus = 8
    args.nodes = {nodes}
    {node_index}
    args.world_size = args.gpus * args.nodes
    mp.spawn(main_worker, nprocs=args.gpus, args=(args,))
"""


def written_in(offset: str = "args.nr_fixed * args.gpus", nodes: str = "1",
               node_index: str = "args.nr_fixed = 0") -> list:
    source = WRITTEN_IN.format(offset=offset, nodes=nodes, node_index=node_index)
    return [f for f in check_source(source, "train.py") if f.code in ("DDP008", "DDP016")]


def test_a_node_count_of_one_written_in_makes_the_world_one_nodes() -> None:
    found = [f for f in written_in() if ONE_NODE_WORLD in f.marks]
    assert [(f.line, f.confidence) for f in found] == [(20, "likely")]  # where the world is set before the spawn


@pytest.mark.parametrize("nodes", ["2", "args.nodes_flag", "int(os.environ['NNODES'])"])
def test_a_node_count_other_than_one_written_in_is_no_world_of_one_node(nodes: str) -> None:
    assert [f for f in written_in(nodes=nodes) if ONE_NODE_WORLD in f.marks] == []


def test_a_node_offset_written_in_is_ddp016_and_refuses_a_run_across_nodes() -> None:
    found = [f for f in written_in() if f.code == "DDP016"]
    assert [(f.line, f.confidence, f.severity) for f in found] == [(9, "likely", "warning")]
    assert "written in (0, 8)" in found[0].message and "NODE_RANK" in found[0].fix
    two = across_nodes(found, 2, 8)
    assert [f.severity for f in two] == ["error"] and ACROSS_MARK in two[0].marks


@pytest.mark.parametrize(("offset", "node_index"), [
    ("args.nr * args.gpus", "pass"),  # a flag: the user passes -nr {node_rank} (the gate's placeholder warning)
    ("int(os.environ['NODE_RANK']) * args.gpus", "pass"),  # the environment's: differs per node
    ("args.nr_fixed * args.gpus", "args.nr_fixed = int(os.environ['SLURM_NODEID'])"),
    ("args.nr_fixed * torch_count", "args.nr_fixed = 0"),  # a value not written in (an unknown name)
])
def test_a_node_offset_the_user_or_the_environment_gives_is_not(offset: str, node_index: str) -> None:
    assert [f for f in written_in(offset=offset, node_index=node_index) if f.code == "DDP016"] == []
