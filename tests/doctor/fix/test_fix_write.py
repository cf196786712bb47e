"""``--write``: the fixed text in place, atomically, the original kept; refused when the script changed since it
was read or cannot be written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from orchestrator.doctor.fix import ScriptChanged, write_fixed


def test_the_fixed_text_replaces_the_script_and_the_original_is_kept(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("old\n", encoding="utf-8")
    script.chmod(0o751)
    assert write_fixed(script, "old\n", "new\n") == tmp_path / "train.py.orig"
    assert script.read_text(encoding="utf-8") == "new\n"
    assert (tmp_path / "train.py.orig").read_text(encoding="utf-8") == "old\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert write_fixed(script, "new\n", "newer\n") == tmp_path / "train.py.orig.1"  # never over an old copy
    assert (tmp_path / "train.py.orig").read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py", "train.py.orig", "train.py.orig.1"]


def test_a_script_changed_since_it_was_read_is_not_written(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("edited meanwhile\n", encoding="utf-8")
    with pytest.raises(ScriptChanged) as caught:
        write_fixed(script, "as read\n", "fixed\n")
    assert "changed since orch doctor read it" in caught.value.message and "--fix --write again" in str(
        caught.value.hint)
    assert script.read_text(encoding="utf-8") == "edited meanwhile\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def test_a_script_that_cannot_be_written_is_refused_with_the_diff_as_the_way_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "train.py"
    script.write_text("old\n", encoding="utf-8")
    real = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path) == script else real(path, mode))
    with pytest.raises(ScriptChanged) as caught:
        write_fixed(script, "old\n", "new\n")
    assert "not writable" in caught.value.message and "--fix > fix.diff" in str(caught.value.hint)
    assert script.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]
