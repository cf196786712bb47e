"""DDP016, the node-local rank written into the environment as ``RANK`` (orchestrator/doctor/rank_env_writes.py):
PersFormer's ``args.proc_id = args.local_rank`` then ``os.environ['RANK'] = str(args.proc_id)`` before an ``env://``
group; silent where the value written is the global rank (its ``setup_slurm``: ``SLURM_PROCID`` assigned just
before), and in a script that spawns its workers."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

_SCRIPT = """import argparse
import os
import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=0)
args = parser.parse_args()


def setup_dist_launch(args):
    args.proc_id = {value}
    os.environ["RANK"] = {written}
    os.environ["LOCAL_RANK"] = str(args.local_rank)


def setup_slurm(args):
    args.proc_id = int(os.environ["SLURM_PROCID"])
    os.environ["RANK"] = str(args.proc_id)


setup_dist_launch(args)
torch.cuda.set_device(args.local_rank)
dist.init_process_group("nccl", init_method="env://")
"""


@pytest.mark.parametrize(("value", "written", "lines"), [
    ("args.local_rank", "str(args.proc_id)", [13]),
    ("args.local_rank", 'f"{args.proc_id}"', [13]),
    ('int(os.environ["LOCAL_RANK"])', "str(args.proc_id)", [13]),
    ('int(os.environ["RANK"])', "str(args.proc_id)", []),  # the global rank
    ("args.node_rank * 8 + args.local_rank", "str(args.proc_id)", []),  # a node's offset in it
])
def test_the_local_rank_written_as_rank(value: str, written: str, lines: list[int]) -> None:
    source = _SCRIPT.format(value=value, written=written)
    found = [f.line for f in check_source(source, "t.py") if f.code == "DDP016"]
    assert found == lines


@pytest.mark.parametrize("update", ["os.environ.update(RANK=str(args.proc_id))",
                                    'os.environ.update({"RANK": f"{args.proc_id}", "WORLD_SIZE": "16"})'])
def test_the_local_rank_written_through_environ_update(update: str) -> None:
    source = _SCRIPT.format(value="args.local_rank", written="os.environ['RANK']").replace(
        '    os.environ["RANK"] = os.environ[\'RANK\']\n', f"    {update}\n", 1)
    assert update in source
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP016"] == [13]


def test_a_spawning_script_is_left_to_the_spawn_index_rule() -> None:
    source = _SCRIPT.format(value="args.local_rank", written="str(args.proc_id)").replace(
        "setup_dist_launch(args)\n", "import torch.multiprocessing as mp\nmp.spawn(setup_dist_launch, nprocs=2)\n")
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP016"] == []
