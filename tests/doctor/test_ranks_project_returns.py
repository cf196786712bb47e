"""A project function's rank is what it returns, whatever its name says: ``def get_local_rank(): return
dist.get_rank()`` in another module of the project is the global rank (a sampler's ``rank=`` is right, a device
numbered by it is DDP010), and ``def get_rank(): return int(os.environ["LOCAL_RANK"])`` is the local rank (DDP016
when handed to ``init_process_group``)."""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator.doctor import check_file
from orchestrator.doctor.analysis import Analysis

HEAD = """\
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
"""

GLOBAL_HELPER = """\
import torch.distributed as dist


def get_local_rank():
    if not dist.is_initialized():
        return 0
    return dist.get_rank()
"""

LOCAL_HELPER = """\
import os


def get_rank():
    return int(os.environ["LOCAL_RANK"])
"""

SAMPLER_AND_DEVICE = HEAD + """\
from dist_utils import get_local_rank


def main():
    dist.init_process_group("nccl")
    data = torch.utils.data.TensorDataset(torch.randn(64, 2))
    sampler = DistributedSampler(data, rank=get_local_rank())
    loader = DataLoader(data, sampler=sampler)
    device = torch.device(f"cuda:{get_local_rank()}")
    torch.cuda.set_device(device)
    model = DDP(torch.nn.Linear(2, 2).to(device), device_ids=[device])
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for (x,) in loader:
            model(x.to(device)).sum().backward()


if __name__ == "__main__":
    main()
"""

INIT_WITH_RANK = HEAD + """\
from helpers.env import get_rank


def main():
    dist.init_process_group("nccl", rank=get_rank())
    print("joined")


if __name__ == "__main__":
    main()
"""


def _project(tmp_path: Path, script: str, helper_path: str, helper: str) -> Path:
    (tmp_path / helper_path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / helper_path).write_text(helper)
    (tmp_path / "train.py").write_text(script)
    return tmp_path / "train.py"


def _codes(path: Path) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_file(path) if f.confidence != "possible"]


def test_a_get_local_rank_returning_the_global_rank_is_the_global_rank(tmp_path: Path) -> None:
    script = _project(tmp_path, SAMPLER_AND_DEVICE, "dist_utils.py", GLOBAL_HELPER)
    codes = _codes(script)
    assert ("DDP016", 11) not in codes  # the sampler's rank is the global one: right
    assert ("DDP010", 13) in codes  # cuda:<global rank>: past the node's GPUs from the second node on


def test_the_same_helper_returning_local_rank_keeps_the_sampler_finding(tmp_path: Path) -> None:
    local = GLOBAL_HELPER.replace("return dist.get_rank()", "return int(os.environ['LOCAL_RANK'])")
    script = _project(tmp_path, SAMPLER_AND_DEVICE, "dist_utils.py", "import os\n" + local)
    codes = _codes(script)
    assert ("DDP016", 11) in codes
    assert [c for c in codes if c[0] == "DDP010"] == []


def test_a_get_rank_returning_local_rank_is_the_local_rank(tmp_path: Path) -> None:
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("")
    script = _project(tmp_path, INIT_WITH_RANK, "helpers/env.py", LOCAL_HELPER)
    assert ("DDP016", 9) in _codes(script)


def test_a_get_rank_whose_returns_disagree_is_read_by_its_name(tmp_path: Path) -> None:
    mixed = LOCAL_HELPER + "\n\ndef other():\n    pass\n"
    mixed = mixed.replace('    return int(os.environ["LOCAL_RANK"])',
                          '    if os.environ.get("X"):\n        return int(os.environ["LOCAL_RANK"])\n'
                          '    return int(os.environ["RANK"])')
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("")
    script = _project(tmp_path, INIT_WITH_RANK, "helpers/env.py", mixed)
    assert [c for c in _codes(script) if c[0] == "DDP016"] == []


