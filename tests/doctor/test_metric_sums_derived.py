"""DDP013 follows what an evaluation loop sums back through the loop's own assignments
(``metric_sums.derived``): a count computed from gathered values (``hits = preds == refs``) is the whole set's,
and one computed from the rank's own batch is still reported."""

from __future__ import annotations

import ast

from orchestrator.doctor import check_source
from orchestrator.doctor.metric_sums import derived

_ACCELERATE = """
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model, loader = accelerator.prepare(torch.nn.Linear(4, 2), torch.utils.data.DataLoader(range(8)))
model.eval()
correct, seen = 0, 0
for x, y in loader:
    with torch.no_grad():
        predictions = model(x).argmax(dim=-1)
    {gather}
    hits = predictions == y
    seen += hits.shape[0]
    correct += hits.long().sum()
accelerator.print(f"accuracy: {{correct.item() / seen:.2f}}")
"""


def ddp013(gather: str) -> list[str]:
    """The lines DDP013 reports, as their text."""
    source = _ACCELERATE.format(gather=gather)
    lines = source.splitlines()
    return [lines[f.line - 1].split("(")[0] for f in check_source(source, "t.py") if f.code == "DDP013"]


def test_a_count_computed_from_gathered_values_is_not_reported() -> None:
    assert ddp013("predictions, y = accelerator.gather_for_metrics((predictions, y))") == []


def test_a_count_of_the_ranks_own_batch_is_still_reported() -> None:
    assert ddp013("pass") == ["accelerator.print"]


def test_derived_follows_the_loops_assignments_and_the_root_of_a_dotted_name() -> None:
    source = "for b in loader:\n    hits = p == r\n    p = f(b)\n    n += hits.shape[0]\n"
    loop = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.For))
    assert derived(loop, {"hits.shape"}, {"torch"}) == {"hits.shape", "p", "r", "b"}
