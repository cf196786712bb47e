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


_OWN_REDUCE = """
import torch
import torch.distributed as dist


def reduce_gradients(model):
    for p in model.parameters():
        dist.all_reduce(p.grad)


def is_valid_number(x):
    return x == x and abs(x) < 1e4


dist.init_process_group("gloo")
model = torch.nn.Linear(2, 2)
for step in range(10):
    loss = model(torch.ones(2)).sum()
    if is_valid_number(loss.item()):
        loss.backward()
{after}
"""


@pytest.mark.parametrize(("after", "found"), [
    ("        reduce_gradients(model)", True),  # the project's own all-reduce, skipped on one rank
    ("        print(loss.item())", False),  # no collective in the skipped block, no DDP: nothing waits
])
def test_a_step_that_skips_the_projects_own_all_reduce(tmp_path: Path, after: str, found: bool) -> None:
    """PySOT: ``if is_valid_number(loss.data.item()): loss.backward(); reduce_gradients(model)`` under its own
    ``DistModule`` (no DDP): a rank whose loss is not a valid number skips the all_reduce the others enter."""
    text = _OWN_REDUCE.format(after=after)
    (tmp_path / "train.py").write_text(text)
    lines = [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP018"]
    at = text.splitlines().index("    if is_valid_number(loss.item()):") + 1
    assert lines == ([at] if found else [])
