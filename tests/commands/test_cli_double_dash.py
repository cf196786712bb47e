"""Every placement of ``--`` on orch's command line is a clear usage error or works: the verb goes before
``--`` (``orch -- submit`` named no verb and used to end in an AttributeError)."""

from __future__ import annotations

import pytest
from support import run_cli

# argv -> what the error names (None: it works, exit code 0)
PLACEMENTS: dict[tuple[str, ...], str | None] = {
    ("--", "submit"): "before '--'",
    ("--", "run", "train.py"): "before '--'",
    ("-v", "--", "hosts", "n[1-2]"): "before '--'",
    ("--", "--", "submit"): "before '--'",
    ("--", "-v", "list"): "before '--'",
    ("--",): "VERB",
    ("--", "nosuchverb"): "VERB",
    ("--", "--version"): "VERB",
    ("hosts", "--", "n[1-2]"): None,
    ("hosts", "--json", "--", "n[1-2]"): None,
    ("submit", "--", "--"): "needs a JOB",
    ("run", "--"): "needs a JOB",
}


@pytest.mark.parametrize("argv", list(PLACEMENTS), ids=" ".join)
def test_double_dash_anywhere_is_a_usage_error_or_works(argv: tuple[str, ...],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    said = PLACEMENTS[argv]
    code, out, err = run_cli(list(argv), capsys)
    if said is None:
        assert code == 0, err
        return
    assert code == 2, (code, out, err)
    assert "orch: error:" in err and "HINT:" in err and said in err, err
