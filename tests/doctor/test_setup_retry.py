"""A setup that retries: a function that starts the process group and destroys it when a peer failed, to try again on
another port, leaves a group up, so the collectives after its call are no use after a teardown (DDP007); its caught
init failure goes on to the next try, not to training alone (DDP019). A cleanup that only destroys, with a collective
after it, and an init failure caught and let go, are still reported."""

from __future__ import annotations

from orchestrator.doctor import check_source

SCRIPT = """\
import os
import torch
import torch.distributed as dist


def setup(start_port=29500, attempts=3):
    for i in range(attempts):
        os.environ["MASTER_PORT"] = str(start_port + i)
        try:
            dist.init_process_group("gloo")
        except RuntimeError:
            continue
        ok = torch.tensor([1])
        dist.all_reduce(ok, op=dist.ReduceOp.MIN)
        if ok.item() == 1:
            return
        dist.destroy_process_group()
    raise RuntimeError("no port worked")


def cleanup():
    dist.destroy_process_group()


def main():
    {first}
    loss = torch.ones(1)
    dist.all_reduce(loss)
    dist.barrier()


if __name__ == "__main__":
    main()
"""


def ddp007(first: str) -> list[tuple[int, str]]:
    return [(f.line, f.severity) for f in check_source(SCRIPT.format(first=first), "train.py") if f.code == "DDP007"]


def test_a_setup_that_destroys_to_retry_is_no_teardown() -> None:
    assert ddp007("setup()") == []


def test_a_cleanup_before_collectives_is_still_reported() -> None:
    assert ddp007("setup()\n    cleanup()") == [(27, "error")]


RETRY = """\
import os
import time
import torch.distributed as dist


def setup(start_port=29500):
    for i in range(3):
        os.environ["MASTER_PORT"] = str(start_port + i)
        try:
            dist.init_process_group("gloo")
        except RuntimeError as e:
            print(f"failed: {{e}}; trying again")
            {after}
        {check}
    raise RuntimeError("no port worked")
"""


def ddp019(after: str, check: str) -> int:
    source = RETRY.format(after=after, check=check)
    return sum(f.code == "DDP019" for f in check_source(source, "train.py"))


def test_an_init_failure_tried_again_is_not_let_go() -> None:
    assert ddp019("continue", "") == 0
    assert ddp019("time.sleep(1)", "if dist.is_initialized():\n            return") == 0


def test_an_init_failure_caught_and_let_go_is_still_reported() -> None:
    assert ddp019("time.sleep(1)", "break") == 1
