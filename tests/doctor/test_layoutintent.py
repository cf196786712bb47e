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
