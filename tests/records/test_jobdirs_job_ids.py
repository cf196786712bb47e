"""A job id is a full match of ASCII digits: no trailing newline or space, no other digits, no underscores.
"""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("text", ["12\n", "12 ", "١٢", "1_2_3", "9" * 5000, "12_"])
def test_job_ids_are_full_ascii_matches(text: str) -> None:
    from orchestrator.records.jobdirs import is_job_id

    assert not is_job_id(text)
