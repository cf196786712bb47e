"""DDP023 where the layout's value is set on both sides of an if/else: ``devices = args.num_gpu`` for GPUs, else
``devices = "auto"`` for the CPU (the cocktail-fork separator): the side the flag sets is the script's configurable
layout, so with ``num_nodes`` left out the layout is one node, certain. Without a flag on either side it stays as
before (no sign the script is meant for several GPUs)."""

from __future__ import annotations

import ast

import pytest

from orchestrator.doctor import check_source
from orchestrator.source.branches import twin_value

SCRIPT = """\
import argparse
from pytorch_lightning import Trainer

parser = argparse.ArgumentParser()
parser.add_argument("--num-gpu", type=int, default=1)
args = parser.parse_args()
if args.num_gpu > 0:
    devices = GPU_SIDE
    accelerator = "gpu"
else:
    devices = "auto"
    accelerator = "cpu"
trainer = Trainer(devices=devices, accelerator=accelerator)
trainer.fit(model)
"""


@pytest.mark.parametrize(("gpu_side", "found"), [("args.num_gpu", [(13, "certain")]), ('"auto"', [])])
def test_a_layout_a_flag_sets_on_one_side_of_an_if(gpu_side: str, found: list[tuple[int, str]]) -> None:
    findings = [f for f in check_source(SCRIPT.replace("GPU_SIDE", gpu_side), "t.py") if f.code == "DDP023"]
    assert [(f.line, f.confidence) for f in findings] == found
    assert all(f.nodes == 1 for f in findings)  # Lightning's one node: refused on two (feasibility.py)


def test_the_twin_of_a_value_is_the_other_sides_assignment_of_the_name() -> None:
    tree = ast.parse(SCRIPT.replace("GPU_SIDE", "args.num_gpu"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    branch = tree.body[5]
    assert isinstance(branch, ast.If)
    gpu, cpu = branch.body[0], branch.orelse[0]
    assert isinstance(gpu, ast.Assign) and isinstance(cpu, ast.Assign)
    assert twin_value(parents, cpu.value) is gpu.value and twin_value(parents, gpu.value) is cpu.value
    accelerator = branch.orelse[1]
    assert isinstance(accelerator, ast.Assign)
    assert ast.unparse(twin_value(parents, accelerator.value) or ast.Constant(None)) == "'gpu'"
