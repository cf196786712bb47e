"""``orch doctor --fix`` on the corpus of real scripts (tests/doctor/real/): every diff it makes applies with
``patch``, and every fixed script passes the doctor for the codes it fixed. ``python
tests/doctor/fix/fix_corpus.py`` prints the figures (docs/doctor.md).

The corpus is checked in shards (every script, each in one shard), so that test workers share it: fixing a script
reads it again after each fix, and the whole corpus is minutes of work."""

from __future__ import annotations

import pytest
from fix_corpus import fix_all, fix_one
from real_corpus import needs_code, truth

pytestmark = [pytest.mark.slow, needs_code()]  # skips in a checkout without the corpus's code

SHARDS = 8

# A real script on which each fix is made (as --fix --all): the smallest such entry of the corpus.
FIXED_ON = {"DDP001": "vqvae2", "DDP004": "waveglow", "DDP006": "pt_ddp_series_torchrun", "DDP009": "droid_slam",
            "DDP015": "apex_simple_ddp"}


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_diff_on_the_corpus_applies_and_every_fixed_script_passes_for_the_codes_fixed(shard: int) -> None:
    names = sorted(truth())[shard::SHARDS]
    outcomes = [o for o in fix_all(show_all=True, names=names) if o.fixed]  # as --fix --all: the most fixes
    assert [o.script for o in outcomes if not o.applies] == []
    assert [o.script for o in outcomes if not o.passes] == []


@pytest.mark.parametrize(("code", "name"), sorted(FIXED_ON.items()))
def test_each_fix_is_made_on_a_real_script(code: str, name: str) -> None:
    outcome = fix_one(name, truth()[name]["entry"], show_all=True)
    assert outcome is not None and code in outcome.fixed and outcome.applies and outcome.passes, outcome
