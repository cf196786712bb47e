"""``orch doctor --fix`` on the corpus of real scripts (tests/doctor/real/): every diff it makes applies with
``patch``, and every fixed script passes the doctor for the codes it fixed. ``python
tests/doctor/fix/fix_corpus.py`` prints the figures (docs/doctor.md)."""

from __future__ import annotations

import pytest
from fix_corpus import fix_all

pytestmark = pytest.mark.slow


def test_every_diff_on_the_corpus_applies_and_every_fixed_script_passes_for_the_codes_fixed() -> None:
    outcomes = [o for o in fix_all(show_all=True) if o.fixed]  # as --fix --all: the most fixes
    assert [o.script for o in outcomes if not o.applies] == []
    assert [o.script for o in outcomes if not o.passes] == []
    fixed_codes = {code for o in outcomes for code in o.fixed}
    assert fixed_codes >= {"DDP001", "DDP004", "DDP006", "DDP009", "DDP015"}  # real scripts, each fix at least once
