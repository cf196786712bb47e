"""task/hang.py, what the terminal shows of a rank's output: a dump_stacks block stays in the log only
(LogOnly, line by line as orch run echoes), and a stuck rank's faulthandler stack is shown without orch's
launcher frames or runpy's (for_terminal); the script's own frames stay."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, clean_environ

from orchestrator.task import hang

ORCH_DIR = str(ROOT / "orchestrator")
STUCK = f"""rank 1 joined
Current thread 0x00007f76ad46db80 (most recent call first):
  File "/home/me/stuck.py", line 26 in main
  File "/home/me/stuck.py", line 34 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "{ORCH_DIR}/task/scriptrun.py", line 203 in _run_target
  File "{ORCH_DIR}/task/launch.py", line 243 in _main
  File "{ORCH_DIR}/runtime/launch.py", line 118 in <module>"""


def test_a_stuck_ranks_stack_keeps_the_scripts_frames_only() -> None:
    assert hang.for_terminal(STUCK).splitlines() == [
        "rank 1 joined", "Current thread 0x00007f76ad46db80 (most recent call first):",
        '  File "/home/me/stuck.py", line 26 in main', '  File "/home/me/stuck.py", line 34 in <module>']


def test_a_traceback_line_that_is_no_faulthandler_frame_stays() -> None:
    line = f'  File "{ORCH_DIR}/task/launch.py", line 243, in _main'  # python's traceback format: not a dump
    assert hang.for_terminal(line) == line


def _dumped() -> str:
    code = ("import sys\nfrom orchestrator.task import hang\nprint('before', flush=True)\n"
            "hang.dump_stacks(sys.stdout)\nprint('after')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                          env=clean_environ(PYTHONPATH=str(ROOT)))
    return proc.stdout


def test_dump_stacks_is_marked_and_neither_filter_shows_it() -> None:
    out = _dumped()
    assert hang.STACKS_BEGIN in out and hang.STACKS_END in out and "dump_stacks" in out  # the log keeps it
    assert hang.for_terminal(out).splitlines() == ["before", "after"]
    log_only = hang.LogOnly()
    shown = [line for line in io.BytesIO(out.encode()) if log_only.shown(line)]
    assert shown == [b"before\n", b"after\n"]


def test_a_line_that_only_looks_like_the_end_marker_outside_a_block_is_shown() -> None:
    assert hang.LogOnly().shown(b"plain output\n")
    assert hang.for_terminal(f"x\n{hang.STACKS_BEGIN}\nunfinished") == "x"  # a rank that died mid-dump: hidden


def test_the_launcher_frames_are_found_where_orch_is_installed() -> None:
    assert hang.launcher_frame(f'  File "{Path(hang.__file__)}", line 1 in dump_stacks')
    assert not hang.launcher_frame('  File "/home/me/orchestrator_like.py", line 1 in f')


STOPPED = """
import os, signal, sys, time
from pathlib import Path
from orchestrator.task import hang, launch
from orchestrator.task.outcome import RECORDER

RECORDER.start(Path(sys.argv[1]), rank=1, world_size=2, run="local", restart=0, stopped_by="orch run",
               init_timeout=5, collective_timeout=5)
launch.install_term_record("USR2")
hang.install_stack_dumps("USR2")
if sys.argv[2] == "leaving":
    hang.remove_stack_dumps()
if sys.argv[2] == "joined":  # the running record rewritten (a script's world joined): its signals held meanwhile
    RECORDER.joined(None)

def training_step():
    os.kill(os.getpid(), signal.SIGTERM)  # orch cancel's scancel, as the rank runs
    time.sleep(5)

training_step()
"""


@pytest.mark.parametrize("before", ["running", "joined"])
def test_a_rank_stopped_by_sigterm_says_why_its_stacks_are_in_the_log(tmp_path: Path, before: str) -> None:
    """scancel (orch cancel) of a running rank: its log has every thread's stack, then one line saying it was
    stopped, not crashed; the rank still dies of SIGTERM and records it. Also after its record was rewritten
    with SIGTERM held (setting a Python handler replaces faulthandler's: it is put back)."""
    proc = subprocess.run([sys.executable, "-c", STOPPED, str(tmp_path / "rank1.outcome.json"), before],
                          capture_output=True, text=True, timeout=60, env=clean_environ(), cwd=ROOT)
    assert proc.returncode == -15, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert any("in training_step" in line for line in lines), proc.stderr  # the stacks, first
    assert lines[-1].startswith("orch: rank 1 stopped by SIGTERM (orch cancel or scancel"), proc.stderr
    assert lines[-1].endswith("this is not a crash"), proc.stderr
    assert '"kind": "signalled"' in (tmp_path / "rank1.outcome.json").read_text()


def test_a_rank_that_is_leaving_dumps_no_stacks_and_says_nothing(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", STOPPED, str(tmp_path / "rank1.outcome.json"), "leaving"],
                          capture_output=True, text=True, timeout=60, env=clean_environ(), cwd=ROOT)
    assert proc.returncode == -15, proc.stderr
    assert "training_step" not in proc.stderr and "orch:" not in proc.stderr, proc.stderr
