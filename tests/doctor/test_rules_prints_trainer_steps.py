"""DDP005 in a transformers Trainer subclass's step (``training_step``, ``compute_loss`` and the class's methods they
call): the Trainer runs them every step on every rank, so a print of the rank's own loss there is one line per rank
per step, as in a training loop. Silent under the Trainer's own rank test and outside a Trainer subclass."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_TRAINER = """
from transformers import Trainer


class ConsistencyTrainer({base}):
    def training_step(self, model, inputs):
        return self.consistency_step(model, inputs)

    def consistency_step(self, model, inputs):
        loss = model(**inputs).loss
        {say}
        self.accelerator.backward(loss)
        return loss.detach()
"""

_SCRIPT = """
from transformers import TrainingArguments
from cllm_trainer import ConsistencyTrainer

args = TrainingArguments(output_dir="out")
ConsistencyTrainer(model=None, args=args).train()
"""


@pytest.mark.parametrize(("base", "say", "found"), [
    ("Trainer", "print(f'loss {loss} computed!')", [11]),  # the consistency-LLM trainer's, every rank, every step
    ("Trainer", "if self.is_world_process_zero():\\n            print(f'loss {loss}')", []),
    ("object", "print(f'loss {loss} computed!')", []),  # no Trainer: nothing runs it each step on every rank
])
def test_a_print_of_the_loss_in_a_trainer_step(tmp_path: Path, base: str, say: str, found: list[int]) -> None:
    (tmp_path / "cllm_trainer.py").write_text(_TRAINER.format(base=base, say=say.replace("\\n", "\n")))
    (tmp_path / "train.py").write_text(_SCRIPT)
    findings = check_file(tmp_path / "train.py")
    assert [f.line for f in findings if f.code == "DDP005" and f.file.endswith("cllm_trainer.py")] == found
