"""The one guarded reader of user source: every way CPython's parser gives up (a very long sum, thousands of
unary minus signs, too many nested parentheses, null bytes, a syntax error) is one UnreadableSource naming
the file; ``limit`` tells a parser limit from a real syntax error."""

from __future__ import annotations

import pytest

from orchestrator.spec.pysource import QUOTE_CHARS, UnreadableSource, parse_source, quote_line

SOURCES = {
    "a 120,000-term sum": ("y = " + " + ".join(["2"] * 120_000) + "\n", True),
    "60,000 unary minus": ("y = " + "- " * 60_000 + "3\n", True),
    "250 nested parentheses": ("y = " + "(" * 250 + "4" + ")" * 250 + "\n", False),  # Python: SyntaxError
    "a null byte": ("y = 5\x00\n", False),
    "a syntax error": ("def broken(:\n", False),
}


@pytest.mark.parametrize("which", list(SOURCES))
def test_what_the_parser_gives_up_on_is_one_error_naming_the_file(which: str) -> None:
    source, limit = SOURCES[which]
    with pytest.raises(UnreadableSource) as caught:
        parse_source(source, "deep_train.py")
    assert caught.value.limit is limit
    assert str(caught.value).startswith("deep_train.py: ")


def test_a_plain_source_parses() -> None:
    assert len(parse_source(b"import os\nx = 1\n", "ok.py").body) == 2


def test_quote_line_names_the_file_and_line_and_drops_the_comment() -> None:
    lines = ["import torch", "mp.spawn(train, nprocs=2)  # one per GPU", "", "x = 1"]
    assert quote_line("train.py", lines, 2) == "train.py:2: mp.spawn(train, nprocs=2)"
    assert quote_line("train.py", lines, 3) == "train.py:3"  # a blank line: just where
    assert quote_line("train.py", lines, 9) == "train.py:9"  # past the end
    assert quote_line("train.py", lines, 0) == "train.py:0"


def test_quote_line_shortens_a_long_line() -> None:
    quoted = quote_line("t.py", ["y = " + "a" * 500], 1)
    assert quoted == "t.py:1: " + ("y = " + "a" * 500)[:QUOTE_CHARS]
