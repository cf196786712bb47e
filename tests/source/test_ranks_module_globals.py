"""A rank kept in another project module's global (Segmenter's ``segm/utils/torch.py``: ``dist_rank = 0``, set from
``SLURM_PROCID`` under ``global`` in ``set_gpu_mode()``): ``ptu.dist_rank == 0`` is a rank condition, so the save
under it is rank 0's alone. A name imported from that module (``from ... import dist_rank``) keeps the value it had
when imported, and a global only ever assigned constants holds no rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

HELPER = """\
import os

dist_rank = 0


def set_gpu_mode():
    global dist_rank
    dist_rank = {value}
"""

SCRIPT = """\
import torch
import torch.distributed as dist
import segm.utils.torch as ptu


def main():
    ptu.set_gpu_mode()
    dist.init_process_group("nccl")
    model = torch.nn.Linear(2, 2)
    if ptu.dist_rank == 0:
        torch.save(model.state_dict(), "ckpt.pth")


main()
"""


@pytest.mark.parametrize(("value", "every_rank"), [
    ('int(os.environ.get("SLURM_PROCID", 0))', False),  # the global rank: the save is rank 0's
    ("int(os.environ['RANK'])", False),
    ("1", True),  # constants only: true on every rank that keeps 0, so not a rank test
])
def test_a_rank_in_another_modules_global_guards_the_save(tmp_path: Path, value: str, every_rank: bool) -> None:
    (tmp_path / "segm" / "utils").mkdir(parents=True)
    for package in ("segm", "segm/utils"):
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "segm" / "utils" / "torch.py").write_text(HELPER.format(value=value))
    (tmp_path / "train.py").write_text(SCRIPT)
    saves = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP006" and "every rank" in f.message]
    assert bool(saves) is every_rank
