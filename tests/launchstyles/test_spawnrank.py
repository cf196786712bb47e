"""A spawner for one node as a fact (orchestrator/launchstyles/spawnrank.py): the function a spawn starts hands its
spawn index, unchanged, to init_process_group or a DistributedSampler as the rank (itself, through a copy, or through
the functions of its file it passes the index to); not when the rank is built from the index or the index is given
another value."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.launchstyles import read

_SCRIPT = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(gpu, args):
{body}
    torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))


if __name__ == "__main__":
    mp.spawn(worker, nprocs=torch.cuda.device_count(), args=(None,))
"""


@pytest.mark.parametrize(("body", "line"), [
    ("    dist.init_process_group('nccl', rank=gpu, world_size=8)", 7),
    ("    rank = gpu\n    dist.init_process_group('nccl', rank=rank, world_size=8)", 8),
    # a copy made in one branch, another value in the other: the branch that inits takes the index
    ("    if args:\n        rank = gpu\n        dist.init_process_group('nccl', rank=rank, world_size=8)\n"
     "    else:\n        rank = 'cpu'", 9),
    ("    rank = args.nr * 8 + gpu\n    dist.init_process_group('nccl', rank=rank, world_size=16)", None),
    ("    gpu = args.node_rank * 8 + gpu\n    dist.init_process_group('nccl', rank=gpu, world_size=16)", None),
    ("    dist.init_process_group('nccl', rank=args.rank * 8 + gpu, world_size=16)", None),
    # the group takes the node's offset, the sampler the index: every node reads the first node's shards
    ("    dist.init_process_group('nccl', rank=args.nr * 8 + gpu, world_size=16)\n"
     "    sampler = torch.utils.data.DistributedSampler(data, num_replicas=16,\n        rank=gpu)", 9),
    ("    dist.init_process_group('nccl', rank=args.nr * 8 + gpu, world_size=16)\n"
     "    sampler = torch.utils.data.DistributedSampler(data, num_replicas=16, rank=args.nr * 8 + gpu)", None),
    # an attribute given the index: found at its assignment, past a reading of RANK only while it is unset
    ("    args.rank = gpu\n    if args.dist_url == 'env://' and args.rank == -1:\n"
     "        args.rank = int(os.environ['RANK'])\n    dist.init_process_group('nccl', rank=args.rank)", 7),
    ("    args.rank = gpu\n    if args.multinode:\n        args.rank = args.node_rank * 8 + gpu\n"
     "    dist.init_process_group('nccl', rank=args.rank)", None),
    ("    args.rank = gpu\n    init_distributed_mode(args)\n    dist.init_process_group('nccl', rank=args.rank)",
     None),
    ("    dist.init_process_group('nccl', rank=args.rank)", None),
])
def test_the_spawn_index_as_the_rank(tmp_path: Path, body: str, line: int | None) -> None:
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT.format(body=body), encoding="utf-8")
    facts = read(script)
    assert facts.spawns, "the spawn is a fact"
    assert [found_line for _, found_line, _ in facts.index_ranks] == ([line] if line else [])


@pytest.mark.parametrize(("rank", "found"), [("rank", True), ("args.node_rank * 8 + rank", False)])
def test_a_spawned_function_of_the_projects_own_module(tmp_path: Path, rank: str, found: bool) -> None:
    """``from utils.train import train``; ``mp.spawn(train, ...)``: the index is followed into the module it comes
    from, and the finding names that file."""
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "utils" / "train.py").write_text(
        "import torch.distributed as dist\n\n\n"
        "def train(rank, args):\n"
        f"    dist.init_process_group('nccl', init_method=args.url, world_size=args.world, rank={rank})\n",
        encoding="utf-8")
    script = tmp_path / "trainer.py"
    script.write_text("import torch\nimport torch.multiprocessing as mp\n\nfrom utils.train import train\n\n"
                      "if __name__ == '__main__':\n"
                      "    mp.spawn(train, nprocs=torch.cuda.device_count(), args=(None,))\n", encoding="utf-8")
    facts = read(script)
    assert facts.spawns
    assert [(Path(file).name, line) for file, line, _ in facts.index_ranks] == ([("train.py", 5)] if found else [])


_TRAINER = """import torch.distributed as dist


class Trainer:
    def __init__(self, rank, cfg):
        self.gpu = rank
{body}


def train_fn(rank, world):
    setup(world, rank=rank)


def setup(world, rank):
    dist.init_process_group('nccl', init_method='tcp://127.0.0.1:23456', world_size=world, rank=rank)
"""


