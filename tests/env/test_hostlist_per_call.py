"""The hostlist caps bound a whole call, not each expression: ``orch hosts`` with many expressions, each
under ``MAX_HOSTS`` but together far over it, is refused before a single host name is built.
"""

from __future__ import annotations

from typing import Any

import pytest
from support import expect_refused

from orchestrator.env import hostlist

# 24 expressions of 12 x 70,000 = 840,000 hosts each: every one alone is allowed, together ~20 million names
EACH = ",".join(f"blade{g}-[1-65000]" for g in range(12)) + ",spare[1-60000]"
MANY = [EACH] * 24


@pytest.fixture
def expansions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every bracket item expanded; expanding one of MANY's items at all is already the failure."""
    seen: list[str] = []

    def refuse(item: str, *_: Any) -> list[str]:
        seen.append(item)
        raise AssertionError(f"{item!r} was expanded before the total was checked")

    monkeypatch.setattr(hostlist, "_expand_item", refuse)
    hostlist.expand_cached.cache_clear()
    return seen


def test_each_expression_alone_is_within_the_limits() -> None:
    assert hostlist.count(EACH) == 12 * 65000 + 60000 < hostlist.MAX_HOSTS


def test_many_expressions_over_the_total_are_refused_without_expanding(expansions: list[str]) -> None:
    with pytest.raises(hostlist.HostlistError, match="together name more than 1,000,000 hosts"):
        hostlist.expand_all(MANY)
    assert expansions == []


def test_orch_hosts_refuses_the_sum_naming_the_limit(expansions: list[str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    expect_refused(["hosts", *MANY], capsys, ["24 hostlists together", "1,000,000 hosts"])
    assert expansions == []


def test_orch_hosts_still_expands_several_expressions_under_the_total(capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.cli import main

    assert main(["hosts", "n[1-3]", "m[08-09],x"]) == 0
    assert capsys.readouterr().out.split() == ["n1", "n2", "n3", "m08", "m09", "x"]
    assert hostlist.expand_all(["n[1-2]"] * 3) == ["n1", "n2"] * 3
