"""DDP018: a training step one rank skips before the gradient all-reduce. Beside the fixtures' ``if not
torch.isfinite(loss): continue``: the step's backward only on one side of the test, ``continue`` on the other (UniRec:
``if not loss_is_nan: accelerator.backward(loss) ... else: continue``), a project's check named for the loss's
finiteness held in a name (``loss_is_nan = self._check_nan(loss)``), and in a helper module the script runs (the
project's trainer), where it is a warning like every helper finding; silent where the ranks agree first."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_TRAINER = """
import torch
import torch.distributed as dist


class Trainer:
    def __init__(self, accelerator, model, optimizer):
        self.accelerator, self.model, self.optimizer = accelerator, model, optimizer

    def _check_nan(self, loss):
        return bool(torch.isnan(loss).any())

    def fit(self, loader):
        for batch in loader:
            loss = self.model(batch).sum()
            self.optimizer.zero_grad()
{agree}            loss_is_nan = self._check_nan(loss)
            if not loss_is_nan:
                self.accelerator.backward(loss)
                self.optimizer.step()
            else:
                continue
"""

_SCRIPT = """
import torch
from accelerate import Accelerator
from trainer import Trainer

accelerator = Accelerator()
model, optimizer, loader = accelerator.prepare(torch.nn.Linear(2, 2), None, [torch.ones(2)])
Trainer(accelerator, model, optimizer).fit(loader)
"""


@pytest.mark.parametrize(("agree", "found"), [
    ("", [("trainer.py", 18, "warning")]),
    ("            dist.all_reduce(loss)\n", []),  # a collective before the test: the ranks may agree on it
])
def test_a_backward_on_one_side_of_a_per_rank_test_in_the_projects_trainer(tmp_path: Path, agree: str,
                                                                           found: list[tuple[str, int, str]]) -> None:
    (tmp_path / "trainer.py").write_text(_TRAINER.format(agree=agree))
    (tmp_path / "train.py").write_text(_SCRIPT)
    got = [(Path(f.file).name, f.line, f.severity) for f in check_file(tmp_path / "train.py") if f.code == "DDP018"]
    assert got == found
    if found:
        assert "else continue" in next(f.message for f in check_file(tmp_path / "train.py") if f.code == "DDP018")
