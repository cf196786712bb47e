"""The Lightning callback for real: 2 gloo ranks under ``orch run --cpu``, the preemption signal inside the first
epoch -> checkpoint -> exit 75 -> ``orch run --resume`` -> ``fit(ckpt_path="last")``: the final parameters equal an
uninterrupted run's, bit for bit (tests/scripts/lightning_preemptible.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from support import TESTS, preempt_and_resume

# find_spec, not importorskip: importing lightning at collection costs each test worker seconds; the runs import it
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("lightning") is None, reason="lightning is not installed")]


def test_preempted_fit_resumes_mid_epoch_to_the_uninterrupted_parameters(tmp_path: Path) -> None:
    plain, preempted = preempt_and_resume(TESTS / "scripts" / "lightning_preemptible.py", tmp_path)
    for rank in (0, 1):
        first, second = (json.loads((out / f"params{rank}.json").read_text()) for out in (plain, preempted))
        assert first["resumed_at"] == 0 and second["resumed_at"] == 4  # signal at step 3: all stop after step 4
        assert second["params"] == first["params"]
    assert not list((tmp_path / "jobs").glob("*/preempt/*.ckpt"))  # the completed fit removed it
