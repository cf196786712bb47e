"""Slurm time and memory values with thousands of digits are ValueErrors, never a hang or an overflow.
"""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("field", "value"), [("time", "9" * 5000), ("time", "1-" + "9" * 5000),
                                              ("mem", "9" * 5000 + "G")])
def test_units_with_thousands_of_digits_are_value_errors(field: str, value: str) -> None:
    from orchestrator.spec.units import parse_mem_mb, parse_time

    with pytest.raises(ValueError, match="invalid"):
        (parse_time if field == "time" else parse_mem_mb)(value)
