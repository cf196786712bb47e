"""The one guarded reader of user source: every way CPython's parser gives up (a very long sum, thousands of
unary minus signs, too many nested parentheses, null bytes, a syntax error) is one UnreadableSource naming
the file; ``limit`` tells a parser limit from a real syntax error. A Python 3.12 f-string (PEP 701) is read on an
older Python too."""

from __future__ import annotations

import ast
import sys

import pytest

from orchestrator.spec.pysource import QUOTE_CHARS, UnreadableSource, parse_source, quote_line, requoted

SOURCES = {
    "a 120,000-term sum": ("y = " + " + ".join(["2"] * 120_000) + "\n", True),
    "60,000 unary minus": ("y = " + "- " * 60_000 + "3\n", True),
    "250 nested parentheses": ("y = " + "(" * 250 + "4" + ")" * 250 + "\n", False),  # Python: SyntaxError
    "a null byte": ("y = 5\x00\n", False),
    "a syntax error": ("def broken(:\n", False),
    # the same behind a Python 3.12 f-string that the requoting reads first: the same verdicts, in milliseconds
    "a 3.12 f-string, then a 120,000-term sum": ('s = f"{d["k"]}"\ny = ' + " + ".join(["2"] * 120_000) + "\n", True),
    "a 3.12 f-string, then 60,000 unary minus": ('s = f"{d["k"]}"\ny = ' + "- " * 60_000 + "3\n", True),
    "a 3.12 f-string, then 100,000 nested parentheses": ('s = f"{d["k"]}"\ny = ' + "(" * 100_000 + "4"
                                                         + ")" * 100_000 + "\n", False),
    "a 3.12 f-string, then 50,000 nested format specs": ('s = f"{d["k"]}" + f"{x:' + "{x:" * 50_000 + "}" * 50_001
                                                          + '"\n', False),
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


# Python 3.12 (PEP 701) lets an f-string's replacement field hold a string of the f-string's own quote; a script
# written so runs on the cluster's 3.12 even where orch itself runs on an older Python.
NEWER_FSTRING = 'cfg = {"lr": 0.1}\nprint(f"lr {cfg["lr"]:.3f} at {cfg.get("step", 0)}")\nbroken_later = 1\n'


def test_a_python_312_fstring_parses_with_its_lines_and_columns() -> None:
    tree = parse_source(NEWER_FSTRING, "train.py")
    call = tree.body[1].value  # type: ignore[attr-defined]
    assert isinstance(call, ast.Call) and isinstance(call.args[0], ast.JoinedStr)
    keys = [n.value for n in ast.walk(call.args[0]) if isinstance(n, ast.Constant) and n.value in ("lr", "step")]
    assert keys == ["lr", "step"]
    assert (call.lineno, call.col_offset, call.end_col_offset) == (2, 0, len(NEWER_FSTRING.splitlines()[1]))
    assert tree.body[2].lineno == 3


@pytest.mark.parametrize(("source", "why"), [
    ('x = f"{d[\'a\'] + f"{e["b"]}"}"\n', "three f-string levels: no quote is left for the innermost string"),
    ('x = f"{d["it\'s"]}"\n', "the inner string holds the other quote"),
    ('x = f"{d["k"]}"\ndef broken(:\n', "a syntax error besides"),
    ('x = f"{d["\\n"]}"\n', "a backslash in the replacement field (also new in 3.12)"),
])
def test_what_requoting_cannot_mend_is_still_the_syntax_error(source: str, why: str) -> None:
    if sys.version_info >= (3, 12) and "broken" not in source:
        pytest.skip("this Python reads PEP 701 f-strings itself")
    with pytest.raises(UnreadableSource) as caught:
        parse_source(source, "train.py")
    assert caught.value.limit is False and "syntax error" in caught.value.why, why


def test_requoted_keeps_every_offset_and_leaves_other_strings_alone() -> None:
    source = 'a = f"{d["k"]}" + f"""{e["q"]}""" + "plain" + f\'{g["z"]}\'\n'
    fixed = requoted(source)
    assert fixed == 'a = f"{d[\'k\']}" + f"""{e["q"]}""" + "plain" + f\'{g["z"]}\'\n'
    assert len(fixed) == len(source)
    assert requoted('a = f"{d[\'k\']}"\n') is None  # nothing to change
    # a raw f-string's backslash before a field is a backslash, then the field; a format spec's nested field too
    assert requoted('p = rf"\\{w["a"]}" + f"{x:{"w"}}"\n') == 'p = rf"\\{w[\'a\']}" + f"{x:{\'w\'}}"\n'
