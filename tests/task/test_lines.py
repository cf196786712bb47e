"""orchestrator/task/lines.py: a rank's streams flush a line at a time, in the processes ``multiprocessing``
spawns too, and orch's own lines in a rank's log start on a line of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, clean_environ

from orchestrator.task.lines import end_line, ends_with_newline, fresh_line

CHILD = """
import json, multiprocessing as mp, sys
def report(q):
    q.put([s.line_buffering and not s.write_through for s in (sys.stdout, sys.stderr)])
if __name__ == "__main__":
    from orchestrator.task import lines
    lines.start()
    seen = {"rank": [s.line_buffering and not s.write_through for s in (sys.stdout, sys.stderr)]}
    for method in ("spawn", "forkserver", "fork"):
        ctx = mp.get_context(method)
        q = ctx.Queue()
        p = ctx.Process(target=report, args=(q,))
        p.start()
        seen[method] = q.get(timeout=60)
        p.join()
    print(json.dumps(seen))
"""


@pytest.mark.parametrize("unbuffered", [None, "1"])
def test_the_rank_and_every_process_multiprocessing_starts_are_line_buffered(tmp_path: Path,
                                                                            unbuffered: str | None) -> None:
    """Also where the user's environment asks for unbuffered output (PYTHONUNBUFFERED=1: a part of a line,
    a write of its own, would let another process's output in)."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = clean_environ(PYTHONPATH=str(ROOT))
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = unbuffered
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {name: [True, True] for name in ("rank", "spawn", "forkserver", "fork")}


def test_a_print_of_many_parts_is_one_write(tmp_path: Path) -> None:
    """Under PYTHONUNBUFFERED=1 as without it: the parts and the newline reach the descriptor at once."""
    code = ("import os, sys\nfrom orchestrator.task import lines\nlines.line_buffered()\n"
            "print('a', 'b', 'c', end='')\nos.write(1, b'|')\nprint('d', 'e')\nos.write(1, b'|')\n")
    proc = subprocess.run([sys.executable, "-c", code], env=clean_environ(PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1"),
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "|a b cd e\n|"  # the unended line waited for its end, then went out whole


def _log(tmp_path: Path, text: bytes) -> int:
    """A log as srun --output and orch run open one: write-only, appending."""
    path = tmp_path / "rank0.out"
    path.write_bytes(text)
    return os.open(path, os.O_WRONLY | os.O_APPEND)


@pytest.mark.parametrize(("text", "ends"), [(b"", True), (b"step 1\n", True), (b"step 1\nstep", False),
                                            (b"50%|#####     |\r", False)])
def test_a_log_ending_in_a_newline_is_told_from_one_that_does_not(tmp_path: Path, text: bytes, ends: bool) -> None:
    fd = _log(tmp_path, text)
    try:
        assert ends_with_newline(fd) is ends
        end_line(fd)
        assert ends_with_newline(fd) is True
    finally:
        os.close(fd)
    assert (tmp_path / "rank0.out").read_bytes() == (text if ends else text + b"\n")


def test_a_pipe_is_not_known() -> None:
    read, write = os.pipe()
    try:
        assert ends_with_newline(write) is None
        end_line(write)  # nothing written where it cannot tell
        os.set_blocking(read, False)
        with pytest.raises(BlockingIOError):
            os.read(read, 1)
    finally:
        os.close(read)
        os.close(write)


def test_orchs_line_after_an_unended_line_starts_a_line_of_its_own(tmp_path: Path) -> None:
    fd = _log(tmp_path, b"")
    with open(fd, "w", encoding="utf-8", closefd=True) as stream:
        stream.write("loss 0.5")  # the script's last line, without its end
        fresh_line(stream)
        stream.write("orch: error: rank 0: ...\n")
        fresh_line(stream)  # a line that ended: nothing more
    assert (tmp_path / "rank0.out").read_text() == "loss 0.5\norch: error: rank 0: ...\n"
