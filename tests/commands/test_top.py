"""orch top's command: it refuses without a terminal (with a HINT) and without textual (naming the extra),
and neither the CLI's start-up nor the command module imports textual (only running the app does)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, run_cli


def test_without_a_terminal_it_says_so(clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["top"], capsys)  # pytest's stdout is no terminal
    assert code == 2 and out == ""
    assert "orch top needs a terminal" in err and "HINT: orch list and orch status --json" in err


def test_without_textual_it_names_the_extra(clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    for name in [m for m in sys.modules if m == "textual" or m.startswith("textual.")] + ["orchestrator.views.topapp"]:
        clean_env.delitem(sys.modules, name, raising=False)
    clean_env.setitem(sys.modules, "textual", None)  # import textual raises ImportError, as when it is not installed
    clean_env.setattr(sys.stdin, "isatty", lambda: True)
    clean_env.setattr(sys.stdout, "isatty", lambda: True)
    code, _, err = run_cli(["top"], capsys)
    assert code == 2 and "orch top needs the textual package, which is not installed" in err
    assert "HINT: pip install 'orch[tui]'" in err


def test_a_bad_interval_is_refused(clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    clean_env.setattr(sys.stdin, "isatty", lambda: True)
    clean_env.setattr(sys.stdout, "isatty", lambda: True)
    code, _, err = run_cli(["top", "--interval", "0"], capsys)
    assert code == 2 and "--interval 0 is out of range" in err


def test_the_cli_and_the_command_module_import_no_textual() -> None:
    code = ("import sys, orchestrator.cli, orchestrator.commands.top; "
            "sys.exit(1 if [m for m in sys.modules if m.split('.')[0] == 'textual'] else 0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
