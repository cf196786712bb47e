"""A script written in Python 3.12's syntax (PEP 701: an f-string's replacement field holding a string of the
f-string's own quote) runs on a cluster's 3.12 even where orch runs on an older Python: ``orch doctor`` reads it
and finds what is wrong in it, and ``orch submit`` neither calls it invalid nor refuses it for that (set 54's
gabgpt_multigpu was refused as "not valid Python")."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import cluster_file

from orchestrator.cli import main

SCRIPT = '''import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

CONFIG = {"lr": 0.1, "steps": 3}


def main():
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl")
    model = DDP(torch.nn.Linear(4, 2).to(f"cuda:{rank}"), device_ids=[rank])
    for step in range(CONFIG["steps"]):
        loss = model(torch.randn(8, 4, device=f"cuda:{rank}")).sum()
        loss.backward()
        print(f"step {step} lr {CONFIG["lr"]:.3f} of {CONFIG.get("steps", 0)}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train312.py"
    path.write_text(SCRIPT, encoding="utf-8")
    return path


def test_the_doctor_reads_it_and_names_the_line_of_its_pitfall(script: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", str(script)]) == 0  # warnings only: on one node a device from the global rank works
    out = capsys.readouterr()
    assert f"{script}:12: DDP010 warning" in out.out + out.err
    assert "syntax error" not in out.out + out.err


def test_submit_refuses_it_only_for_its_pitfall_across_nodes(script: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["submit", str(script), "--cluster", str(cluster_file(tmp_path)), "--gpus", "2", "--dry-run"]
    assert main([*argv, "--nodes", "1"]) == 0
    assert "not valid Python" not in capsys.readouterr().err
    assert main([*argv, "--nodes", "2"]) == 0
    err = capsys.readouterr().err
    assert "orch submit would refuse this script: orch doctor found errors (DDP010)" in err
    assert "not valid Python" not in err
