"""Slurm time and memory formats."""

from __future__ import annotations

import pytest

from orchestrator.spec.units import format_time, parse_mem_mb, parse_time


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 1800),
        ("90", 5400),  # minutes may exceed 59 when they lead
        ("5:30", 330),
        ("04:00:00", 14400),
        ("100:00:00", 360000),
        ("2-0", 172800),
        ("1-12", 129600),
        ("1-2:3", 93780),
        ("1-12:00:00", 129600),
        (" 10 ", 600),
        ("UNLIMITED", None),
        ("infinite", None),
    ],
)
def test_parse_time_accepts_every_slurm_form(text: str, seconds: int | None) -> None:
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text", ["", "x", "1-", "-1", "1:60", "1:2:60", "1:60:00", "1-1:60", "1:2:3:4", "1.5", "0",
                                  "00:00:00", "1--2", "a-1"])
def test_parse_time_rejects_malformed(text: str) -> None:
    with pytest.raises(ValueError, match="time"):
        parse_time(text)


def test_format_time_round_trips() -> None:
    for text in ["00:00:01", "04:00:00", "1-12:00:00", "10-00:00:59"]:
        seconds = parse_time(text)
        assert seconds is not None
        assert format_time(seconds) == text


@pytest.mark.parametrize(("text", "mb"), [("512", 512), ("480G", 491520), ("1T", 1048576), ("2048K", 2),
                                          ("16gb", 16384), (1000, 1000)])
def test_parse_mem(text: str | int, mb: int) -> None:
    assert parse_mem_mb(text) == mb


@pytest.mark.parametrize("text", ["", "G", "12X", "-5", "1.5G", -1])
def test_parse_mem_rejects(text: str | int) -> None:
    with pytest.raises(ValueError, match="memory"):
        parse_mem_mb(text)
