"""Hostlists bounded by counting, before anything is expanded: huge expressions are refused (in the
parser, in cluster.yaml and in ``orch hosts``), the limits Slurm allows still expand, and ``compress`` of huge
numbers round-trips.

Refusals through the real CLI (``orchestrator.cli.main``) exit 2 with ``orch: error:`` naming the field, a
``HINT:``, no traceback, no job folder and no Slurm call (stub Slurm commands first on PATH).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import TEST_CLUSTER, cluster_file, expect_refused

from orchestrator.cli import main
from orchestrator.env import hostlist

if TYPE_CHECKING:
    from support import Stubs


# --- bounded hostlists ---------------------------------------------------------------------------

HUGE = [
    ("600 ranges of 65,536", "n[" + ",".join(["1-65536"] * 600) + "]", "more than 1,000,000 hosts"),
    ("many items of big ranges", ",".join(f"r{i}[1-60000]" for i in range(40)), "more than 1,000,000 hosts"),
    ("three groups, product", "a[1-200]b[1-200]c[1-200]", "more than 1,000,000 hosts"),
    ("prefix group over Slurm's limit", "a[1-40000,1-40000]b[1]", "65,536 values"),
    ("one range over 64 Ki", "n[0-65536]", "more than 65,536 hosts"),
    ("too many ranges", "n[" + ",".join(["7"] * (256 * 1024 + 1)) + "]", "262,144 ranges"),
    ("5000-digit end", "n[1-" + "9" * 5000 + "]", "above 18446744073709551615"),
    ("5000-digit start and end", "n[" + "1" * 5000 + "-" + "2" * 5000 + "]", "above"),
    ("2**64", f"n[{2**64}]", "above"),
    ("100 zero-padded digits", "n[" + "0" * 99 + "1]", "longer than 64 digits"),
]


@pytest.mark.parametrize(("expr", "problem"), [(e, p) for _, e, p in HUGE], ids=[i for i, _, _ in HUGE])
def test_huge_hostlists_are_refused_by_counting(expr: str, problem: str) -> None:
    began = time.process_time()
    with pytest.raises(hostlist.HostlistError, match=re.escape(problem)):
        hostlist.expand(expr)
    assert time.process_time() - began < 5  # generous (shared CPUs); expanding would take minutes and GBs


@pytest.mark.parametrize(("expr", "count"), [
    ("n[" + ",".join(str(i) for i in range(256 * 1024)) + "]", 256 * 1024),  # Slurm 22.05's group limit
    ("n[1-65536]x[1-15]", 65536 * 15),
    ("n[18446744073709551614-18446744073709551615]", 2),  # the largest numbers Slurm holds
    ("n[" + "0" * 40 + "-" + "0" * 39 + "9]", 10),  # wide zero padding is fine
    ("n" + "7" * 5000, 1),  # a plain name of many digits is a name
])
def test_limits_that_slurm_allows_still_expand(expr: str, count: int) -> None:
    assert hostlist.count(expr) == count
    assert len(hostlist.expand(expr)) == count


@pytest.mark.parametrize("hosts", [
    ["n" + "1" * 5000, "n" + "1" * 4999 + "2"],
    [f"n{2**64 - 1}", f"n{2**64}"],
    ["x" + "0" * 70 + "1", "x" + "0" * 70 + "2"],
])
def test_compress_of_huge_numbers_round_trips(hosts: list[str]) -> None:
    assert hostlist.expand(hostlist.compress(hosts)) == hosts


@pytest.mark.parametrize("nodes", ["n[1-65536]x[1-100]", "gpu[1-" + "9" * 4500 + "]",
                                   "a[" + ",".join(["1-65536"] * 100) + "]"])
def test_huge_hostlist_in_cluster_yaml_is_a_field_error(
        nodes: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], stubs: Stubs) -> None:
    part = {**TEST_CLUSTER["partitions"][0], "nodes": nodes}
    path = cluster_file(tmp_path, partitions=[part])
    expect_refused(["submit", "smoke", "--cluster", str(path)], capsys, ["partitions.0.nodes"],
                   jobs=tmp_path / "jobs", stubs=stubs)


@pytest.mark.parametrize("expr", ["n[" + ",".join(["1-65536"] * 600) + "]", "n[1-" + "9" * 5000 + "]"])
def test_orch_hosts_refuses_huge_expressions(expr: str, capsys: pytest.CaptureFixture[str]) -> None:
    expect_refused(["hosts", expr], capsys, ["invalid hostlist"])


def test_orch_hosts_compress_of_a_name_with_5000_digits(capsys: pytest.CaptureFixture[str]) -> None:
    name = "n" + "1" * 5000
    assert main(["hosts", "--compress", name, "n2"]) == 0
    assert capsys.readouterr().out.strip() == f"{name},n2"
