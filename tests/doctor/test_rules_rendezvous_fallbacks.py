"""DDP008 and defaults for runs with no launcher: values written under a test that a launcher variable is missing
(``if "MASTER_ADDR" not in os.environ:`` that also sets MASTER_PORT, ``os.environ.get("RANK") is None``, ``not
os.environ.get(...)``) never overwrite a launcher's; the same writes under another test, or with an ``or`` that a
launched run can take, still do."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source
from orchestrator.doctor.feasibility import across_nodes
from orchestrator.doctor.launchstyle import answered
from orchestrator.launchstyles.style import choose

SCRIPT = """\
import os
import torch
import torch.distributed as dist


def main():
    if {test}:
        os.environ["MASTER_ADDR"] = "localhost"
        os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())


if __name__ == "__main__":
    main()
"""

FALLBACKS = ['"MASTER_ADDR" not in os.environ', 'os.environ.get("WORLD_SIZE") is None', 'not os.environ.get("RANK")',
             '"RANK" not in os.environ and torch.cuda.is_available()']
OVERWRITES = ["torch.cuda.device_count() > 1", '"RANK" not in os.environ or torch.cuda.device_count() > 1']


def ddp008(test: str) -> list[int]:
    return [f.line for f in check_source(SCRIPT.format(test=test), "train.py") if f.code == "DDP008"]


@pytest.mark.parametrize("test", FALLBACKS)
def test_defaults_written_where_a_launcher_variable_is_missing_are_not_reported(test: str) -> None:
    assert ddp008(test) == []


@pytest.mark.parametrize("test", OVERWRITES)
def test_writes_a_launched_run_reaches_are_reported(test: str) -> None:
    assert ddp008(test) == [8, 9]


OFF_PATH = """\
import os
import argparse
import torch
import torch.distributed as dist
from mpi4py import MPI


def mpi_define_env(args):
    comm = MPI.COMM_WORLD
    os.environ["RANK"] = str(comm.Get_rank())
    os.environ["MASTER_PORT"] = "29500"


def init(args):
    {call}
    try:
        dist.init_process_group("nccl")
    except Exception:
        os.environ["RANK"] = "0"
        os.environ["WORLD_SIZE"] = "1"
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
"""


@pytest.mark.parametrize("call", ["if args.use_mpi:\n        mpi_define_env(args)",
                                  "if hasattr(args, 'use_mpi') and args.use_mpi:\n        mpi_define_env(args)"])
def test_writes_off_the_launchers_path_are_not_reported(call: str) -> None:
    """Another launcher's set-up called only under an opt-in flag (GLM's ``--deepspeed_mpi``), and the fallback after
    a failed rendezvous (EfficientViT's: DDP019 reports that one)."""
    findings = check_source(OFF_PATH.format(call=call), "train.py")
    assert [f.line for f in findings if f.code == "DDP008"] == []
    assert [f.code for f in findings if f.code == "DDP019"] == ["DDP019"]


def test_another_launchers_set_up_called_on_every_run_is_reported() -> None:
    findings = check_source(OFF_PATH.format(call="mpi_define_env(args)"), "train.py")
    assert [f.line for f in findings if f.code == "DDP008"] == [10, 11]


NOT_LAUNCHED = """\
import os
import torch
import torch.distributed as dist


def init_dist(args):
    args.distributed = False
    if "WORLD_SIZE" in os.environ:
        args.distributed = int(os.environ["WORLD_SIZE"]) > 1
    if {flag}:
        args.distributed = True
    if not args.distributed:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["WORLD_SIZE"] = "1"
        os.environ["RANK"] = "0"
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
"""


def test_writes_where_no_launcher_started_the_run_are_not_reported() -> None:
    """``args.distributed = int(os.environ["WORLD_SIZE"]) > 1`` then ``if not args.distributed:`` writing a group of
    one (the image-classification template's ``init_dist``): a launched run with more than one rank never goes there.
    A flag the same test reads from the device count goes there under a launcher too (reported)."""
    assert [f.line for f in check_source(NOT_LAUNCHED.format(flag="args.slurm"), "t.py") if f.code == "DDP008"] == []
    counted = NOT_LAUNCHED.replace('int(os.environ["WORLD_SIZE"]) > 1', "torch.cuda.device_count() > 1")
    assert [f.line for f in check_source(counted.format(flag="args.slurm"), "t.py") if f.code == "DDP008"] == [
        13, 14, 15]


URL_FLAG = """\
import argparse
import os
import torch.distributed as dist


def setup_distributed(backend, dist_url):
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        dist.init_process_group(backend, init_method="env://")
    else:
        dist.init_process_group(backend, init_method=dist_url, rank=0, world_size=1)


parser = argparse.ArgumentParser()
parser.add_argument("--dist-url", type=str, default="tcp://127.0.0.1:29500")
args = parser.parse_args()
setup_distributed("gloo", {handed})
"""


@pytest.mark.parametrize(("handed", "lines"), [("args.dist_url", []), ("dist_url=args.dist_url", []),
                                               ("args.dist_url if args.dist_url else None", [14])])
def test_a_url_flag_read_only_on_the_no_launcher_side_is_not_reported(handed: str, lines: list[int]) -> None:
    """lenet5's ``--dist-url`` default: handed to a parameter read only in the ``else`` of a launcher test."""
    found = check_source(URL_FLAG.format(handed=handed), "train.py")
    assert [f.line for f in found if f.code == "DDP008"] == lines


_OWN_SPAWN_FALLBACK = """\
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def setup(rank, world_size, port=12355):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("nccl", rank=rank, world_size=world_size)


def main(rank, world_size):
    if {test}:
        rank = int(os.environ["SLURM_PROCID"])
    else:
        setup(rank, world_size)
    torch.cuda.set_device(rank % torch.cuda.device_count())


if __name__ == "__main__":
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("nccl")
        main(-1, int(os.environ["WORLD_SIZE"]))
    else:
        mp.spawn(main, args=(2,), nprocs=2)
"""


@pytest.mark.parametrize(("test", "refused"), [
    ('"SLURM_PROCID" in os.environ', False),  # laura_gpt_se: setup() only on the script's own mp.spawn path
    ('os.environ.get("CLUSTER") == "slurm"', True),  # either side may run launched: the loopback is met there
])
def test_a_loopback_written_only_on_the_scripts_own_launch_is_reported_not_refused(
        tmp_path: Path, test: str, refused: bool) -> None:
    """The write stays a DDP008 warning (a user of the spawn path must change it); across nodes, in the style of the
    launcher that starts the script (Slurm's here), only a loopback address a launched run meets is refused."""
    script = tmp_path / "train.py"
    script.write_text(_OWN_SPAWN_FALLBACK.format(test=test), encoding="utf-8")
    findings = check_file(script)
    assert 8 in {f.line for f in findings if f.code == "DDP008"}
    launch = choose("auto", script)
    assert launch.style != "per-node"
    two_nodes = across_nodes(answered(launch, findings, 2, script), 2, 8)
    assert any(f.severity == "error" and f.code == "DDP008" for f in two_nodes) is refused
