"""Bind a script task's GPU before the script runs (imports torch; the choice is ``device.script_device``)."""

from __future__ import annotations

import logging

import torch

from orchestrator.env import devices

log = logging.getLogger(__name__)


def bind_script_device(*, rank: int, local_rank: int, local_world_size: int, gpus_per_task: int,
                       visible: str | None) -> devices.DeviceChoice:
    cuda = torch.cuda.is_available()
    choice = devices.script_device(cuda_available=cuda, device_count=torch.cuda.device_count() if cuda else 0,
                                   visible=visible, rank=rank, local_rank=local_rank,
                                   local_world_size=local_world_size, gpus_per_task=gpus_per_task)
    if choice.kind == "cuda":
        torch.cuda.set_device(choice.index)
    log.info("rank %d: %s", rank, choice.describe())
    return choice
