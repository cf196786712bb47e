"""DDP001 in a script that starts its own ranks (``mp.spawn``, orch's per-node style): no launcher binds those
processes' GPU, orch's included, so a device only named (``torch.device(f"cuda:{rank}")``, ``.to(device)``,
``device_ids=[rank]``), or named only in the project's trainer while the spawned worker joins NCCL, leaves every
rank's current device, and NCCL's communicator, on GPU 0 (orchestrator/doctor/rules_devices.py ``_explicit_only``).
Under a launcher the same code is harmless under orch, and the finding says so."""

from __future__ import annotations

from pathlib import Path

from orchestrator.doctor.check import check_file, check_source
from orchestrator.source.project import MAX_BYTES
from orchestrator.source.syspath import mentioned_in_repository

_SPAWNER = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world):
    dist.init_process_group({backend!r}, init_method="tcp://127.0.0.1:23456", rank=rank, world_size=world)
{body}


if __name__ == "__main__":
    mp.spawn(worker, nprocs=torch.cuda.device_count(), args=(torch.cuda.device_count(),))
"""

_NAMED = """    device = torch.device("cuda:{:d}".format(rank))
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).to(device), device_ids=[rank])"""


def _ddp001(findings: list) -> list:  # type: ignore[type-arg]
    return [f for f in findings if f.code == "DDP001"]


def test_a_device_only_named_in_ranks_the_script_spawns_is_reported() -> None:
    found = _ddp001(check_source(_SPAWNER.format(backend="nccl", body=_NAMED), "train.py"))
    assert [f.line for f in found] == [9]  # the first use of the named device: .to(device)
    assert "no launcher binds their GPU" in found[0].message and "harmless" not in found[0].message
    assert found[0].severity == "warning"


def test_a_spawned_rank_that_binds_its_device_is_silent() -> None:
    body = "    torch.cuda.set_device(rank)\n" + _NAMED
    assert _ddp001(check_source(_SPAWNER.format(backend="nccl", body=body), "train.py")) == []


def test_a_gloo_group_opens_no_nccl_communicator_so_is_silent() -> None:
    assert _ddp001(check_source(_SPAWNER.format(backend="gloo", body=_NAMED), "train.py")) == []


def test_the_same_named_device_under_a_launcher_says_it_is_harmless_under_orch() -> None:
    source = """import os
import torch
import torch.distributed as dist

rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).to(rank), device_ids=[rank])
"""
    found = _ddp001(check_source(source, "train.py"))
    assert [f.line for f in found] == [7]
    assert "harmless under orch" in found[0].message
    assert found[0].confidence == "possible"  # only a plain torchrun shows it: `orch doctor --all` lists it


def test_a_device_used_before_a_later_set_device_is_possible_under_a_launcher_and_likely_when_spawned() -> None:
    """A launched script's ``.cuda()`` before its own ``set_device(local_rank)``: orch's launcher bound that GPU
    already (judged no pitfall under orch in the held-out sets); in ranks the script spawns nothing bound it."""
    launched = """import os
import torch
import torch.distributed as dist

model = torch.nn.Linear(2, 2).cuda()
rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(rank)
dist.init_process_group("nccl")
"""
    [found] = _ddp001(check_source(launched, "train.py"))
    assert (found.line, found.confidence) == (5, "possible") and "harmless under orch" in found.evidence
    body = "    model = torch.nn.Linear(2, 2).cuda()\n    torch.cuda.set_device(rank)"
    [spawned] = _ddp001(check_source(_SPAWNER.format(backend="nccl", body=body), "train.py"))
    assert spawned.confidence == "likely" and "harmless" not in spawned.evidence


def test_a_spawned_worker_joining_nccl_whose_trainer_names_the_device_is_reported_at_the_init(tmp_path: Path) -> None:
    """stylegan2-pytorch's layout: the spawned ``run_training`` joins NCCL and hands the rank to a ``Trainer`` class
    in the project's module, which does ``self.cuda(rank)`` and ``DDP(..., device_ids=[rank])``; nothing binds it."""
    (tmp_path / "trainer.py").write_text("""import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, rank):
        self.model = DDP(torch.nn.Linear(2, 2).cuda(rank), device_ids=[rank])
""")
    script = tmp_path / "cli.py"
    script.write_text(_SPAWNER.format(backend="nccl", body="    from trainer import Trainer\n    Trainer(rank)"))
    found = _ddp001(check_file(script))
    assert [f.line for f in found] == [7]  # init_process_group("nccl", ...)
    assert "joins NCCL" in found[0].message
    (tmp_path / "trainer.py").write_text((tmp_path / "trainer.py").read_text().replace(
        "        self.model", "        torch.cuda.set_device(rank)\n        self.model"))
    assert _ddp001(check_file(script)) == []


_SPAWNED_CURRENT = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world):
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:23456", rank=rank, world_size=world)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda(), device_ids=[rank])


if __name__ == "__main__":
    mp.spawn(worker, nprocs=torch.cuda.device_count(), args=(torch.cuda.device_count(),))
"""


def _repository(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"LICENSE": "MIT\n", "utils/misc.py": "import os\n", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "train.py"


def test_spawned_ranks_on_the_current_device_are_likely_where_no_module_of_the_repository_binds_one(
        tmp_path: Path) -> None:
    """GeNVS's and the cloud-phase predictor's spawned workers use ``.cuda()`` and no module of their repository calls
    ``set_device``: every rank on GPU 0 (likely); where some module does (LiteASR's, VidSitu's, in a helper the reader's
    calls did not reach), it stays possible; so does a script a launcher starts."""
    script = _repository(tmp_path / "bare", {"train.py": _SPAWNED_CURRENT})
    assert mentioned_in_repository(script.resolve(), b"set_device", MAX_BYTES) is False
    [found] = _ddp001(check_file(script))
    assert found.confidence == "likely" and "no module of its repository calls set_device" in found.evidence
    binder = "import torch\n\n\ndef bind(i):\n    torch.cuda.set_device(i)\n"
    bound = _repository(tmp_path / "bound", {"train.py": _SPAWNED_CURRENT, "utils/dist.py": binder})
    assert mentioned_in_repository(bound.resolve(), b"set_device", MAX_BYTES) is True
    assert [f.confidence for f in _ddp001(check_file(bound))] == ["possible"]
    launched = _repository(tmp_path / "launched", {"train.py": _SPAWNED_CURRENT.replace(
        "    mp.spawn(worker, nprocs=torch.cuda.device_count(), args=", "    worker(0, 1)  # ")})
    assert [f.confidence for f in _ddp001(check_file(launched))] == ["possible"]  # a launcher binds launched ranks
    assert mentioned_in_repository(Path("/train.py"), b"set_device", MAX_BYTES) is None  # no repository: not searched