def test_a_rank_within_a_group_is_no_global_rank(tmp_path: Path) -> None:
    """``dist.get_rank(group=LOCAL_GROUP)``: the rank within the node's group (detectron2's ``comm``), not the
    world's: a device numbered by it is no DDP010."""
    helper = GLOBAL_HELPER.replace("return dist.get_rank()", "return dist.get_rank(group=LOCAL_GROUP)")
    script = _project(tmp_path, SAMPLER_AND_DEVICE, "dist_utils.py", "LOCAL_GROUP = None\n" + helper)
    assert [c for c in _codes(script) if c[0] == "DDP010"] == []


UNPACKED_HELPER = """\
import os
import torch.distributed as dist


def init_ddp():
    local_rank = int(os.environ["LOCAL_RANK"])
    rank = int(os.environ["RANK"])
    dist.init_process_group("nccl")
    return local_rank, rank
"""

UNPACKED_SCRIPT = HEAD + """\
from dist_utils import init_ddp


def main():
    local_rank, rank = init_ddp()
    model = torch.nn.Linear(2, 2).to({device})
    model = DDP(model, device_ids=[{device}])
    data = torch.utils.data.TensorDataset(torch.randn(64, 2))
    sampler = DistributedSampler(data, rank={shard})
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for (x,) in DataLoader(data, sampler=sampler):
            model(x.to({device})).sum().backward()


if __name__ == "__main__":
    main()
"""


def test_a_rank_taken_apart_from_a_tuple_the_project_returns_is_what_it_returns_there(tmp_path: Path) -> None:
    """Surya's ``local_rank, rank = init_ddp(use_gpu)`` with ``return local_rank, rank``: ``model.to(rank)`` is the
    global rank (DDP010, refused across nodes); the local one is the node's GPU, and the global one shards right."""
    wrong = _project(tmp_path, UNPACKED_SCRIPT.format(device="rank", shard="rank"), "dist_utils.py", UNPACKED_HELPER)
    assert ("DDP010", 10) in _codes(wrong)
    right = _project(tmp_path, UNPACKED_SCRIPT.format(device="local_rank", shard="rank"), "dist_utils.py",
                     UNPACKED_HELPER)
    assert [c for c in _codes(right) if c[0] in ("DDP010", "DDP016")] == []
    analysis = Analysis(ast.parse(right.read_text()), str(right))
    kinds = {n.id: analysis.ranks.source(n) for n in ast.walk(analysis.module.tree)
             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in ("rank", "local_rank")}
    assert kinds == {"rank": "global", "local_rank": "local"}


FALLBACK_HELPER = """\
import os


def get_resources():
    if os.environ.get("RANK"):
        rank = int(os.environ["RANK"])
        local_rank = int(os.environ["LOCAL_RANK"])
    elif os.environ.get("SLURM_PROCID"):
        rank = int(os.environ["SLURM_PROCID"])
        local_rank = int(os.environ["SLURM_LOCALID"])
    else:
        rank = 0
        local_rank = rank
    return local_rank, rank
"""


def test_a_fallbacks_copy_of_its_own_constant_is_no_global_rank(tmp_path: Path) -> None:
    """cyc_firstpass's ``rank = 0`` then ``local_rank = rank`` in the ``else`` of the launchers' branches: there
    ``local_rank`` is 0, not the global rank the other branches give ``rank``; every branch gives it the local rank."""
    helper = FALLBACK_HELPER
    script = UNPACKED_SCRIPT.replace("init_ddp", "get_resources").replace("local_rank, rank = get_resources()",
                                                                          "local_rank, rank = get_resources()\n"
                                                                          "    dist.init_process_group('nccl')")
    right = _project(tmp_path, script.format(device="local_rank", shard="rank"), "dist_utils.py", helper)
    assert [c for c in _codes(right) if c[0] in ("DDP010", "DDP016")] == []
    wrong = _project(tmp_path, script.format(device="rank", shard="rank"), "dist_utils.py", helper)
    assert "DDP010" in [c[0] for c in _codes(wrong)]
