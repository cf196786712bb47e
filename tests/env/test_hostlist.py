"""Slurm hostlists: the expected values below are what `scontrol show hostnames` / `show hostlist`
of Slurm 22.05.8 print for the same input (recorded from the real binary)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.env.hostlist import HostlistError, compress, expand, expand_cached
from orchestrator.errors import ConfigError

EXPAND_CASES: list[tuple[str, list[str]]] = [
    ("node1", ["node1"]),
    ("n[1-3]", ["n1", "n2", "n3"]),
    ("n[1-3,7,09-11]", ["n1", "n2", "n3", "n7", "n09", "n10", "n11"]),
    ("gpu[001-003]", ["gpu001", "gpu002", "gpu003"]),
    # zero padding: the width is the lower bound's, numbers may outgrow it
    ("x[998-1002]", ["x998", "x999", "x1000", "x1001", "x1002"]),
    ("x[098-102]", ["x098", "x099", "x100", "x101", "x102"]),
    ("n[9-11]", ["n9", "n10", "n11"]),
    ("n[1-010]", ["n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10"]),
    ("n[01-1]", ["n01"]),
    ("n[00-02]", ["n00", "n01", "n02"]),
    ("n[0-0]", ["n0"]),
    ("n[03]", ["n03"]),
    ("[1-3]", ["1", "2", "3"]),
    # several groups: scontrol's order
    ("rack[1-2]-node[01-02]", ["rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"]),
    ("n[1-2][3-4]", ["n13", "n14", "n23", "n24"]),
    ("r[1-2]-[3-4]", ["r1-3", "r1-4", "r2-3", "r2-4"]),
    ("n[1-2,4-5]-[1-2]", ["n1-1", "n1-2", "n2-1", "n2-2", "n4-1", "n4-2", "n5-1", "n5-2"]),
    ("a[1-2]b[1-2]c[1-2]",
     ["a1b1c1", "a1b1c2", "a2b1c1", "a2b1c2", "a1b2c1", "a1b2c2", "a2b2c1", "a2b2c2"]),
    ("a[1-2]b[3]c[4-5]", ["a1b3c4", "a1b3c5", "a2b3c4", "a2b3c5"]),
    # mixed prefixes, order and duplicates kept
    ("a[1-2],b3,c[01-02]", ["a1", "a2", "b3", "c01", "c02"]),
    ("n[4,1-2,2]", ["n4", "n1", "n2", "n2"]),
    ("n[1-2],n[1-2]", ["n1", "n2", "n1", "n2"]),
    ("a,a,b", ["a", "a", "b"]),
    ("n1,n1", ["n1", "n1"]),
    ("n[1-2],[3-4]", ["n1", "n2", "3", "4"]),
    # whitespace separates like a comma; leading/trailing whitespace is ignored (Slurm splits at
    # space and tab only and keeps a newline inside the name: newline cases are ours, for piping)
    ("a b", ["a", "b"]),
    (" a , b ", ["a", "b"]),
    ("a\tb\nc", ["a", "b", "c"]),
    ("node[1-2]\n", ["node1", "node2"]),
    ("a b[1-2]", ["a", "b1", "b2"]),
    ("a;b", ["a;b"]),
    ("", []),
    ("   ", []),
]

# (expression, fragment of the message): what Slurm 22.05 itself calls "Invalid hostlist".
SLURM_INVALID: list[tuple[str, str]] = [
    ("n[]", "empty brackets"),
    ("n[5-3]", "range '5-3' is reversed"),
    ("n[2-1,1-2]", "range '2-1' is reversed"),
    ("n[a-b]", "range 'a-b' is not N or N-M"),
    ("n[1-b]", "range '1-b' is not N or N-M"),
    ("n[1x2]", "range '1x2' is not N or N-M"),
    ("n[-1]", "range '-1' is not N or N-M"),
    ("n[1--3]", "range '1--3' is not N or N-M"),
    ("n[1-2-3]", "range '1-2-3' is not N or N-M"),
    ("n[1,,2]", "empty range"),
    ("n[,1]", "empty range"),
    ("n[1,]", "empty range"),
    ("n[[1-2]]", "nested '['"),
    ("n[1-2]x", "text 'x' after the last ']'"),
    ("n[1-2]-ib", "text '-ib' after the last ']'"),
    ("rack[1-2]-node[01-02]-ib", "after the last ']'"),
    ("n[1-2]]", "']' at position 6 has no matching '['"),
    ("n[1-65537]", "more than 65,536 hosts"),
    ("n[0-65536]", "more than 65,536 hosts"),
    ("n[1-32768,1-32769]x[1]", "before the last one has more than 65,536 values"),
]
# Refused here; Slurm silently guesses something (e.g. 'a,,b' -> a b, 'n[1-2' -> 'n]', 'n[ 1-2]' -> n01 n02).
GUESSED_BY_SLURM: list[tuple[str, str]] = [
    ("a,,b", "empty host name before the ','"),
    (",a", "empty host name"),
    ("a, ,b", "empty host name"),
    ("x[1-2],", "empty host name after the last ','"),
    (",", "empty host name"),
    ("n[1-2", "'[' at position 1 is never closed"),
    ("n1-2]", "']' at position 4 has no matching '['"),
    ("n][", "no matching '['"),
    ("n[ 1-2]", "whitespace inside brackets"),
    ("n[1-2 ]", "whitespace inside brackets"),
    ("n[1-]", "range '1-' is not N or N-M"),
    ("n[+1-3]", "range '+1-3' is not N or N-M"),
    ("n[\u0661-3]", "is not N or N-M"),  # ARABIC-INDIC DIGIT ONE: decimal to Python, not to Slurm
    # our total cap (Slurm itself fails at 4 billion without a message)
    ("n[1-65536]x[1-16]", "more than 1,000,000 hosts"),
    ("a[1-1000]b[1-1000]c[1-2]", "more than 1,000,000 hosts"),
]
INVALID_CASES = SLURM_INVALID + GUESSED_BY_SLURM


@pytest.mark.parametrize(("expr", "hosts"), EXPAND_CASES)
def test_expand_matches_scontrol(expr: str, hosts: list[str]) -> None:
    assert expand(expr) == hosts


@pytest.mark.parametrize(("expr", "fragment"), INVALID_CASES)
def test_invalid_hostlists_are_refused_with_a_reason(expr: str, fragment: str) -> None:
    with pytest.raises(HostlistError) as info:
        expand(expr)
    assert fragment in info.value.message
    assert info.value.message.startswith(f"invalid hostlist {expr!r}")
    assert info.value.hint


def test_long_expressions_are_shortened_in_messages() -> None:
    expr = ",".join(f"host{i}" for i in range(1000)) + ",bad]"
    with pytest.raises(HostlistError) as info:
        expand(expr)
    assert len(info.value.message) < 200
    assert "no matching '['" in info.value.message


def test_hostlist_error_is_a_config_error_and_a_value_error() -> None:
    with pytest.raises(ConfigError):
        expand("n[5-3]")
    with pytest.raises(ValueError, match="reversed"):  # so pydantic validators report it per field
        expand("n[5-3]")


def test_three_and_four_groups_follow_slurms_nesting() -> None:
    # second-to-last group slowest, then the earlier ones right to left, the last one fastest
    hosts = expand("a[1,2]b[1,2]c[1,2]d[1-2]")
    assert hosts[:8] == ["a1b1c1d1", "a1b1c1d2", "a2b1c1d1", "a2b1c1d2",
                         "a1b2c1d1", "a1b2c1d2", "a2b2c1d1", "a2b2c1d2"]
    assert hosts[8] == "a1b1c2d1"
    assert len(hosts) == 16 == len(set(hosts))


def test_slurm_limits_are_inclusive() -> None:
    assert len(expand("n[1-65536]")) == 65536
    assert len(expand("n[1-32768,1-32768]x[1]")) == 65536
    assert len(expand("n[1-40000,40001-80000]")) == 80000  # the last group has no total limit
    assert len(expand("n[1-60000],m[1-60000]")) == 120000


def test_expand_is_cached_and_hands_out_copies() -> None:
    first = expand("cache[1-5000]")
    assert expand_cached("cache[1-5000]") is expand_cached("cache[1-5000]")
    first.append("mutated")
    assert expand("cache[1-5000]")[-1] == "cache5000"
    assert isinstance(expand_cached("cache[1-5000]"), tuple)


def test_ten_thousand_hosts() -> None:
    hosts = expand("node[00001-10000]")
    assert len(hosts) == 10000
    assert hosts[0] == "node00001"
    assert hosts[-1] == "node10000"
    assert compress(hosts) == "node[00001-10000]"
    listed = ",".join(f"h{i}" for i in range(10000))
    assert expand(listed) == [f"h{i}" for i in range(10000)]


COMPRESS_CASES: list[tuple[list[str], str]] = [
    (["n1", "n2", "n3"], "n[1-3]"),
    (["n1"], "n1"),
    (["n01", "n02", "n10"], "n[01-02,10]"),
    (["n9", "n10"], "n[9-10]"),
    (["n08", "n09", "n10"], "n[08-10]"),
    (["n098", "n099", "n100"], "n[098-100]"),
    (["n998", "n999", "n1000"], "n[998-1000]"),
    (["n0998", "n0999", "n1000"], "n[0998-1000]"),
    (["n08", "n9"], "n[08,9]"),
    (["n9", "n010"], "n[9,010]"),
    (["n007", "n008", "n9"], "n[007-008,9]"),
    (["n1", "n01"], "n[1,01]"),
    (["n3", "n1", "n2"], "n[3,1-2]"),
    (["n1", "n1", "n2"], "n[1,1-2]"),
    (["n1", "n2", "n1", "n2"], "n[1-2,1-2]"),
    (["n1", "n3", "n5"], "n[1,3,5]"),
    (["n10", "n9"], "n[10,9]"),
    (["n1", "n2", "n4", "n5", "n3"], "n[1-2,4-5,3]"),
    (["n1", "n2", "x", "n3", "n4"], "n[1-2],x,n[3-4]"),
    (["n1", "n2", "n3", "x1", "x2", "n4"], "n[1-3],x[1-2],n4"),
    (["n1", "n2", "m1", "n3"], "n[1-2],m1,n3"),
    (["rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"],
     "rack1-node[01-02],rack2-node[01-02]"),
    (["a1b1c1", "a1b1c2", "a2b1c1"], "a1b1c[1-2],a2b1c1"),
    (["a", "b", "c"], "a,b,c"),
    (["n", "n"], "n,n"),
    (["x", "x1"], "x,x1"),
    (["1a", "1b"], "1a,1b"),
    (["n1-2"], "n1-2"),
    (["n1x2", "n1x3"], "n1x[2-3]"),
    (["12", "13"], "[12-13]"),
    (["7", "8", "9", "11"], "[7-9,11]"),
    (["0", "00", "000"], "[0,00,000]"),
    (["n12345678901234567890", "n12345678901234567891"],
     "n[12345678901234567890-12345678901234567891]"),
    ([], ""),
]


@pytest.mark.parametrize(("hosts", "expected"), COMPRESS_CASES)
def test_compress_matches_scontrol_show_hostlist(hosts: list[str], expected: str) -> None:
    assert compress(hosts) == expected
    assert expand(expected) == hosts


@pytest.mark.parametrize(("host", "fragment"), [
    ("", "empty host name"), ("n[1]", "'[]'"), ("a,b", "','"), ("a b", "' '"), ("a\tb", "'\\t'"),
])
def test_compress_refuses_names_a_hostlist_cannot_carry(host: str, fragment: str) -> None:
    with pytest.raises(HostlistError) as info:
        compress(["ok1", host])
    assert fragment in info.value.message


_prefix = st.text(alphabet="ab-._x", max_size=4)
_digits = st.one_of(
    st.just(""),
    st.builds(lambda n, w: f"{n:0{w}d}", st.integers(0, 1100), st.integers(0, 5)),
)
_host = st.builds(lambda p, d: p + d, _prefix, _digits).filter(bool)


@settings(max_examples=400, deadline=None)
@given(st.lists(_host, max_size=40))
def test_round_trip_for_any_host_list(hosts: list[str]) -> None:
    text = compress(hosts)
    assert expand(text) == hosts
    assert compress(expand(text)) == text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40), st.integers(0, 4)),
                min_size=1, max_size=6))
def test_round_trip_from_ranges(ranges: list[tuple[int, int, int]]) -> None:
    expr = "n[" + ",".join(f"{lo:0{w}d}-{lo + n}" for lo, n, w in ranges) + "]"
    hosts = expand(expr)
    assert len(hosts) == sum(n + 1 for _, n, _ in ranges)
    assert expand(compress(hosts)) == hosts
    assert expand(compress(sorted(hosts))) == sorted(hosts)


@pytest.mark.slurm
def test_same_answers_as_the_real_scontrol(tmp_path: Path) -> None:
    """Differential check against the installed Slurm client (needs only a parsable slurm.conf)."""
    scontrol = shutil.which("scontrol")
    if scontrol is None:
        pytest.skip("scontrol is not installed (apt-get install slurm-client)")
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=probe\nSlurmctldHost=localhost\nNodeName=n1 CPUs=1\n"
                    "PartitionName=p Nodes=ALL\n")
    env = {"SLURM_CONF": str(conf), "PATH": "/usr/bin:/bin"}

    def show(kind: str, arg: str) -> str:
        out = subprocess.run([scontrol, "show", kind, arg], capture_output=True, text=True, env=env,
                             timeout=20, check=True)
        return out.stdout + out.stderr

    for expr, hosts in EXPAND_CASES:
        if expr.strip() and not expr.startswith(" ") and "\n" not in expr:
            assert show("hostnames", expr).split() == hosts, expr
    for expr, _ in SLURM_INVALID:
        assert "Invalid hostlist" in show("hostnames", expr), expr
    for hosts, expected in COMPRESS_CASES:
        if hosts:
            assert show("hostlist", ",".join(hosts)).strip() == expected, hosts


def _items_or_error(split: object, expr: str) -> object:
    try:
        return split(expr)  # type: ignore[operator]
    except HostlistError as exc:
        return ("error", exc.message)


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet="n1-[], \t\n", max_size=14))
def test_fast_tokenizer_agrees_with_the_character_scanner(expr: str) -> None:
    from orchestrator.env.hostlist import _scan_items, _split_items

    assert _items_or_error(_split_items, expr) == _items_or_error(_scan_items, expr)
