"""Slurm's clients misbehaving (binary garbage, too few fields, ``|`` in every field, 200,000 lines): ``could not
read Slurm's answer: <line>`` and the rest of the table still shows; the parsers never raise.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import CANNED_JOB_ID, CANNED_SUBMIT, make_job, run_cli

from orchestrator.slurm import state

JOB_ID = CANNED_JOB_ID
SUBMIT = CANNED_SUBMIT


@pytest.fixture
def slurm(slurm_answers: Path) -> Path:
    """The canned Slurm answers (tests/conftest.py), under the name these tests use."""
    return slurm_answers


# -- Slurm's answers -------------------------------------------------------------------------

GOOD_SQUEUE = f"{JOB_ID}|RUNNING|None|node1|0:10|0|{SUBMIT}|smoke"

BAD_LINES = {
    "binary": "\x00\x01\xff\xfe\x7f garbage \x1b[31m",
    "too few fields": "4243|RUNNING",
    "pipes everywhere": "|".join(["4|2|4|4"] * 12),
    "superscript restarts": f"4244|RUNNING|None|node1|0:10|²|{SUBMIT}|x",
    "huge numbers": f"4245|RUNNING|None|node1|0:10|{'9' * 5000}|{SUBMIT}|x",
    "arabic id": f"٤٢٤٦|RUNNING|None|node1|0:10|0|{SUBMIT}|x",
}


@pytest.mark.parametrize("bad", list(BAD_LINES))
def test_an_unreadable_squeue_line_is_reported_and_the_rest_shows(bad: str, slurm: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    folder = make_job(tmp_path / "jobs")
    (slurm / "squeue.out").write_text(f"{BAD_LINES[bad]}\n{GOOD_SQUEUE}\n", errors="surrogateescape")
    code, out, err = run_cli(["status", str(folder)], capsys)
    assert code == 0 and "RUNNING" in out, (out, err)
    if bad not in ("superscript restarts", "huge numbers"):  # those lines are read: only the number is left out
        assert "could not read Slurm's answer" in err + caplog.text


def test_200000_lines_of_squeue_garbage(slurm: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       caplog: pytest.LogCaptureFixture) -> None:
    folder = make_job(tmp_path / "jobs")
    garbage = "".join(f"junk {i} | | |\n" for i in range(200_000))
    (slurm / "squeue.out").write_text(garbage + GOOD_SQUEUE + "\n")
    start = time.monotonic()
    code, out, err = run_cli(["status", str(folder)], capsys)
    assert code == 0 and "RUNNING" in out
    said = err + caplog.text
    assert "could not read Slurm's answer" in said and "more lines like these" in said
    assert said.count("could not read") <= state.SHOWN_UNREAD + 1  # a few quoted, the rest counted
    assert time.monotonic() - start < 15


@pytest.mark.parametrize("answer", ["\x00\x00\x00", "4242|COMPLETED", "|||||||||||||||", "x" * 100_000,
                                    f"{JOB_ID}|COMPLETED|{'9' * 5000}:0|n|00:00:01|{'9' * 5000}|gres/gpu=²|{SUBMIT}|s"])
def test_sacct_garbage_leaves_the_folder_state(answer: str, slurm: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_job(tmp_path / "jobs")
    (slurm / "sacct.out").write_text(answer + "\n")
    (slurm / "scontrol.out").write_text(f"JobId={JOB_ID} JobState=RUNNING Restarts={'9' * 5000} ExitCode=²:0\n")
    run_cli(["status", str(folder)], capsys)
    run_cli(["status", "--json", str(folder)], capsys)


@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80), max_size=20))
@settings(max_examples=200, deadline=None)
def test_the_parsers_never_raise_and_keep_the_good_line(lines: list[str]) -> None:
    text = "\n".join([*lines, GOOD_SQUEUE])
    assert JOB_ID in state.parse_squeue(text)
    state.parse_sacct(text, "sacct", [JOB_ID])
    state.parse_sacct_runs(text, [JOB_ID])
    state.parse_show_job(JOB_ID, text)
