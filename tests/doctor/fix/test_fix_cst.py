"""The shared libcst helpers: where ``import os`` goes, and how a script names ``torch.distributed``."""

from __future__ import annotations

import libcst as cst
import pytest

from orchestrator.doctor.fix.cst import dist_name, with_import


@pytest.mark.parametrize(("before", "after"), [
    ("import argparse\nimport torch\n", "import argparse\nimport os\nimport torch\n"),
    ("import argparse\n\nimport torch\n", "import argparse\nimport os\n\nimport torch\n"),
    ('"""Doc."""\n\nimport torch\n', '"""Doc."""\n\nimport os\nimport torch\n'),
    ('"""Doc."""\nx = 1\n', '"""Doc."""\nimport os\nx = 1\n'),
    ("from __future__ import annotations\nimport sys\n", "from __future__ import annotations\nimport os\nimport sys\n"),
    ("import os.path\nx = 1\n", "import os.path\nx = 1\n"),
])
def test_import_os_goes_into_the_first_group_in_order(before: str, after: str) -> None:
    assert with_import(cst.parse_module(before), "os").code == after


@pytest.mark.parametrize(("imports", "name"), [
    ("import torch.distributed as dist\n", "dist"),
    ("from torch import distributed as tdist\n", "tdist"),
    ("from torch import distributed\n", "distributed"),
    ("import torch\n", "torch.distributed"),
    ("import numpy\n", None),
])
def test_the_name_of_torch_distributed(imports: str, name: str | None) -> None:
    assert dist_name(cst.parse_module(imports)) == name
