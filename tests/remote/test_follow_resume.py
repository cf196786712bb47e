"""A restarted ``orch logs -f`` (after a dropped connection) goes on where the output stopped
(orchestrator/remote/follow.py): the lines the cluster repeats are dropped, also when the repeat pauses before
it reaches the last line printed, and nothing that was never printed is lost."""

from __future__ import annotations

import io
import subprocess
import sys
from collections import deque

import pytest

from orchestrator.remote import follow
from orchestrator.remote.follow import already_printed

PRINTED = [b"orch: job 50\n", b"version 1\n", b"tick 0\n", b"tick 1\n", b"tick 2\n", b"tick 3\n"]


@pytest.mark.parametrize(
    ("again", "ended", "expected"),
    [
        ([*PRINTED, b"tick 4\n"], False, 6),  # the whole repeat, then a new line
        (PRINTED[2:], False, 4),  # the repeat of the last lines only
        (PRINTED[:2], False, None),  # a pause after two repeated lines: hold on
        (PRINTED[:2], True, 2),  # the stream ended there: all of it was printed
        (PRINTED[1:4], False, None),
        ([b"tick 9\n"], False, 0),  # never printed
        ([b"version 1\n", b"tick 7\n"], False, 0),  # a run that leaves the printed lines is printed whole
        ([], False, 0),
    ],
)
def test_already_printed(again: list[bytes], ended: bool, expected: int | None) -> None:
    assert already_printed(PRINTED, again, ended=ended) == expected


def _stream_of(code: str, printed: deque[bytes], monkeypatch: pytest.MonkeyPatch) -> bytes:
    monkeypatch.setattr(follow, "PAUSE", 0.3)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = io.BytesIO()
    assert follow._stream(proc, b"", out, printed, 10, restarted=True) == 0
    return out.getvalue()


def test_a_repeat_that_pauses_short_of_the_last_printed_line_is_not_printed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code = ("import sys, time\n"
            "w = lambda *ls: (sys.stdout.buffer.write(b''.join(ls)), sys.stdout.flush())\n"
            f"w(*{PRINTED[:2]!r}); time.sleep(1.0); w(*{PRINTED[2:]!r}, b'tick 4\\n', b'tick 5\\n')\n")
    printed = deque(PRINTED, maxlen=11)
    assert _stream_of(code, printed, monkeypatch) == b"tick 4\ntick 5\n"
    assert list(printed)[-2:] == [b"tick 4\n", b"tick 5\n"]


def test_new_lines_after_a_paused_repeat_are_all_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    code = ("import sys, time\n"
            "w = lambda *ls: (sys.stdout.buffer.write(b''.join(ls)), sys.stdout.flush())\n"
            f"w(*{PRINTED[3:]!r}); time.sleep(1.0); w(b'tick 4\\n')\n")
    assert _stream_of(code, deque(PRINTED, maxlen=11), monkeypatch) == b"tick 4\n"


def test_a_repeat_that_ends_short_of_the_last_printed_line_prints_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    code = f"import sys\nsys.stdout.buffer.write(b''.join({PRINTED[:3]!r}))\n"
    assert _stream_of(code, deque(PRINTED, maxlen=11), monkeypatch) == b""
