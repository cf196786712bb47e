"""The fork server's protocol and the client's view of its ranks (orchestrator/task/forkserver.py), on a server
without torch (``forkecho``); the ranks of orch's entrypoint forked for real run through every ``orch run`` of a
job file in tests/local, tests/restarts and tests/runtime."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from support import TESTS

from orchestrator.task import forkserver
from orchestrator.task.forkserver import ForkServer, forks_ranks


@pytest.mark.parametrize(("script", "nproc", "environ", "forked"), [
    (False, 2, {}, True),
    (False, 8, {"ORCH_FORK_RANKS": "1"}, True),
    (True, 2, {}, False),  # a user's script: its own fresh interpreter
    (False, 1, {}, False),  # one rank: nothing to share
    (False, 4, {"ORCH_FORK_RANKS": "0"}, False),
])
def test_which_runs_fork_their_ranks(script: bool, nproc: int, environ: dict[str, str], forked: bool) -> None:
    assert forks_ranks(script=script, nproc=nproc, environ=environ) is (forked and sys.platform.startswith("linux"))


@pytest.fixture
def server(tmp_path: Path):  # type: ignore[no-untyped-def]
    common = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS / "task"), os.environ.get("PYTHONPATH", "")]),
              "KEEP": "kept", "CHANGED": "old", "GONE": "here"}
    with (tmp_path / "server.out").open("ab") as out:
        started = ForkServer.start(sys.executable, common, name=["--job-dir", str(tmp_path)], output=out,
                                   preexec=forkserver.die_with_parent, module="forkecho")
    assert started.ready(cancelled=lambda: False), (tmp_path / "server.out").read_text()
    yield started, common
    started.close(5.0)


def _forked(server: ForkServer, common: dict[str, str], tmp_path: Path, rank: int, *argv: str):  # type: ignore[no-untyped-def]
    env = {k: v for k, v in common.items() if k != "GONE"}
    env.update({"CHANGED": "new", "RANK": str(rank)})
    out = (tmp_path / f"rank{rank}.out").open("ab")
    try:
        return server.fork(rank, list(argv), env, out.fileno(), common=common, stdout=None)
    finally:
        out.close()


def _said(tmp_path: Path, rank: int) -> dict[str, object]:
    deadline = time.monotonic() + 30
    path = tmp_path / f"rank{rank}.out"
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.endswith("\n"):
            return json.loads(text.splitlines()[0])  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError(f"rank {rank} said nothing")


def test_a_forked_rank_gets_its_arguments_environment_output_and_session(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    srv, common = server
    ranks = [_forked(srv, common, tmp_path, rank, "exit", str(3 + rank)) for rank in range(2)]
    assert [r.wait(timeout=30) for r in ranks] == [3, 4]  # Popen's returncode, reported by the server
    for rank, forked in enumerate(ranks):
        said = _said(tmp_path, rank)
        assert said["argv"] == ["exit", str(3 + rank)] and said["pid"] == forked.pid
        assert said["own_session"] is True
        assert said["env"] == {"KEEP": "kept", "CHANGED": "new", "GONE": None, "RANK": str(rank)}
    cmdline = Path(f"/proc/{srv.proc.pid}/cmdline").read_bytes()
    assert str(tmp_path).encode() in cmdline  # the ranks' command line names the job folder, as a started one's


def test_a_rank_killed_by_a_signal_reads_as_popen_says_it(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    srv, common = server
    killed = _forked(srv, common, tmp_path, 0, "kill")
    assert killed.wait(timeout=30) == -signal.SIGKILL
    sleeping = _forked(srv, common, tmp_path, 1, "sleep")
    _said(tmp_path, 1)
    assert sleeping.poll() is None
    sleeping.send_signal(signal.SIGTERM)
    assert sleeping.wait(timeout=30) == -signal.SIGTERM
    sleeping.send_signal(signal.SIGTERM)  # ended: nothing is sent (as Popen)


def test_when_the_server_dies_its_ranks_end_and_read_as_lost(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    srv, common = server
    rank = _forked(srv, common, tmp_path, 0, "sleep")
    _said(tmp_path, 0)
    srv.proc.kill()  # its ranks get SIGTERM from the kernel (PR_SET_PDEATHSIG)
    assert rank.wait(timeout=30) == forkserver.LOST_CODE
    with pytest.raises(OSError):
        _forked(srv, common, tmp_path, 1, "exit", "0")


def test_the_server_leaves_when_the_client_closes(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    srv, _ = server
    srv.close(5.0)
    assert srv.proc.returncode == 0
