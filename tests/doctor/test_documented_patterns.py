"""The frameworks' and PyTorch's own documented, correct distributed patterns (tests/doctor/fixtures/documented/, each
file naming its source) draw no certain or likely finding when judged, as orch submit judges them, for 2 nodes x 8
GPUs: a finding there is a false one, on code users copy from the docs. The official examples taken verbatim are
fetched code, never committed: they are read from ``documented/fetched/`` where a checkout has them."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.service.doctor import asked, diagnose

DOCUMENTED = Path(__file__).parent / "fixtures" / "documented"
SCRIPTS = sorted(DOCUMENTED.rglob("*.py"))  # fetched/ too, where this checkout has it


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_a_documented_pattern_draws_no_finding_on_two_nodes_of_eight_gpus(script: Path) -> None:
    checked = diagnose([str(script)], [], asked(nodes=2, gpus=8))
    shown = [f"{f.code} {f.line}: {f.message}" for f in checked.findings if f.confidence != "possible"]
    assert (shown, checked.layout_errors, checked.unreadable) == ([], [], [])


def test_every_documented_pattern_names_its_source() -> None:
    assert len(SCRIPTS) >= 15
    assert [p.name for p in SCRIPTS if "https://" not in p.read_text().split("\nimport")[0]] == []
