"""DDP006 and Accelerate's save hooks: a function handed to ``accelerator.register_save_state_pre_hook`` runs inside
``save_state``, so its saves are guarded exactly as the script's ``save_state()`` calls are."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

_SCRIPT = """
import os
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(2, 2)


def save_model_hook(models, weights, output_dir):
    models[0].save_pretrained(os.path.join(output_dir, "unet"))
    weights.pop()


accelerator.register_save_state_pre_hook(save_model_hook)
model = accelerator.prepare(model)
for epoch in range(3):
    if {guard}:
        accelerator.save_state()
"""


@pytest.mark.parametrize(("guard", "found"), [
    ("accelerator.is_main_process", []),
    ("epoch % 2 == 0", [11]),  # every rank saves the state: the hook writes the same files on every rank
])
def test_a_save_hook_is_guarded_as_its_save_state_is(guard: str, found: list[int]) -> None:
    findings = check_source(_SCRIPT.format(guard=guard), "t.py")
    assert [f.line for f in findings if f.code == "DDP006"] == found
