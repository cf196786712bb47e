"""orch exec's task process and its output (orchestrator/task/tee.py): stdout and stderr reach both orch exec's
own streams and the rank's log, whole and in order per stream; the child's exit code or signal is orch exec's;
the signals Slurm sends the whole step do not end the copying process before the child."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import clean_environ

from orchestrator.task import tee

BIG = 300_000  # more than a pipe holds: the copy must keep reading while the child writes


def _files(tmp_path: Path) -> tuple[int, int, Path, Path, Path]:
    out, err = tmp_path / "out", tmp_path / "err"
    return (os.open(out, os.O_WRONLY | os.O_CREAT, 0o600), os.open(err, os.O_WRONLY | os.O_CREAT, 0o600), out, err,
            tmp_path / "rank0.out")


def test_both_streams_reach_our_streams_and_the_log(tmp_path: Path) -> None:
    out_fd, err_fd, out, err, log = _files(tmp_path)
    code = textwrap.dedent(f"""
        import sys
        sys.stdout.write("o" * {BIG} + "\\n"); sys.stdout.flush()
        sys.stderr.write("e" * 10 + "\\n"); sys.stderr.flush()
        print("last line")
        sys.exit(7)
    """)
    try:
        status = tee.run_teed([sys.executable, "-c", code], clean_environ(), log, ignore=[], out_fd=out_fd,
                              err_fd=err_fd)
    finally:
        os.close(out_fd)
        os.close(err_fd)
    assert status == 7
    assert out.read_text() == "o" * BIG + "\nlast line\n"
    assert err.read_text() == "e" * 10 + "\n"
    logged = log.read_text()
    assert sorted(logged.splitlines()) == sorted(["o" * BIG, "e" * 10, "last line"])
    assert log.stat().st_mode & 0o777 == 0o600


def test_the_log_is_appended_to_never_replaced(tmp_path: Path) -> None:
    log = tmp_path / "rank0.out"
    log.write_text("a requeued run's first lines\n")
    with open(os.devnull, "wb") as sink:
        tee.run_teed([sys.executable, "-c", "print('again')"], clean_environ(), log, ignore=[],
                     out_fd=sink.fileno(), err_fd=sink.fileno())
    assert log.read_text() == "a requeued run's first lines\nagain\n"


def test_a_child_killed_by_a_signal_is_reported_as_that_signal(tmp_path: Path) -> None:
    with open(os.devnull, "wb") as sink:
        status = tee.run_teed([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
                              clean_environ(), tmp_path / "log", ignore=[], out_fd=sink.fileno(), err_fd=sink.fileno())
    assert status == -signal.SIGKILL
    assert tee.end_like(0) == 0 and tee.end_like(3) == 3


def test_end_like_dies_of_the_childs_signal() -> None:
    proc = subprocess.run([sys.executable, "-c", "from orchestrator.task.tee import end_like; end_like(-15)"],
                          env=clean_environ(PYTHONPATH=os.pathsep.join(sys.path)), timeout=60, check=False)
    assert proc.returncode == -signal.SIGTERM


def test_slurms_signals_reach_the_child_and_orch_exec_outlives_it(tmp_path: Path) -> None:
    """SIGTERM to the whole process group (as Slurm signals a step): the child handles it and ends with
    its own code; the copying process is still there to report that code, and every line is kept."""
    child = textwrap.dedent("""
        import os, signal, sys, time
        def bye(signum, frame):
            print("child got SIGTERM", flush=True)
            sys.exit(42)
        signal.signal(signal.SIGTERM, bye)
        print("ready", flush=True)
        time.sleep(60)
    """)
    parent = textwrap.dedent(f"""
        import os, sys
        from pathlib import Path
        from orchestrator.task import tee
        status = tee.run_teed([sys.executable, "-c", {child!r}], dict(os.environ), Path({str(tmp_path / 'log')!r}),
                              ignore=tee.ignored_signals("SIGUSR1"))
        sys.exit(tee.end_like(status))
    """)
    proc = subprocess.Popen([sys.executable, "-c", parent], env=clean_environ(PYTHONPATH=os.pathsep.join(sys.path)),
                            stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    os.killpg(proc.pid, signal.SIGTERM)
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 42
    assert rest == b"child got SIGTERM\n"
    assert (tmp_path / "log").read_text() == "ready\nchild got SIGTERM\n"


@pytest.mark.parametrize(("name", "included"), [("SIGUSR1", True), ("USR2", True), ("SIGCONT", False)])
def test_the_preemption_signal_is_ignored_too(name: str, included: bool) -> None:
    sig = getattr(signal, name if name.startswith("SIG") else f"SIG{name}")
    assert (sig in tee.ignored_signals(name)) is included
    assert signal.SIGTERM in tee.ignored_signals(name)
