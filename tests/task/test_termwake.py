"""task/termwake.py: a SIGTERM the kernel hands to another thread of a rank still runs the rank's handler (its
outcome record) at once, while the main thread sleeps in a system call; a forked child's SIGTERM stays its own;
a handler set after orch's (a script's own) is never called twice. Each case is a real process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support import ROOT, clean_environ

RANK = """
import os, signal, sys, threading, time
from pathlib import Path
from orchestrator.task import hang, launch
from orchestrator.task.outcome import RECORDER

RECORDER.start(Path(sys.argv[1]), rank=1, world_size=2, run="local", restart=0, stopped_by="orch run",
               init_timeout=5, collective_timeout=5)
launch.install_term_record("USR2")
hang.install_stack_dumps("USR2")
case = sys.argv[2]
"""

OTHER_THREAD = RANK + """
def helper():  # as gloo's or torch's threads: it is the one the kernel hands the SIGTERM to
    wchan, deadline = Path(f"/proc/self/task/{os.getpid()}/wchan"), time.monotonic() + 30
    while "nanosleep" not in wchan.read_text() and time.monotonic() < deadline:  # the main thread asleep
        time.sleep(0.05)
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
    time.sleep(3600)

threading.Thread(target=helper, daemon=True).start()
time.sleep(3600)  # the main thread, in a system call (as a rank frozen by SIGSTOP, then woken by SIGCONT)
"""

FORKED = RANK + """
ready, started = os.pipe()
child = os.fork()
if child == 0:  # a DataLoader worker (fork): its SIGTERM is its own
    os.write(started, b"up")  # past the fork (a signal within it is dropped by Python in the child)
    time.sleep(3600)
os.read(ready, 2)
os.kill(child, signal.SIGTERM)
os.waitpid(child, 0)
time.sleep(1)  # the parent's watcher would have woken the main thread by now
print("the parent goes on", flush=True)
"""

OWN_HANDLER = RANK + """
calls = []

def own(signum, frame):  # a script's own SIGTERM handler, set after orch's, slower than the watcher's wait
    calls.append(signum)
    time.sleep(1)

signal.signal(signal.SIGTERM, own)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(0.5)
print(f"own handler calls: {len(calls)}", flush=True)
"""


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, str(tmp_path / "rank1.outcome.json"), "x"],
                          capture_output=True, text=True, timeout=60, env=clean_environ(), cwd=ROOT)


def test_a_sigterm_taken_by_another_thread_still_writes_the_record_and_dumps_the_stacks_once(tmp_path: Path) -> None:
    proc = _run(OTHER_THREAD, tmp_path)  # without the watcher: asleep for an hour (TimeoutExpired)
    assert proc.returncode == -15, proc.stderr
    assert '"kind": "signalled"' in (tmp_path / "rank1.outcome.json").read_text()
    assert proc.stderr.count("Current thread 0x") == 1, proc.stderr  # one dump, from the first delivery
    assert proc.stderr.strip().splitlines()[-1].startswith("orch: rank 1 stopped by SIGTERM"), proc.stderr


def test_a_forked_childs_sigterm_does_not_stop_the_parent(tmp_path: Path) -> None:
    proc = _run(FORKED, tmp_path)
    assert proc.returncode == 0 and "the parent goes on" in proc.stdout, proc.stderr
    assert '"kind": "running"' in (tmp_path / "rank1.outcome.json").read_text()


def test_a_handler_set_after_orchs_is_called_once(tmp_path: Path) -> None:
    proc = _run(OWN_HANDLER, tmp_path)
    assert proc.returncode == 0 and "own handler calls: 1" in proc.stdout, (proc.stdout, proc.stderr)
