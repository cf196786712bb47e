"""A loopback rendezvous the script forces as a fact (orchestrator/launchstyles/loopback.py), and what the doctor
makes of it (orchestrator/doctor/launchstyle.answered): across nodes a DDP008 error in any style, nothing on one."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor.feasibility import ACROSS_MARK
from orchestrator.doctor.launchstyle import answered
from orchestrator.launchstyles import read
from orchestrator.spec.launch import Launch

_WORKER = ("import torch.distributed as dist\n\n\ndef main(args):\n"
           "    dist.init_process_group('nccl', init_method=args.dist_url, world_size=args.world_size,\n"
           "                            rank=args.rank)\n\n\n")


@pytest.mark.parametrize("forced", [
    "args.dist_url = 'tcp://127.0.0.1:' + str(get_port())",  # the user's --dist-url overwritten before main(args)
    "args.dist_url = f'tcp://localhost:{port}'",
    "args.dist_url = 'tcp://127.0.0.1:{}'.format(port)",
    "args.dist_url = 'tcp://{}:{}'.format('localhost', port)",  # DiffComplete's: the host fills the template
    "args.dist_url = 'tcp://%s:%d' % ('127.0.0.1', port)"])
def test_a_forced_loopback_init_method_is_a_fact_and_an_error_across_nodes(tmp_path: Path, forced: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(_WORKER + f"if __name__ == '__main__':\n    args = parse()\n    port = 5\n    {forced}\n"
                      "    main(args)\n", encoding="utf-8")
    assert [(Path(f).name, line) for f, line, _ in read(script).loopback] == [("train.py", 12)]
    [error] = answered(Launch(), [], 2, script)
    assert (error.code, error.severity, error.line, ACROSS_MARK in error.marks) == ("DDP008", "error", 12, True)
    assert answered(Launch(), [], 1, script) == []  # one node: its own loopback still meets


def test_a_loopback_literal_in_the_call_is_a_fact(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch.distributed as dist\n"
                      "dist.init_process_group('gloo', init_method='tcp://127.0.0.1:23456', rank=r, world_size=2)\n",
                      encoding="utf-8")
    assert [line for _, line, _ in read(script).loopback] == [2]


def test_a_group_of_one_process_on_loopback_is_no_rendezvous(tmp_path: Path) -> None:
    """Each rank alone in its own group (tests/scripts/alone.py: the world check's case) meets nobody: no fact, and
    nothing refused on 2 nodes."""
    script = tmp_path / "train.py"
    script.write_text("import torch.distributed as dist\n"
                      "dist.init_process_group('gloo', init_method='tcp://127.0.0.1:23456', world_size=1, rank=0)\n"
                      "dist.init_process_group('gloo', 'tcp://localhost:5', None, 1, 0)\n", encoding="utf-8")
    assert read(script).loopback == ()
    assert answered(Launch(), [], 2, script) == []


@pytest.mark.parametrize("forced", [
    # asked for by the user (a keyword), so the user's own address is kept otherwise
    "if args.dist_url == 'auto':\n        args.dist_url = f'tcp://127.0.0.1:{port}'",
    "args.dist_url = f'tcp://{os.environ[\"MASTER_ADDR\"]}:{port}'",  # the launcher's address
    "args.other_url = 'tcp://127.0.0.1:5'",  # not what the call passes
    "args.dist_url = 'tcp://{}:{}'.format(args.host, port)",  # the user's host fills the template
    "args.dist_url = 'tcp://%s:%d' % (host, port)"])
def test_no_fact_where_the_users_or_the_launchers_address_gets_through(tmp_path: Path, forced: str) -> None:
    script = tmp_path / "train.py"
    script.write_text("import os\n" + _WORKER + f"if __name__ == '__main__':\n    args = parse()\n    port = 5\n"
                      f"    {forced}\n    main(args)\n", encoding="utf-8")
    assert read(script).loopback == ()
    assert answered(Launch(), [], 2, script) == []
