"""Slurm's time and memory formats, parsed and formatted (pure)."""

from __future__ import annotations

import re

_UNLIMITED = frozenset({"UNLIMITED", "INFINITE"})
_MEM_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
_MEM_RE = re.compile(r"^([0-9]{1,15})([KMGT]?)B?$", re.IGNORECASE | re.ASCII)  # bounded: no int-string limit
_MAX_DIGITS = 12


def parse_time(value: str) -> int | None:
    """Parse a Slurm ``--time`` value into seconds (``None`` means unlimited).

    Accepted forms, as ``sbatch(1)`` lists them: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``,
    ``D-H:M:S``, and ``UNLIMITED``/``INFINITE``. Raises ``ValueError`` with the accepted forms.
    """
    text = value.strip()
    if text.upper() in _UNLIMITED:
        return None
    days = 0
    if "-" in text:
        day_text, _, text = text.partition("-")
        if not (day_text.isascii() and day_text.isdigit()) or len(day_text) > _MAX_DIGITS:
            raise ValueError(_time_message(value))
        days = int(day_text)
    parts = text.split(":")
    if not 1 <= len(parts) <= 3 or not all(p.isascii() and p.isdigit() and len(p) <= _MAX_DIGITS for p in parts):
        raise ValueError(_time_message(value))
    nums = [int(p) for p in parts]
    if "-" in value:  # D-H, D-H:M, D-H:M:S
        hours, minutes, seconds = [*nums, 0, 0][:3]
        bounded = nums[1:]
    elif len(nums) == 3:  # H:M:S
        hours, minutes, seconds = nums
        bounded = nums[1:]
    else:  # M or M:S
        hours, minutes, seconds = 0, nums[0], (nums[1] if len(nums) == 2 else 0)
        bounded = nums[1:]
    if any(n >= 60 for n in bounded):
        raise ValueError(_time_message(value))
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if total <= 0:
        raise ValueError(f"time {value!r} must be longer than zero")
    return total


def _time_message(value: str) -> str:
    return (
        f"invalid time {value!r}: use minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS "
        "(for example 30, 04:00:00 or 1-12:00:00)"
    )


def format_time(seconds: int) -> str:
    """Format seconds as Slurm's ``D-HH:MM:SS`` (``HH:MM:SS`` below a day)."""
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def parse_mem_mb(value: str | int) -> int:
    """Parse a Slurm memory size (``512000``, ``500G``, ``1T``; the default unit is MB) into MB."""
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"memory {value} must not be negative")
        return value
    match = _MEM_RE.match(value.strip())
    if not match:
        raise ValueError(f"invalid memory {value!r}: use a number with an optional unit K, M, G or T (e.g. 480G)")
    amount, unit = int(match.group(1)), match.group(2).upper() or "M"
    return int(amount * _MEM_UNITS[unit])
