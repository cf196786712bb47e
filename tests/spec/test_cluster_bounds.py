"""cluster.yaml values no parser can hold (a 5,000-digit number, 3,000 nested lists) are a ConfigError, and
names must match in full: a trailing newline in a cluster, partition or variable name is refused (exit 2,
``orch: error:``, a ``HINT:``, nothing written or queued).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from support import TEST_CLUSTER

from orchestrator.cli import main
from orchestrator.errors import ConfigError

if TYPE_CHECKING:
    from support import Stubs


def expect_refused(argv: list[str], capsys: pytest.CaptureFixture[str], must_name: list[str],
                   jobs: Path | None = None, stubs: Stubs | None = None) -> str:
    """Exit 2, ``orch: error:`` naming ``must_name``, a HINT, no traceback, nothing written or queued."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "orch: error:" in err and "HINT:" in err, err
    assert "Traceback" not in err, err
    for text in must_name:
        assert text in err, f"{text!r} not in {err!r}"
    if jobs is not None:
        assert not jobs.exists() or not any(jobs.iterdir()), list(jobs.iterdir())
    if stubs is not None:
        assert stubs.records() == []
    return err


def cluster_file(tmp_path: Path, **sections: Any) -> Path:
    data: dict[str, Any] = {**TEST_CLUSTER, "launcher": {**TEST_CLUSTER["launcher"],
                                                          "job_root": str(tmp_path / "jobs")}}
    data.update(sections)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("text", [
    "name: c\nnum: " + "9" * 5000 + "\n",
    "name: " + "[" * 3000 + "]" * 3000 + "\n",
])
def test_unreadable_yaml_values_are_a_config_error(text: str) -> None:
    from orchestrator.spec.cluster import parse_cluster

    with pytest.raises(ConfigError):
        parse_cluster(text)


# --- names: fullmatch -------------------------------------------------------------------------

@pytest.mark.parametrize(("where", "value"), [
    ("name", "gpu\n"), ("name", "gpu\n\n"), ("partition", "gpu\n"), ("partition", "a\nb"),
    ("env", "NCCL_DEBUG\n"), ("pass_env", "TOKEN\n"),
])
def test_names_with_a_trailing_newline_are_refused(where: str, value: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str], stubs: Stubs) -> None:
    sections: dict[str, Any] = {}
    if where == "name":
        sections["name"] = value
    elif where == "partition":
        sections["partitions"] = [{**TEST_CLUSTER["partitions"][0], "name": value}]
        sections["defaults"] = {}
    elif where == "env":
        sections["env"] = {value: "x"}
    else:
        sections["launcher"] = {"pass_env": [value], "job_root": str(tmp_path / "jobs")}
    path = cluster_file(tmp_path, **sections)
    expect_refused(["submit", "smoke", "--cluster", str(path), "--dry-run"], capsys, ["invalid"],
                   jobs=tmp_path / "jobs", stubs=stubs)
