"""DDP023 for a Lightning 2 Trainer that asks for every GPU of the node without saying so in the call: a Hydra
section ``{_target_: lightning.Trainer, accelerator: auto}`` (devices left out or ``auto``: fs2_lightning, PVNet) or a
``Trainer(**kwargs)`` whose annotated ``kwargs: Dict[str, Any] = dict(...)`` names no devices (toto): DDP over the
node's GPUs with Lightning's one node. A one-process strategy (``single_device``), a Lightning 1 target
(``pytorch_lightning``: one device by default), or a section with ``devices: 1`` and no parallel strategy, is no sign
of a multi-GPU run."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import Finding, check_file
from orchestrator.doctor.feasibility import across_nodes

_HYDRA = """
import hydra
from omegaconf import DictConfig
@hydra.main(version_base="1.3", config_path="../config", config_name="config")
def main(cfg: DictConfig) -> None:
    trainer = hydra.utils.instantiate(cfg.train.trainer)
    trainer.fit(object())
if __name__ == "__main__":
    main()
"""


def _layout(folder: Path, files: dict[str, str]) -> list[Finding]:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return [f for f in check_file(folder / next(iter(files))) if f.code == "DDP023"]


@pytest.mark.parametrize(("section", "reported"), [
    ("_target_: lightning.Trainer\naccelerator: auto\n", True),
    ("_target_: lightning.pytorch.trainer.trainer.Trainer\naccelerator: auto\ndevices: auto\n", True),
    ("_target_: lightning.Trainer\n", True),
    ("_target_: lightning.Trainer\naccelerator: cpu\n", False),
    ("_target_: pytorch_lightning.Trainer\naccelerator: auto\n", False),  # Lightning 1: one device by default
    ("_target_: lightning.Trainer\nstrategy: single_device\n", False),  # one process by its strategy
])
def test_a_hydra_section_of_lightning_2_that_asks_for_every_gpu(tmp_path: Path, section: str, reported: bool) -> None:
    found = _layout(tmp_path, {"src/train.py": _HYDRA,
                               "config/config.yaml": "defaults:\n  - _self_\n  - train: default\nseed: 1\n",
                               "config/train/default.yaml": "trainer:\n" + "".join(
                                   f"  {line}\n" for line in section.splitlines())})
    assert [f.line for f in found] == ([6] if reported else [])
    if reported:  # the config the app loads with no argument: a run across nodes is refused with none passed
        assert [f.severity for f in across_nodes(found, 2, 8, [])] == ["error"]


_KWARGS = """
from typing import Any, Dict
from lightning.pytorch import Trainer
def fit(model, steps: int) -> None:
    trainer_kwargs: Dict[str, Any] = dict(max_steps=steps, log_every_n_steps=1{devices})
    trainer = Trainer(**trainer_kwargs)
    trainer.fit(model)
fit(object(), 10)
"""


@pytest.mark.parametrize(("devices", "reported"), [("", True), (", devices=1", False)])
def test_an_annotated_dict_of_trainer_arguments_that_names_no_devices(tmp_path: Path, devices: str,
                                                                      reported: bool) -> None:
    found = _layout(tmp_path, {"train.py": _KWARGS.format(devices=devices)})
    assert [(f.line, f.confidence) for f in found] == ([(6, "certain")] if reported else [])
