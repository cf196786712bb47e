"""DDP010 at a model's ``device_map={"": index}`` (``from_pretrained``, the PEFT/TRL fine-tuning idiom): the global
rank there (Accelerate's ``process_index``, ``RANK``) is a GPU index past the node's GPUs from the second node on, an
error across nodes; the local rank (``local_process_index``, ``LOCAL_RANK``) and ``"auto"`` are right."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source
from orchestrator.doctor.feasibility import across_nodes

_SCRIPT = """import os
from accelerate import Accelerator, PartialState
from transformers import AutoModelForCausalLM, Trainer

accelerator = Accelerator()
model = AutoModelForCausalLM.from_pretrained(
    "bigcode/starcoder",
    load_in_8bit=True,
    device_map={device_map},
)
Trainer(model=model).train()
"""


@pytest.mark.parametrize("device_map", [
    '{"": Accelerator().process_index}', '{"": PartialState().process_index}', '{"": accelerator.process_index}',
    '{"": int(os.environ["RANK"])}',
])
def test_the_global_rank_as_a_device_map_is_reported_at_its_line(tmp_path: Path, device_map: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT.format(device_map=device_map), encoding="utf-8")
    [found] = [f for f in check_file(script) if f.code == "DDP010"]
    assert (found.line, found.confidence) == (9, "likely")
    assert "device_map=" in found.message
    assert [f.severity for f in across_nodes([found], 2, 8)] == ["error"]
    assert [f.severity for f in across_nodes([found], 1, 8)] == ["warning"]


@pytest.mark.parametrize("device_map", [
    '{"": Accelerator().local_process_index}', '{"": int(os.environ.get("LOCAL_RANK", 0))}', '"auto"',
    '{"": accelerator.device}',
])
def test_the_local_rank_or_auto_is_not(device_map: str) -> None:
    assert [f for f in check_source(_SCRIPT.format(device_map=device_map), "train.py") if f.code == "DDP010"] == []
