"""Whether a loader is the rank's own shard (doctor/shard_loaders.py), read on the loop that iterates it: a
DistributedSampler, a framework's sharding call, the file's builder, tuple unpacking, a parameter whose callers pass
it, and the project's loader builder in another module; a loader every rank reads whole is not a shard."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.shard_loaders import sharded

_HEAD = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
dist.init_process_group("nccl")
"""


def _iterated(folder: Path, body: str) -> bool:
    """Whether the loader the script's last for-loop iterates is read as a shard."""
    source = _HEAD + body
    (folder / "train.py").write_text(source)
    a = Analysis(ast.parse(source), str(folder / "train.py"))
    loop = [n for n in ast.walk(a.module.tree) if isinstance(n, ast.For)][-1]
    return sharded(a, loop.iter)


@pytest.mark.parametrize(("body", "shard"), [
    ("val = DataLoader(ds, sampler=DistributedSampler(ds))\nfor x in val:\n    pass\n", True),
    ("val = DataLoader(ds, batch_size=4)\nfor x in val:\n    pass\n", False),
    ("s = DistributedSampler(ds)\nval = DataLoader(ds, sampler=s)\nfor i, x in enumerate(val):\n    pass\n", True),
    ("def make(ds):\n    return DataLoader(ds, sampler=DistributedSampler(ds))\n"
     "val = make(ds)\nfor x in val:\n    pass\n", True),
    ("def make(ds):\n    return DataLoader(ds, sampler=DistributedSampler(ds)), DataLoader(ds)\n"
     "train, val = make(ds)\nfor x in val:\n    pass\n", False),
    ("def make(ds):\n    return DataLoader(ds), DataLoader(ds, sampler=DistributedSampler(ds))\n"
     "train, val = make(ds)\nfor x in val:\n    pass\n", True),
    ("def evaluate(loader):\n    for x in loader:\n        pass\n"
     "evaluate(DataLoader(ds, sampler=DistributedSampler(ds)))\n", True),
    ("def evaluate(loader):\n    for x in loader:\n        pass\nevaluate(DataLoader(ds))\n", False),
    ("import accelerate\naccelerator = accelerate.Accelerator()\n"
     "model, val = accelerator.prepare(model, DataLoader(ds))\nfor x in val:\n    pass\n", True),
    ("val = fabric.setup_dataloaders(DataLoader(ds))\nfor x in val:\n    pass\n", True),
    # loaders held in a dict or list and iterated (florence2's validation loaders by data set)
    ("def make(sets):\n    loaders = {}\n    for name, d in sets.items():\n"
     "        loaders[name] = DataLoader(d, sampler=DistributedSampler(d))\n    return DataLoader(ds), loaders\n"
     "def evaluate(loaders):\n    for name, loader in loaders.items():\n        for x in loader:\n            pass\n"
     "train, val = make(sets)\nevaluate(val)\n", True),
    ("def make(sets):\n    loaders = {}\n    for name, d in sets.items():\n"
     "        loaders[name] = DataLoader(d)\n    return loaders\n"
     "for name, loader in make(sets).items():\n    for x in loader:\n        pass\n", False),
    ("loaders = []\nloaders.append(DataLoader(ds, sampler=DistributedSampler(ds)))\n"
     "for loader in loaders:\n    for x in loader:\n        pass\n", True),
    ("val = DataLoader(ds, sampler=DistributedSampler(ds))\ntest = DataLoader(ds)\n"
     "for loader in [val, test]:\n    for x in loader:\n        pass\n", True),
    ("loaders = {'a': DataLoader(ds), 'b': DataLoader(ds)}\n"
     "for loader in loaders.values():\n    for x in loader:\n        pass\n", False),
    # a batch is not a loader: the loop over its items is not over a shard's loaders
    ("val = DataLoader(ds, sampler=DistributedSampler(ds))\nfor batch in val:\n    for item in batch:\n"
     "        pass\n", False),
])
def test_a_loader_is_read_as_the_ranks_shard(tmp_path: Path, body: str, shard: bool) -> None:
    assert _iterated(tmp_path, body) is shard


def test_the_projects_loader_builder_in_another_module(tmp_path: Path) -> None:
    (tmp_path / "data.py").write_text(
        "from torch.utils.data import DataLoader, DistributedSampler\n\n"
        "def get_loaders(ds):\n    return DataLoader(ds), DataLoader(ds, sampler=DistributedSampler(ds))\n")
    body = "from data import get_loaders\ntrain, val = get_loaders(ds)\nfor x in {name}:\n    pass\n"
    assert _iterated(tmp_path, body.format(name="val")) is True
    assert _iterated(tmp_path, body.format(name="train")) is False
