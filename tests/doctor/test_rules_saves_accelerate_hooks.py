"""DDP006 and Accelerate's saves: a function handed to ``accelerator.register_save_state_pre_hook`` runs inside
``save_state``, so its saves are guarded exactly as the script's ``save_state()`` calls are; ``save_state()`` under
``is_local_main_process`` writes the same folder from every node's first process."""

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


_STATE = """
import os
from accelerate import Accelerator

accelerator = Accelerator()
for step in range(100):
    if step % 10 == 0 and {guard}:
        accelerator.save_state(os.path.join("out", f"checkpoint-{{step}}"))
"""


@pytest.mark.parametrize(("guard", "found"), [
    ("accelerator.is_local_main_process", [("likely", 8)]),  # every node's first process writes the same folder
    ("accelerator.is_main_process", []),
    ("accelerator.is_local_main_process and accelerator.is_main_process", []),  # the global first process only
])
def test_save_state_on_every_nodes_first_process_is_one_writer_per_node(guard: str,
                                                                         found: list[tuple[str, int]]) -> None:
    findings = [f for f in check_source(_STATE.format(guard=guard), "t.py") if f.code == "DDP006"]
    assert [(f.confidence, f.line) for f in findings] == found
    assert all("one writer per node" in f.evidence for f in findings)


def test_save_state_of_another_object_is_a_guess_from_its_name() -> None:
    """``state.save_state()`` on an object not made by Accelerate is not read as a checkpoint writer."""
    source = _STATE.format(guard="accelerator.is_local_main_process").replace(
        "accelerator.save_state(", "Recorder().save_state(")
    assert [f for f in check_source(source, "t.py") if f.code == "DDP006"] == []
