"""DDP008 and defaults for runs with no launcher: values written under a test that a launcher variable is missing
(``if "MASTER_ADDR" not in os.environ:`` that also sets MASTER_PORT, ``os.environ.get("RANK") is None``, ``not
os.environ.get(...)``) never overwrite a launcher's; the same writes under another test, or with an ``or`` that a
launched run can take, still do."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import os
import torch
import torch.distributed as dist


def main():
    if {test}:
        os.environ["MASTER_ADDR"] = "localhost"
        os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())


if __name__ == "__main__":
    main()
"""

FALLBACKS = ['"MASTER_ADDR" not in os.environ', 'os.environ.get("WORLD_SIZE") is None', 'not os.environ.get("RANK")',
             '"RANK" not in os.environ and torch.cuda.is_available()']
OVERWRITES = ["torch.cuda.device_count() > 1", '"RANK" not in os.environ or torch.cuda.device_count() > 1']


def ddp008(test: str) -> list[int]:
    return [f.line for f in check_source(SCRIPT.format(test=test), "train.py") if f.code == "DDP008"]


@pytest.mark.parametrize("test", FALLBACKS)
def test_defaults_written_where_a_launcher_variable_is_missing_are_not_reported(test: str) -> None:
    assert ddp008(test) == []


@pytest.mark.parametrize("test", OVERWRITES)
def test_writes_a_launched_run_reaches_are_reported(test: str) -> None:
    assert ddp008(test) == [8, 9]
