"""cluster.yaml values no parser can hold (a 5,000-digit number, 3,000 nested lists) are a ConfigError, and
names must match in full: a trailing newline in a cluster, partition or variable name is refused (exit 2,
``orch: error:``, a ``HINT:``, nothing written or queued).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support import TEST_CLUSTER, cluster_file, expect_refused

from orchestrator.errors import ConfigError

if TYPE_CHECKING:
    from support import Stubs


@pytest.mark.parametrize("text", [
    "name: c\nnum: " + "9" * 5000 + "\n",
    "name: " + "[" * 3000 + "]" * 3000 + "\n",
])
def test_unreadable_yaml_values_are_a_config_error(text: str) -> None:
    from orchestrator.spec.clusterparse import parse_cluster

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
