"""DDP008 for a ``MASTER_PORT`` computed from a value each node has of its own (IDRIS's ``idr_torch.py``: ``12345 +
min(SLURM_STEP_GPUS)``): the launcher's port is overwritten and nodes given other GPUs look for the rendezvous on
other ports. Also where that code is the top level of a project module the script only imports (its writes run on
import, on every rank); a function of such a module that nothing calls is not judged."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source

IDR = """\
import os

rank = int(os.environ["SLURM_PROCID"])
gpu_ids = os.environ[{key!r}].split(",")
os.environ["MASTER_PORT"] = str(12345 + int(min(gpu_ids)))


def unused_setup():
    os.environ["MASTER_ADDR"] = "10.0.0.1"
"""


@pytest.mark.parametrize(("key", "found"), [("SLURM_STEP_GPUS", [5]), ("CUDA_VISIBLE_DEVICES", [5]),
                                            ("SLURM_JOB_ID", [])])
def test_a_port_from_a_nodes_own_value_is_ddp008(key: str, found: list[int]) -> None:
    source = IDR.format(key=key) + 'import torch.distributed as dist\ndist.init_process_group("nccl")\n'
    per_node = [f for f in check_source(source, "t.py") if f.code == "DDP008" and "each node's own" in f.message]
    assert [f.line for f in per_node] == found


def test_a_module_the_script_only_imports_is_judged_at_its_top_level(tmp_path: Path) -> None:
    (tmp_path / "idr_torch.py").write_text(IDR.format(key="SLURM_STEP_GPUS"))
    script = tmp_path / "train.py"
    script.write_text("import idr_torch\nimport torch.distributed as dist\n\n"
                      "dist.init_process_group('nccl', rank=idr_torch.rank)\n")
    found = [(Path(f.file).name, f.line) for f in check_file(script) if f.code == "DDP008"]
    assert found == [("idr_torch.py", 5)]  # its top level's port, not the function nothing calls
