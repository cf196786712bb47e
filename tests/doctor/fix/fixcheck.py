"""What every fix's test checks, through the real CLI: the script has the finding; ``orch doctor --fix`` prints
a diff that ``patch`` applies and writes nothing; the diff changes exactly the lines the test expects (the rest
of the file, comments and layout, stays as it was); the fixed script no longer has the finding; a second
``--fix`` on it finds nothing to fix."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support import run_cli

from orchestrator.doctor import check_file


def changed_lines(diff: str) -> tuple[list[str], list[str]]:
    """The lines a unified diff removes and adds (without the ``-``/``+``)."""
    body = [line for line in diff.splitlines() if not line.startswith(("---", "+++", "@@"))]
    return [line[1:] for line in body if line.startswith("-")], [line[1:] for line in body if line.startswith("+")]


def fixed_by_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], text: str,
                 code: str, removed: list[str], added: list[str], name: str = "train.py",
                 flags: tuple[str, ...] = ()) -> str:
    """Run the checks above on ``text`` for ``code`` (``flags``: more of orch doctor's, ``--all``); return the
    fixed text."""
    monkeypatch.chdir(tmp_path)
    script = tmp_path / name
    script.write_text(text, encoding="utf-8")
    assert code in {f.code for f in check_file(name)}
    rc, diff, err = run_cli(["doctor", name, "--fix", *flags], capsys)
    assert rc == 0, err
    assert script.read_text(encoding="utf-8") == text  # --fix alone writes nothing
    assert changed_lines(diff) == (removed, added), diff
    (tmp_path / "fix.diff").write_text(diff, encoding="utf-8")
    patched = tmp_path / "patched.py"
    proc = subprocess.run(["patch", "-o", str(patched), name, "fix.diff"], cwd=tmp_path, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fixed = patched.read_text(encoding="utf-8")
    compile(fixed, name, "exec")
    script.write_text(fixed, encoding="utf-8")
    assert code not in {f.code for f in check_file(name)}
    rc, again, err = run_cli(["doctor", name, "--fix", *flags], capsys)
    assert (rc, again) == (0, ""), again
    assert f"{name}: nothing to fix" in err
    return fixed
