"""The CLI shell around the verbs: help, version, usage errors."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support import ROOT

from orchestrator.cli import VERBS, main


def test_help_lists_every_verb(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for verb in VERBS:
        assert f"    {verb} " in out


def test_every_verb_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    for verb in VERBS:
        with pytest.raises(SystemExit) as info:
            main([verb, "--help"])
        assert info.value.code == 0
        assert f"usage: orch {verb}" in capsys.readouterr().out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("orch 0.")


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        ([], "required: VERB"),
        (["launch"], "invalid choice: 'launch'"),
        (["submit", "mnist", "--node", "2", "--dry-run"], "unrecognized arguments: --node"),
        (["submit", "mnist", "--nodes", "two", "--dry-run"], "invalid int value: 'two'"),
        (["hosts", "--compres", "a1"], "--compres"),
    ],
)
def test_usage_errors_exit_2_with_a_hint(argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("orch: error: ")
    assert fragment in err
    assert "HINT: run 'orch" in err
    assert "Traceback" not in err


def test_installed_command_help_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "from orchestrator.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('torch', 'torchvision') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
