"""DDP008 at ``os.environ["MASTER_PORT"] = args.port`` where ``--port`` (or a short ``-p``) has a constant default: the
launcher's port is replaced by that default whenever the flag is not passed, and two jobs on one node meet on one
port (the per-node spawners of Cap3D, UniSRec, ExpansionNet). Silent under a test that the launcher's variable is
missing, for a flag with no default, and for a value the file assigns itself."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import argparse
import os
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, args):
    dist.init_process_group("nccl")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument({flag}, type=str{default})
    args = parser.parse_args()
    {guard}os.environ["MASTER_PORT"] = {value}
    mp.spawn(worker, nprocs=2, args=(args,))
"""


def ddp008(flag: str = '"--port"', default: str = ", default='12356'", value: str = "args.port",
           guard: str = "") -> list[int]:
    source = SCRIPT.format(flag=flag, default=default, value=value, guard=guard)
    return [f.line for f in check_source(source, "train.py") if f.code == "DDP008"]


@pytest.mark.parametrize(("flag", "default", "value"), [
    ('"--port"', ", default='12356'", "args.port"),
    ('"-p"', ", default='12355'", "args.p"),  # a short flag (UniSRec)
    ('"--ddp_sync_port"', ", default=12354", "str(args.ddp_sync_port)"),
    ('"--port"', ", default='12356', dest='master_port'", "args.master_port"),
])
def test_a_port_from_a_flag_with_a_constant_default_overwrites_the_launchers(flag: str, default: str,
                                                                             value: str) -> None:
    assert ddp008(flag, default, value) == [15]


@pytest.mark.parametrize(("default", "guard"), [
    ("", ""),  # no default: the user passes it
    (", default='12356'", 'if "MASTER_PORT" not in os.environ:\n        '),  # a fallback for a run with no launcher
])
def test_no_default_or_a_fallback_is_not_reported(default: str, guard: str) -> None:
    assert ddp008(default=default, guard=guard) == []
