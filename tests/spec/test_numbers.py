"""Integers are ASCII digits only and length-capped (spec/numbers.parse_int, every type=int option of the CLI);
floats from records never overflow (to_float); paths longer than Linux takes are named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import refused

from orchestrator.spec.numbers import (
    ascii_float,
    ascii_int,
    parse_int,
    path_problem,
    to_float,
)


@pytest.mark.parametrize("value", ["١٢", "²", "１２", "1" * 41, "0x10", "1e3", " ", "--1"])
def test_non_ascii_or_overlong_numbers_are_no_numbers(value: str, tmp_path: Path, clean_env: Any,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(["run", "smoke", f"--nproc={value}", "--job-root", str(tmp_path / "j")], capsys, "--nproc")
    assert "invalid int value" in err or "at least 1" in err


@pytest.mark.parametrize("argv", [["list", "--limit", "٣"], ["status", "--limit", "9" * 50], ["logs", "1", "-n", "²"],
                                  ["logs", "1", "--interval", "١"], ["logs", "1", "--interval", "1e400"]])
def test_every_number_option_is_ascii_and_bounded(argv: list[str], clean_env: Any,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    refused(argv, capsys, "invalid")


@given(st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_parse_int_takes_ascii_digits_only(text: str) -> None:
    value = parse_int(text, signed=True)
    stripped = text.strip()
    if value is not None:
        assert stripped.lstrip("+-").isascii() and stripped.lstrip("+-").isdigit()
        assert int(stripped) == value
    elif stripped.isascii() and stripped.isdigit() and len(stripped) <= 40:
        pytest.fail(f"{text!r} is a number")


@given(st.integers(min_value=-(10**400), max_value=10**400) | st.floats(allow_nan=True) | st.booleans() | st.none())
@settings(max_examples=300, deadline=None)
def test_to_float_never_raises(value: object) -> None:
    result = to_float(value)
    assert result is None or isinstance(result, float)


@pytest.mark.parametrize("text", ["1", "-3", "+7", "0012"])
def test_ascii_int_and_float_take_plain_numbers(text: str) -> None:
    assert ascii_int(text) == int(text)
    assert ascii_float(text) == float(text)


@pytest.mark.parametrize("text", ["x" * 4096, "a/" + "b" * 256, "a\0b", "é" * 2100])
def test_paths_longer_than_linux_takes_are_named(text: str) -> None:
    assert path_problem(text) is not None