@pytest.mark.parametrize(("body", "worker", "line"), [
    # the index handed by keyword to a class of another module, whose __init__ joins the group with it
    ("        dist.init_process_group('nccl', world_size=cfg.gpus, rank=rank)", "Trainer(rank=gpu, cfg=None)", 7),
    # to a function of another module, on to that module's own function by keyword
    ("        pass", "train_fn(gpu, 8)", 15),
    # the class adds the node's offset first: no fact
    ("        rank = cfg.node * cfg.gpus + rank\n        dist.init_process_group('nccl', world_size=16, rank=rank)",
     "Trainer(rank=gpu, cfg=None)", None),
    # another value handed on, not the index
    ("        pass", "train_fn(0, 8)", None),
])
def test_the_index_followed_into_the_projects_classes_and_functions(tmp_path: Path, body: str, worker: str,
                                                                     line: int | None) -> None:
    (tmp_path / "managers").mkdir()
    (tmp_path / "managers" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "managers" / "trainer.py").write_text(_TRAINER.format(body=body), encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text("import torch.multiprocessing as mp\n\nfrom managers.trainer import Trainer, train_fn\n\n\n"
                      f"def main_worker(gpu):\n    {worker}\n\n\n"
                      "if __name__ == '__main__':\n    mp.spawn(main_worker, nprocs=8)\n", encoding="utf-8")
    facts = read(script)
    assert facts.spawns
    assert [(Path(file).name, found) for file, found, _ in facts.index_ranks] == (
        [("trainer.py", line)] if line else [])


@pytest.mark.parametrize("exported", ["from .trainer import Trainer", "from .trainer import *", ""])
def test_the_index_followed_through_a_packages_reexport(tmp_path: Path, exported: str) -> None:
    """``from core import Trainer`` where ``core/__init__.py`` re-exports it (by name, or ``from .trainer import *``),
    and its ``__init__`` calls the package's ``prepare_device(rank, ...)`` from ``from .utils import *``: LibFewShot's
    chain, followed to the group's ``rank=``. Not found when the package does not export the class."""
    core = tmp_path / "core"
    (core / "utils").mkdir(parents=True)
    (core / "__init__.py").write_text(exported + "\n", encoding="utf-8")
    (core / "utils" / "__init__.py").write_text("from .helpers import *\n", encoding="utf-8")
    (core / "utils" / "helpers.py").write_text(
        "import torch.distributed as dist\n\n\ndef prepare_device(rank, n_gpu):\n"
        "    dist.init_process_group('nccl', init_method='tcp://127.0.0.1:1', world_size=n_gpu, rank=rank)\n",
        encoding="utf-8")
    (core / "trainer.py").write_text(
        "from core.utils import prepare_device\n\n\nclass Trainer:\n    def __init__(self, rank, config):\n"
        "        self.device = self._init_device(rank, config)\n\n"
        "    def _init_device(self, rank, config):\n        return prepare_device(rank, config['n_gpu'])\n",
        encoding="utf-8")
    script = tmp_path / "run_trainer.py"
    script.write_text("import torch\nfrom core import Trainer\n\n\ndef main(rank, config):\n"
                      "    Trainer(rank, config)\n\n\nif __name__ == '__main__':\n"
                      "    torch.multiprocessing.spawn(main, nprocs=2, args=({'n_gpu': 2},))\n", encoding="utf-8")
    found = [(Path(file).name, line) for file, line, _ in read(script).index_ranks]
    assert found == ([("helpers.py", 5)] if exported else [])


_PROCESSES = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, n_gpus, args):
    dist.init_process_group("gloo", init_method="env://", world_size=n_gpus, rank=rank)
    torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))


def main(args):
    n_gpus = torch.cuda.device_count()
    children = []
    for i in {counted}:
        child = mp.Process(target=run, args=(i, n_gpus, args))
        child.start()
        children.append(child)
"""


@pytest.mark.parametrize(("counted", "found"), [
    ("range(n_gpus)", [7]),                                  # RVC's: one process per GPU, the loop index as rank
    ("range(0, n_gpus)", [7]),
    ("range(args.node_rank * 8, args.node_rank * 8 + 8)", []),  # BNS-GCN's: the node's offset is in the range
])
def test_a_process_started_per_gpu_with_the_loop_index_as_the_rank(tmp_path: Path, counted: str,
                                                                   found: list[int]) -> None:
    script = tmp_path / "train.py"
    script.write_text(_PROCESSES.format(counted=counted), encoding="utf-8")
    facts = read(script)
    assert facts.spawns, "the processes are a spawn"
    assert [line for _, line, _ in facts.index_ranks] == found
