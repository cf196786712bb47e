"""DDP005 and a name reduced somewhere in the file: a reduction counts for a print that reads the name when it comes
before the print, in another function, or in the print's own innermost loop; one later in the same function, outside
that loop (Coconut's ``dist.all_reduce(loss)`` in the evaluation after the training loop that prints ``loss`` on every
rank), reduces another value of the name, not the one printed."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for step in range(10):
        loss = model(torch.ones(2)).sum()
        loss.backward()
        optimizer.step()
        {before}
        print("loss", loss.item())
        {inside}
    for step in range(2):
        loss = model(torch.zeros(2)).sum()
        {evaluation}
"""


def ddp005(before: str = "pass", inside: str = "pass", evaluation: str = "pass") -> list[int]:
    source = SCRIPT.format(before=before, inside=inside, evaluation=evaluation)
    return [f.line for f in check_source(source, "t.py") if f.code == "DDP005"]


def test_a_reduction_later_in_another_loop_leaves_the_print_unreduced() -> None:
    assert ddp005(evaluation="dist.all_reduce(loss)") == [13]


@pytest.mark.parametrize(("before", "inside"), [
    ("dist.all_reduce(loss)", "pass"),  # reduced before the print
    ("pass", "dist.all_reduce(loss)"),  # in the print's own loop: as the rule read it before
])
def test_a_reduction_before_the_print_or_in_its_loop_still_counts(before: str, inside: str) -> None:
    assert ddp005(before=before, inside=inside) == []
