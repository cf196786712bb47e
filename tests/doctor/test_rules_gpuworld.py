"""DDP008, a world sized by the count of a flag's GPU ids (``world_size=len(args.gpus)``, dyMEAN's): one node's
world, a warning there and refused across nodes; a count of something else, a world the launcher's WORLD_SIZE
gives, or a spawner's own processes are not this."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import Finding, check_file
from orchestrator.doctor.feasibility import across_nodes

SCRIPT = """
import argparse
import os
import torch
import torch.distributed as dist
p = argparse.ArgumentParser()
p.add_argument("--gpus", type=int, {nargs}required=True)
args = p.parse_args()
{before}
if len(args.gpus) > 1:
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    n = len(args.gpus)
    dist.init_process_group(backend="nccl", world_size={size})
"""


def _found(tmp_path: Path, nargs: str = 'nargs="+", ', size: str = "len(args.gpus)", before: str = "") -> list[Finding]:
    (tmp_path / "train.py").write_text(SCRIPT.format(nargs=nargs, size=size, before=before))
    return [f for f in check_file(tmp_path / "train.py") if f.code == "DDP008"]


@pytest.mark.parametrize("size", ["len(args.gpus)", "n", "int(n)"])
def test_a_world_of_the_gpu_ids_passed_is_one_nodes(tmp_path: Path, size: str) -> None:
    [found] = _found(tmp_path, size=size)
    assert (found.line, found.severity, found.confidence) == (14, "warning", "likely")
    assert "the count of the GPU ids --gpus lists" in found.message
    [across] = across_nodes([found], 2, 8, [])
    assert across.severity == "error" and "cannot work on 2 nodes" in across.message


@pytest.mark.parametrize(("nargs", "size", "before"), [
    ("", "len(args.gpus)", ""),  # one value, not a list of ids
    ('nargs="+", ', "len(args.gpus)", 'world = int(os.environ["WORLD_SIZE"])'),  # the launcher's world is read
    ('nargs="+", ', "len(args.gpus) * 2", ""),  # arithmetic: not just the ids
    ('nargs="+", ', "len(args.gpus)", "args.gpus = list(range(8))"),  # the script sets it
])
def test_other_worlds_are_not_this(tmp_path: Path, nargs: str, size: str, before: str) -> None:
    assert _found(tmp_path, nargs, size, before) == []


def test_a_spawners_world_is_left_to_its_own_rule(tmp_path: Path) -> None:
    script = SCRIPT.format(nargs='nargs="+", ', size="len(args.gpus)", before="") + (
        "import torch.multiprocessing as mp\nmp.spawn(print, nprocs=len(args.gpus))\n")
    (tmp_path / "train.py").write_text(script)
    assert [f for f in check_file(tmp_path / "train.py") if "GPU ids" in f.message] == []
