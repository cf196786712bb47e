"""The data directory: --data-dir / data_dir= first, else $ORCH_DATA_DIR, as a normalized absolute path."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.spec.datadir import DATA_DIR_ENV_VAR, resolve_data_dir


def test_the_given_folder_wins_over_the_variable(tmp_path: Path) -> None:
    environ = {DATA_DIR_ENV_VAR: "/from/env"}
    assert resolve_data_dir("/given", environ, tmp_path) == "/given"
    assert resolve_data_dir(Path("/given"), environ, tmp_path) == "/given"
    assert resolve_data_dir(None, environ, tmp_path) == "/from/env"
    assert resolve_data_dir("", environ, tmp_path) == "/from/env"


def test_neither_set_is_none(tmp_path: Path) -> None:
    assert resolve_data_dir(None, {}, tmp_path) is None
    assert resolve_data_dir(None, {DATA_DIR_ENV_VAR: ""}, tmp_path) is None


def test_relative_and_home_paths_become_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_data_dir("data/../mnist/", {}, tmp_path) == str(tmp_path / "mnist")
    assert resolve_data_dir(None, {DATA_DIR_ENV_VAR: "data"}, tmp_path) == str(tmp_path / "data")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_data_dir("~/data", {}, Path("/")) == str(tmp_path / "home" / "data")
