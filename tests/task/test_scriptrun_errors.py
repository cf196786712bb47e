"""One error line per failure: ``orch run`` of a script that raises prints exactly one
``orch: error:`` line (with its hint) and the script's traceback as ``python script.py`` would, without
orch's own frames (``ORCH_DEBUG=1`` keeps them); the flight recorder's variables carry the names the
installed torch reads (no deprecated name set by orch)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import ORCH, ROOT, clean_environ

from orchestrator.task.hang import (
    FLIGHT_RECORDER_NAMES,
    flight_recorder_env,
    flight_recorder_names,
    installed_torch_version,
    torch_release,
)
from orchestrator.task.scriptrun import format_script_error

RAISES = """\
import os


def inner():
    raise ValueError(f"boom from rank {os.environ['RANK']}")


inner()
"""
TIMEOUT = 180


def _orch_run(cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = clean_environ(PYTHONPATH=str(ROOT), **extra)
    return subprocess.run([ORCH, "run", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)


@pytest.mark.slow
def test_failing_script_prints_one_error_line_and_its_own_traceback(tmp_path: Path) -> None:
    (tmp_path / "boom.py").write_text(RAISES, encoding="utf-8")
    proc = _orch_run(tmp_path, "boom.py", "--nproc", "2", "--cpu", "--job-root", str(tmp_path / "jobs"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert out.count("orch: error:") == 1, out
    [line] = [x for x in out.splitlines() if x.startswith("orch: error:")]
    assert "exited with code 1" in line and "ValueError: boom from rank" in line, out
    assert "HINT: full log: " in out, out
    # the traceback shown (rank 0's streamed output, or the failed rank's last lines) is the script's own
    assert "Traceback (most recent call last):" in out, out
    assert 'boom.py", line 8, in <module>' in out and 'boom.py", line 5, in inner' in out, out
    for frame in ("orchestrator", "runpy", "scriptrun.py", "launch.py"):
        assert frame not in out.split("Traceback", 1)[1], out
    raised = 0
    for log in (tmp_path / "jobs").glob("*/logs/local-rank*.out"):  # a rank that raised: its own traceback only
        text = log.read_text(encoding="utf-8")  # (a rank stopped by orch run dumps its stacks: hang evidence)
        if "Traceback (most recent call last)" in text:
            raised += 1
            assert "orch: error:" not in text and "runpy" not in text and "orchestrator/" not in text, text
    assert raised >= 1


@pytest.mark.slow
def test_orch_debug_keeps_orchs_frames(tmp_path: Path) -> None:
    (tmp_path / "boom.py").write_text(RAISES, encoding="utf-8")
    proc = _orch_run(tmp_path, "boom.py", "--nproc", "1", "--cpu", "--job-root", str(tmp_path / "jobs"),
                     ORCH_DEBUG="1")
    assert proc.returncode == 1
    assert "scriptrun.py" in proc.stdout + proc.stderr and "runpy" in proc.stdout + proc.stderr


def _raise_through(*frames: str) -> BaseException:
    """An exception whose traceback passes through code compiled under the given file names, in order."""
    code = "def call(i, fs):\n    return fs[i](i + 1, fs) if i < len(fs) else (_ for _ in ()).throw(KeyError('x'))\n"
    chain = []
    for name in frames:
        scope: dict[str, object] = {}
        exec(compile(code, name, "exec"), scope)
        chain.append(scope["call"])
    try:
        chain[0](1, chain)
    except KeyError as exc:
        assert exc.__traceback__ is not None
        return exc.with_traceback(exc.__traceback__.tb_next)  # from the first chosen frame on, as in a task
    raise AssertionError("no exception")


def test_format_trims_only_the_leading_orch_frames() -> None:
    orch_file = str(Path(ROOT / "orchestrator" / "task" / "launch.py"))
    api_file = str(Path(ROOT / "orchestrator" / "api.py"))
    exc = _raise_through(orch_file, "<frozen runpy>", "/home/me/train.py", api_file)
    text = format_script_error(exc, {})
    assert "launch.py" not in text and "runpy" not in text, text
    assert "/home/me/train.py" in text and "api.py" in text, text  # orch code the script called stays
    assert text.rstrip().endswith("KeyError: 'x'")
    full = format_script_error(exc, {"ORCH_DEBUG": "1"})
    assert "launch.py" in full and "<frozen runpy>" in full


def test_format_trims_chained_errors_and_keeps_orchs_own() -> None:
    orch_file = str(ROOT / "orchestrator" / "task" / "scriptrun.py")
    inner = _raise_through(orch_file, "/home/me/train.py")
    try:
        raise RuntimeError("outer") from inner
    except RuntimeError as outer:
        text = format_script_error(outer, {})
    assert "/home/me/train.py" in text and "scriptrun.py" not in text and "direct cause" in text, text
    only_orch = _raise_through(orch_file)  # raised inside orch itself: nothing to trim to
    assert "scriptrun.py" in format_script_error(only_orch, {})


# --- the flight recorder's variable names per torch version -------------------------------------------

@pytest.mark.parametrize(("version", "release"), [
    ("2.7.1", (2, 7)), ("2.8.0+cu128", (2, 8)), ("2.9.0a0+git1234", (2, 9)), ("2.10.0.dev20250901", (2, 10)),
    ("2.14.1", (2, 14)), ("10.0", (10, 0)), ("", None), (None, None), ("nightly", None),
])
def test_torch_release(version: str | None, release: tuple[int, int] | None) -> None:
    assert torch_release(version) == release


@pytest.mark.parametrize(("version", "buffer", "dump_file"), [
    ("1.13.1", "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"),
    ("2.7.1+cu126", "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"),
    ("2.8.0", "TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE"),
    ("2.8.0rc3", "TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE"),
    ("2.14.1", "TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE"),
    ("3.0.0", "TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE"),
    (None, "TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE"),  # unknown: today's names
])
def test_flight_recorder_names_follow_the_torch_version(version: str | None, buffer: str, dump_file: str) -> None:
    assert flight_recorder_names(version) == {"buffer": buffer, "dump_file": dump_file}
    got = flight_recorder_env(Path("/j"), {}, version)
    assert got == {buffer: "2000", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1", dump_file: "/j/logs/nccl_trace_rank_"}
    deprecated = {old for _, old, new, since in FLIGHT_RECORDER_NAMES if old != buffer and old != dump_file}
    assert not deprecated & set(got)


@pytest.mark.parametrize("given", ["TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE"])
def test_the_users_value_wins_under_either_name(given: str) -> None:
    got = flight_recorder_env(Path("/j"), {given: "50"}, "2.14.1")
    assert "TORCH_FR_BUFFER_SIZE" not in got and "TORCH_NCCL_TRACE_BUFFER_SIZE" not in got
    assert got["TORCH_FR_DUMP_TEMP_FILE"] == "/j/logs/nccl_trace_rank_"


def test_installed_version_is_read_without_importing_torch() -> None:
    code = ("import sys\nfrom orchestrator.task.hang import installed_torch_version as v\n"
            "print(v())\nprint('torch' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=clean_environ(PYTHONPATH=str(ROOT)), cwd=os.getcwd())
    version, imported = proc.stdout.split()
    assert imported == "False", proc.stdout
    import torch

    assert version == torch.__version__.split("+")[0] or version == torch.__version__
    assert installed_torch_version() == version
