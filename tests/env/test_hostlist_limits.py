"""hostlist at its edges: every size limit at N and N+1, prefixes that must never merge, padding."""

from __future__ import annotations

import subprocess

import pytest
from support import ORCH, clean_environ

from orchestrator.env import hostlist
from orchestrator.env.hostlist import HostlistError, compress, expand

R = hostlist.MAX_RANGE
G = hostlist.MAX_RANGES
P = hostlist.MAX_PREFIX_COUNT


def test_our_own_cap_and_slurms_range_limit() -> None:
    assert hostlist.MAX_HOSTS == 1_000_000
    assert R == 65_536  # Slurm's MAX_RANGE (64 * 1024 hosts in one lo-hi range)


@pytest.mark.parametrize(("expr", "count"), [
    (f"n[1-{R}]", R),
    (f"n[0-{R - 1}]", R),
    (f"n[5-{R + 4}]", R),
])
def test_one_range_at_the_limit(expr: str, count: int) -> None:
    assert len(expand(expr)) == count


@pytest.mark.parametrize("expr", [f"n[1-{R + 1}]", f"n[0-{R}]", f"a[1-{R + 1}]b[1]"])
def test_one_range_over_the_limit(expr: str) -> None:
    with pytest.raises(HostlistError, match=f"has more than {R:,} hosts"):
        expand(expr)


def test_ranges_per_group_at_and_over_the_limit() -> None:
    at = ",".join(str(i) for i in range(G))
    assert len(expand(f"n[{at}]")) == G
    with pytest.raises(HostlistError, match=f"more than {G:,} ranges in one bracket group"):
        expand(f"n[{at},{G}]")


def test_values_of_a_group_before_the_last_at_and_over_the_limit() -> None:
    half = P // 2
    at = f"a[1-{half},{half + 1}-{P}]b[1]"
    assert len(expand(at)) == P
    with pytest.raises(HostlistError, match="before the last one has more than"):
        expand(f"a[1-{half},{half + 1}-{P + 1}]b[1]")
    assert len(expand(f"b[1]a[1-{half},{half + 1}-{P + 1}]")) == P + 1  # the last group has no such limit


def test_total_hosts_at_and_over_the_cap() -> None:
    assert len(hostlist.expand_cached("t[1-1000]u[1-1000]")) == 1_000_000
    with pytest.raises(HostlistError, match="more than 1,000,000 hosts"):
        hostlist.expand_cached("t[1-1000]u[1-1001]")


def test_total_over_the_cap_across_items() -> None:
    items = ",".join(f"v{i}x[1-62500]" for i in range(16))  # 16 x 62,500 = 1,000,000
    assert len(hostlist.expand_cached(items)) == 1_000_000
    with pytest.raises(HostlistError, match="more than 1,000,000 hosts"):
        hostlist.expand_cached(items + ",w1")
    with pytest.raises(HostlistError, match="more than 1,000,000 hosts"):
        hostlist.expand_cached("w1," + items)


def test_total_over_the_cap_without_brackets() -> None:
    names = ",".join(["h"] * 1_000_000)
    assert len(hostlist.expand_cached(names)) == 1_000_000
    with pytest.raises(HostlistError, match="more than 1,000,000 hosts"):
        hostlist.expand_cached(names + ",h")


@pytest.mark.parametrize(("expr", "hosts"), [
    ("x[8-10]", ["x8", "x9", "x10"]),
    ("x[08-10]", ["x08", "x09", "x10"]),
    ("x[01-1]", ["x01"]),
    ("x[0]", ["x0"]),
    ("x[00]", ["x00"]),
    ("x[9,010]", ["x9", "x010"]),
    ("[1-3]", ["1", "2", "3"]),
    ("a[1-2]-b[3]", ["a1-b3", "a2-b3"]),
    ("a[1-2]b[1-2]", ["a1b1", "a1b2", "a2b1", "a2b2"]),
    ("a[1-2]b[1-2]c[1-2]", ["a1b1c1", "a1b1c2", "a2b1c1", "a2b1c2", "a1b2c1", "a1b2c2", "a2b2c1", "a2b2c2"]),
    ("plain", ["plain"]),
    ("a,b c\td\ne", ["a", "b", "c", "d", "e"]),
    (" a , b ", ["a", "b"]),
    ("", []),
    ("   ", []),
    ("a[1],b", ["a1", "b"]),
])
def test_expand_forms(expr: str, hosts: list[str]) -> None:
    assert expand(expr) == hosts


@pytest.mark.parametrize(("expr", "fragment"), [
    ("a,,b", "empty host name before the ','"),
    (",a", "empty host name before the ','"),
    ("a,", "empty host name after the last ','"),
    ("a, ,b", "empty host name before the ','"),
    ("n[1-2", "is never closed"),
    ("n1-2]", "has no matching '['"),
    ("n[[1]]", "nested '['"),
    ("n[1, 2]", "whitespace inside brackets"),
    ("n[]", "empty brackets"),
    ("n[1,]", "an empty range"),
    ("n[1-]", "is not N or N-M"),
    ("n[+1]", "is not N or N-M"),
    ("n[3-2]", "is reversed"),
    ("n[1]x", "text 'x' after the last ']'"),
])
def test_every_refusal(expr: str, fragment: str) -> None:
    with pytest.raises(HostlistError) as info:
        expand(expr)
    assert fragment in info.value.message
    assert info.value.hint


def test_messages_show_expressions_up_to_100_characters_whole() -> None:
    exact = "n" * 96 + "[2-1]"  # 101 characters
    with pytest.raises(HostlistError) as info:
        expand(exact[1:])  # 100 characters: shown whole
    assert repr(exact[1:]) in info.value.message
    with pytest.raises(HostlistError) as info:
        expand(exact)
    assert repr(exact) not in info.value.message and "..." in info.value.message


@pytest.mark.parametrize(("hosts", "expected"), [
    (["a1", "b2"], "a1,b2"),
    (["a1", "b2", "b3"], "a1,b[2-3]"),
    (["a1", "a2", "b3", "b4"], "a[1-2],b[3-4]"),
    (["a1", "ab2"], "a1,ab2"),
    (["ab1", "a2"], "ab1,a2"),
    (["n1", "n2", "nx3"], "n[1-2],nx3"),
    (["gpu1", "cpu2", "gpu3"], "gpu1,cpu2,gpu3"),
    (["n1", "n2", "m3", "n4"], "n[1-2],m3,n4"),
    (["n1", "n02"], "n[1,02]"),
    (["n1", "n3"], "n[1,3]"),
    (["n2", "n1"], "n[2,1]"),
    (["a", "a1"], "a,a1"),
    (["a1", "a"], "a1,a"),
    ([], ""),
])
def test_compress_never_merges_different_prefixes(hosts: list[str], expected: str) -> None:
    assert compress(hosts) == expected
    assert expand(expected) == hosts


@pytest.mark.parametrize(("args", "expected"), [
    (["--compress", "a1", "b2"], "a1,b2"),
    (["--compress", "n1", "n2", "m3"], "n[1-2],m3"),
    (["a[1-2],b3"], "a1\na2\nb3"),
])
def test_orch_hosts(args: list[str], expected: str) -> None:
    proc = subprocess.run([ORCH, "hosts", *args], capture_output=True, text=True, env=clean_environ(),
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == expected
