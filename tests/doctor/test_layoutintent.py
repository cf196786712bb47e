"""A Lightning/Fabric script that asks for every GPU of the machine is meant to run on several GPUs: with its
``num_nodes`` left at 1, DDP023 reports the layout stuck at one node (``devices=torch.cuda.device_count()``,
``devices=-1``/``"auto"`` written in, ``accelerator="gpu"`` with the devices left to Lightning). Silent for a
one-GPU script and for one that says nothing about GPUs."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

_PL = "import torch\nimport pytorch_lightning as pl\n"


@pytest.mark.parametrize(("trainer", "found"), [
    ("pl.Trainer(devices=1 if not torch.cuda.is_available() else torch.cuda.device_count(), max_epochs=3)", True),
    ("pl.Trainer(gpus=-1, max_epochs=3)", True),
    ('pl.Trainer(devices="auto", accelerator="gpu")', True),
    ('pl.Trainer(accelerator="gpu" if torch.cuda.is_available() else "auto", max_steps=10)', True),
    # one GPU, or nothing said about GPUs: no sign of several
    ('pl.Trainer(devices=1, accelerator="gpu")', False),
    ("pl.Trainer(max_epochs=3)", False),
    ('pl.Trainer(accelerator="cpu")', False),
    # every GPU, with the node count following the launch
    ('pl.Trainer(devices=-1, num_nodes=int(__import__("os").environ["SLURM_NNODES"]))', False),
])
def test_every_gpu_of_the_machine_with_one_node_is_a_stuck_layout(trainer: str, found: bool) -> None:
    source = f"{_PL}trainer = {trainer}\ntrainer.fit(model)\n"
    got = [(f.line, f.confidence) for f in check_source(source, "train.py") if f.code == "DDP023"]
    assert got == ([(3, "certain")] if found else [])


_FLAGGED = """import argparse
import lightning.pytorch as pl


def main(args):
    trainer = pl.Trainer(accelerator=args.accelerator, devices=args.devices, max_epochs=3)
    trainer.fit(model)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--accelerator", default="auto")
    parser.add_argument("--devices", default={default})
    main(parser.parse_args())
"""


@pytest.mark.parametrize(("default", "found"), [('"auto"', True), ('"-1"', True), ('"1"', False), ('"0,1"', False)])
def test_a_devices_flag_that_defaults_to_every_gpu_is_a_sign_of_several(default: str, found: bool) -> None:
    # Pyro's Lightning example: `--devices` defaults to "auto", num_nodes left at 1 (an integer flag's layout is read
    # as the flags' own: tests/doctor/test_layoutflags.py)
    got = [f.line for f in check_source(_FLAGGED.format(default=default), "train.py") if f.code == "DDP023"]
    assert got == ([6] if found else [])


@pytest.mark.parametrize(("source", "found"), [
    ("import lightning as L\ntrainer = L.Trainer(max_epochs=3)\n", True),
    ("from lightning.pytorch import Trainer\ntrainer = Trainer(max_epochs=3)\n", True),
    ("import lightning as L\ntrainer = L.Trainer(max_epochs=3, accelerator='cpu')\n", False),
    ("import lightning as L\ntrainer = L.Trainer(max_epochs=3, devices=1)\n", False),
    # pytorch_lightning: 1.x's Trainer() trains on the CPU, and the version is not in sight
    ("import pytorch_lightning as pl\ntrainer = pl.Trainer(max_epochs=3)\n", False),
])
def test_lightning_2s_bare_trainer_takes_every_gpu_of_the_node(source: str, found: bool) -> None:
    got = [f.line for f in check_source(source + "trainer.fit(model)\n", "train.py") if f.code == "DDP023"]
    assert got == ([2] if found else [])


_FROM_ARGS = """from argparse import ArgumentParser
from pytorch_lightning import Trainer


def main(args):
    trainer = Trainer.from_argparse_args(args)
    trainer.fit(model)


if __name__ == "__main__":
    parser = ArgumentParser()
    parser.add_argument("--devices", default={default}, type=int)
    args = parser.parse_args()
    main(args)
"""


@pytest.mark.parametrize("default", ["-1", "1"])
def test_a_parser_of_every_gpu_and_no_node_flag_read_by_from_argparse_args(default: str) -> None:
    """LLaRA's ``Trainer.from_argparse_args(args)`` with ``--devices`` defaulting to every GPU and no ``--num_nodes``:
    the layout is stuck at one node whatever the user passes; so it is with ``--devices`` defaulting to one GPU, a
    flag the user passes for several (from_argparse_args hands it to the Trainer)."""
    source = _FROM_ARGS.format(default=default)
    got = [(f.line, f.confidence) for f in check_source(source, "train.py") if f.code == "DDP023"]
    assert got == [(6, "certain")]
