"""DDP004 across the project's files: a sampler built in a data module while a trainer class in another module calls
``set_epoch`` on a loader's sampler the reader cannot tie to it is only a possible finding (shown with ``--all``, the
call's place in its evidence); with no ``set_epoch`` anywhere it stays likely."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

DATA = """\
from torch.utils.data import DataLoader, DistributedSampler


def build_loaders(dataset):
    sampler = DistributedSampler(dataset, shuffle=True)
    return {"train": DataLoader(dataset, sampler=sampler, batch_size=4)}
"""

ENGINE = """\
class Solver:
    def __init__(self, model, loaders, optimizer):
        self.model, self.loaders, self.optimizer = model, loaders, optimizer

    def train(self, epochs):
        for epoch in range(epochs):
{set_epoch}
            for batch in self.loaders["train"]:
                self.model(batch).sum().backward()
                self.optimizer.step()
"""

TRAIN = """\
import os
import torch
import torch.distributed as dist
from data import build_loaders
from engine import Solver

dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
Solver(model, build_loaders(list(range(100))), torch.optim.SGD(model.parameters(), lr=0.1)).train(3)
"""


@pytest.mark.parametrize(("set_epoch", "confidence"), [
    ('            self.loaders["train"].sampler.set_epoch(epoch)', "possible"),
    ("            pass", "likely"),
])
def test_a_set_epoch_in_another_file_makes_the_finding_possible(tmp_path: Path, set_epoch: str,
                                                                 confidence: str) -> None:
    (tmp_path / "data.py").write_text(DATA)
    (tmp_path / "engine.py").write_text(ENGINE.format(set_epoch=set_epoch))
    (tmp_path / "train.py").write_text(TRAIN)
    found = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP004"]
    assert [(Path(f.file).name, f.line, f.confidence) for f in found] == [("data.py", 5, confidence)]
    assert ("engine.py:7" in found[0].evidence) == (confidence == "possible")


def test_a_set_epoch_in_a_package_the_project_imports_makes_the_finding_possible(tmp_path: Path) -> None:
    """The module that calls ``set_epoch`` is one the reader does not reach (``models/model.py``'s ``fit``, a base
    class of the ``models.transducer`` the helper imports, which is not there): a package the project imports holds
    it, so the finding is only possible; with no such call in the package, it stays likely."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    for call, confidence in [("sampler.set_epoch(epoch)", "possible"), ("pass", "likely")]:
        (tmp_path / "models" / "model.py").write_text(
            f"class Model:\n    def fit(self, loader, sampler, epochs):\n        for epoch in range(epochs):\n"
            f"            {call}\n")
        (tmp_path / "data.py").write_text(f"from models.transducer import Transducer\n{DATA}")
        (tmp_path / "train.py").write_text(TRAIN.replace("from engine import Solver\n", "").replace(
            "Solver(model, build_loaders(list(range(100))), torch.optim.SGD(model.parameters(), lr=0.1)).train(3)",
            "loaders = build_loaders(list(range(100)))"))
        found = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP004"]
        assert [(Path(f.file).name, f.line, f.confidence) for f in found] == [("data.py", 6, confidence)]
        assert ("model.py:4" in found[0].evidence) == (confidence == "possible")


def test_the_look_into_imported_packages_is_bounded(tmp_path: Path) -> None:
    """A package folder that also holds a data set (thousands of files) is listed up to a bound, not walked whole."""
    from orchestrator.doctor import rules_data

    data = tmp_path / "data"
    (data / "images").mkdir(parents=True)
    for i in range(rules_data._PACKAGE_ENTRIES + 10):
        (data / "images" / f"{i:05d}.png").touch()
    (data / "zz").mkdir()
    (data / "zz" / "loader.py").write_text("sampler.set_epoch(0)\n")  # listed after images/: never reached
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "fit.py").write_text("x = 1\n\nsampler.set_epoch(epoch)\n")
    assert rules_data._package_files([tmp_path / "models"]) == [(tmp_path / "models" / "fit.py").resolve()]
    assert rules_data._package_files([data, tmp_path / "models"]) == []  # the bound is met inside data/images
    assert list(rules_data._set_epoch_in_packages([tmp_path / "models"])) == [
        ((tmp_path / "models" / "fit.py").resolve(), 3)]
