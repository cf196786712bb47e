"""DDP008 (``doctor/launcherflags.py``, reported by ``rules_rendezvous``) on ``init_process_group(rank=args.rank)``
or ``world_size=args.world_size`` where the value is a flag with a fixed default that the script never sets and the
launcher's variable (``RANK``, ``WORLD_SIZE``) is read nowhere: a launcher passes no such flag, so every process is
rank 0, or the group waits for the default's number of processes (IFRNet's ``--world_size`` default 4). Silent where
the launcher's variable is read or the script computes the value."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import argparse
import os
import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--{flag}", default={default}, type=int)
args = parser.parse_args()
{extra}
dist.init_process_group(backend="nccl", {flag}=args.{flag})
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
"""


def _ddp008(flag: str, default: int = 4, extra: str = "") -> list[str]:
    source = SCRIPT.format(flag=flag, default=default, extra=extra)
    return [f.message for f in check_source(source, "train.py") if f.code == "DDP008"]


@pytest.mark.parametrize(("flag", "variable", "then"), [
    ("rank", "RANK", "every process is rank 0"),
    ("world_size", "WORLD_SIZE", "the group waits for that many processes"),
])
def test_a_flags_fixed_default_the_launcher_never_passes(flag: str, variable: str, then: str) -> None:
    [message] = _ddp008(flag)
    assert f"{flag} from the flag --{flag} with a fixed default, {variable} never read" in message and then in message
    assert _ddp008(flag, extra=f'seen = os.environ.get("{variable}")') == []  # the launcher's value is read
    assert _ddp008(flag, extra=f"args.{flag} = args.{flag} * torch.cuda.device_count()") == []  # computed


def test_a_spawning_scripts_world_size_flag_is_the_users_to_pass() -> None:
    """Started by hand (``mp.spawn`` of its workers, DDP014's), the script's --world_size is what the user passes."""
    source = SCRIPT.format(flag="world_size", default=1, extra="").replace(
        'dist.init_process_group(backend="nccl", world_size=args.world_size)',
        'def worker(i):\n    dist.init_process_group(backend="nccl", rank=i, world_size=args.world_size)\n\n\n'
        "torch.multiprocessing.spawn(worker, nprocs=2)")
    assert [f for f in check_source(source, "train.py") if f.code == "DDP008"] == []
