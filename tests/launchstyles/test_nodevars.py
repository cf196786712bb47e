"""torchrun's WORLD_SIZE and RANK read as a node's count and index (orchestrator/launchstyles/nodevars.py), and what
the doctor makes of it for a script started once per node (orchestrator/doctor/launchstyle.answered): WORLD_SIZE's
product an error across nodes and a certain warning on one (a per-node task's WORLD_SIZE is already the whole world:
one node of one GPU still works), RANK's a certain DDP016 that the gate makes an error across nodes (a per-node task
has no RANK); nothing under the per-rank styles."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor.feasibility import ACROSS_MARK, across_nodes
from orchestrator.doctor.launchstyle import answered
from orchestrator.launchstyles import choose, read

# TPVFormer's train.py (MIT), shortened: its comments say what it takes the variables for
_HOSTS = """import os
import torch
import torch.distributed as dist


def main(local_rank, args):
    hosts = int(os.environ.get("WORLD_SIZE", 1))  # number of nodes
    rank = int(os.environ.get("RANK", 0))  # node id
    gpus = torch.cuda.device_count()
    dist.init_process_group(
        backend="nccl", init_method="env://",
        world_size=hosts * gpus, rank=rank * gpus + local_rank
    )


if __name__ == "__main__":
    torch.multiprocessing.spawn(main, args=(None,), nprocs=torch.cuda.device_count())
"""

# PyTorch's ImageNet example under --dist-url env:// (BSD), its two readings in two functions
_IMAGENET = """import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def main(args):
    if args.dist_url == "env://" and args.world_size == -1:
        args.world_size = int(os.environ["WORLD_SIZE"])
    ngpus_per_node = torch.cuda.device_count()
    args.world_size = ngpus_per_node * args.world_size
    mp.spawn(main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node, args))


def main_worker(gpu, ngpus_per_node, args):
    if args.dist_url == "env://" and args.rank == -1:
        args.rank = int(os.environ["RANK"])
    args.rank = args.rank * ngpus_per_node + gpu
    dist.init_process_group(backend="nccl", init_method=args.dist_url, world_size=args.world_size, rank=args.rank)
"""


def _reads(tmp_path: Path, source: str) -> list[tuple[int, str]]:
    script = tmp_path / "train.py"
    script.write_text(source, encoding="utf-8")
    return [(hit.line, hit.variable) for hit in read(script).node_reads]


def test_world_size_and_rank_multiplied_into_the_group_are_facts(tmp_path: Path) -> None:
    assert _reads(tmp_path, _HOSTS) == [(12, "WORLD_SIZE"), (12, "RANK")]
    assert _reads(tmp_path, _IMAGENET) == [(11, "WORLD_SIZE"), (18, "RANK")]


@pytest.mark.parametrize("body", [
    # a global batch: WORLD_SIZE read as the process count it is
    "    world = int(os.environ['WORLD_SIZE'])\n    total_batch = args.batch_size * world\n",
    # the script writes RANK itself from its node flag, then reads its own value back
    "    os.environ['RANK'] = str(args.node_rank)\n    rank = int(os.environ['RANK'])\n"
    "    dist.init_process_group('nccl', rank=rank * 8 + local_rank, world_size=16)\n",
    # a read in one function, a product of the same name in another (another variable)
    "    hosts = 2\n    dist.init_process_group('nccl', world_size=hosts * 8)\n",
])
def test_other_products_are_not_facts(tmp_path: Path, body: str) -> None:
    source = ("import os\nimport torch.distributed as dist\n\n\ndef other():\n"
              "    hosts = int(os.environ['WORLD_SIZE'])\n\n\ndef main(local_rank, args):\n" + body)
    assert _reads(tmp_path, source) == []


@pytest.mark.parametrize("source", [_HOSTS, _IMAGENET])
def test_a_per_node_script_is_refused_across_nodes_and_warned_on_one(tmp_path: Path, source: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(source, encoding="utf-8")
    launch = choose("auto", script)
    assert launch.style == "per-node"
    one = answered(launch, [], 1, script)
    assert [(f.code, f.severity, f.confidence) for f in one] == [("DDP008", "warning", "certain"),
                                                                 ("DDP016", "warning", "certain")]
    assert "NNODES" in one[0].fix and "NODE_RANK" in one[1].fix
    two = across_nodes(answered(launch, [], 2, script), 2, 8)
    assert [(f.code, f.severity) for f in two] == [("DDP008", "error"), ("DDP016", "error")]
    assert ACROSS_MARK in two[1].marks


def test_the_per_rank_styles_leave_it_alone(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(_HOSTS, encoding="utf-8")
    assert answered(choose("env", script), [], 2, script) == []
