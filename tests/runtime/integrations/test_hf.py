"""The HF ``TrainerCallback`` for real: 2 gloo ranks under ``orch run --cpu``, the preemption signal inside the first
epoch -> ``checkpoint-<step>`` -> exit 75 -> ``orch run --resume`` -> ``train(resume_from_checkpoint=...)``: the final
parameters equal an uninterrupted run's, bit for bit (tests/scripts/hf_preemptible.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from support import TESTS, preempt_and_resume

# find_spec, not importorskip: importing transformers at collection costs each test worker seconds; the runs import it
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                 reason="transformers is not installed")]


def test_preempted_train_resumes_from_its_checkpoint_to_the_uninterrupted_parameters(tmp_path: Path) -> None:
    plain, preempted = preempt_and_resume(TESTS / "scripts" / "hf_preemptible.py", tmp_path)
    for rank in (0, 1):
        first, second = (json.loads((out / f"params{rank}.json").read_text()) for out in (plain, preempted))
        assert first["world"] == second["world"] == 2
        assert first["resumed_from"] is None
        assert second["resumed_from"] == str(preempted / "hf" / "checkpoint-4")  # signal at step 3: stop after 4
        assert second["params"] == first["params"]


def test_last_checkpoint_is_none_without_a_folder_and_the_newest_step_with_one(tmp_path: Path) -> None:
    from orchestrator.runtime.integrations.hf import last_checkpoint

    assert last_checkpoint(tmp_path / "missing") is None
    assert last_checkpoint(tmp_path) is None
    for step in (2, 10, 9):
        (tmp_path / f"checkpoint-{step}").mkdir()
    assert last_checkpoint(tmp_path) == str(tmp_path / "checkpoint-10")
