"""records/live.py: stamps, the memo that re-reads only changed files, the incremental .jsonl tail."""

from __future__ import annotations

import json
import os
from pathlib import Path

from orchestrator.records.atomic import write_text_atomic
from orchestrator.records.live import FIRST_READ_BYTES, JsonlTail, Memo, stamp


def test_a_memo_reads_again_only_when_a_stamp_changes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("1")
    memo: Memo[str] = Memo()
    read = lambda: a.read_text() + (b.read_text() if b.exists() else "")  # noqa: E731
    assert memo.get("k", [a, b], read) == "1"
    assert memo.get("k", [a, b], read) == "1" and memo.reads == 1
    b.write_text("2")  # a file that appears is a change
    assert memo.get("k", [a, b], read) == "12" and memo.reads == 2
    write_text_atomic(a, "3")  # replaced atomically: another inode
    assert memo.get("k", [a, b], read) == "32" and memo.reads == 3
    assert memo.get("k", [a, b], read, extra="other") == "32" and memo.reads == 4  # the extra key counts too
    memo.forget(lambda key: key != "k")
    assert memo.get("k", [a, b], read, extra="other") == "32" and memo.reads == 5


def test_a_stamp_of_a_missing_file_is_none(tmp_path: Path) -> None:
    assert stamp(tmp_path / "nope") is None
    (tmp_path / "f").write_text("x")
    found = stamp(tmp_path / "f")
    assert found is not None and found.size == 1


def _append(path: Path, *records: object, tail: str = "") -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in records) + tail)


def test_a_tail_reads_only_what_was_appended(tmp_path: Path) -> None:
    path = tmp_path / "steps.jsonl"
    tail = JsonlTail(path, keep=3)
    assert tail.poll() is False and tail.reads == 0  # no file yet
    _append(path, {"step": 1}, {"step": 2})
    assert tail.poll() and [r["step"] for r in tail.records] == [1, 2]
    assert tail.poll() is False and tail.reads == 1  # nothing new: not opened again
    _append(path, {"step": 3}, tail='{"step": 4')  # a line still being written waits for its newline
    assert tail.poll() and [r["step"] for r in tail.records] == [1, 2, 3]
    offset = tail.offset
    _append(path, {}, tail="garbage\n")  # finishes step 4's line (now damaged), then a line that is no JSON
    tail.poll()
    assert tail.offset > offset and tail.skipped == 2 and [r["step"] for r in tail.records] == [1, 2, 3]
    _append(path, {"step": 5})
    assert tail.poll() and [r["step"] for r in tail.records] == [2, 3, 5]  # the last ``keep`` only
    assert tail.reads == 4


def test_a_tail_starts_again_when_the_file_is_replaced_or_shrinks(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    _append(path, {"epoch": 1}, {"epoch": 2}, {"epoch": 3})
    tail = JsonlTail(path)
    tail.poll()
    write_text_atomic(path, json.dumps({"epoch": 1}) + "\n")  # a resume trims it: another inode
    assert tail.poll() and [r["epoch"] for r in tail.records] == [1]
    with path.open("w") as fh:  # truncated in place
        fh.write("")
    _append(path, {"epoch": 9})
    assert tail.poll() and [r["epoch"] for r in tail.records] == [9]
    os.unlink(path)
    assert tail.poll() and not tail.records


def test_a_long_file_is_read_from_near_its_end(tmp_path: Path) -> None:
    path = tmp_path / "steps.jsonl"
    line = json.dumps({"step": 0, "pad": "x" * 1000}) + "\n"
    with path.open("w") as fh:
        for step in range(FIRST_READ_BYTES // len(line) + 500):
            fh.write(line.replace('"step": 0', f'"step": {step}'))
    tail = JsonlTail(path, keep=5)
    tail.poll()
    steps = [r["step"] for r in tail.records]
    assert steps == list(range(steps[0], steps[0] + 5)) and tail.skipped == 0  # whole lines only, the last ones
    assert tail.offset == path.stat().st_size
