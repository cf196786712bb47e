"""Expand and compress Slurm hostlists, exactly as Slurm 22.05's ``scontrol show hostnames/hostlist``.

Grammar (checked against ``scontrol`` 22.05.8 and ``src/common/hostlist.c``)::

    hostlist := item ((',' | whitespace) item)*          whitespace = space, tab (and newline here)
    item     := text ('[' group ']' text)* ['[' group ']']   the last group must end the item
    group    := range (',' range)*
    range    := digits | digits '-' digits               ASCII digits only, lo <= hi

* Zero padding: a range's width is the length of its lower bound, so ``x[098-102]`` gives
  ``x098 .. x102`` and ``x[998-1002]`` gives ``x998 x999 x1000 x1001 x1002``.
* Several groups: ``rack[1-2]-node[01-02]`` is a cartesian product in Slurm's own order: the
  second-to-last group varies slowest, then the groups before it right to left, and the last group
  fastest (for two groups simply "leftmost slowest"; for three, ``a[1-2]b[1-2]c[1-2]`` gives
  ``a1b1c1 a1b1c2 a2b1c1 a2b1c2 a1b2c1 ...``).
* Order and duplicates are kept: ``n[4,1-2,2]`` is ``n4 n1 n2 n2``.
* Slurm 22.05's limits: a single range of more than 65,536 hosts, a group of more than 262,144
  (256 x 1024) ranges, and a group before the last one with more than 65,536 values are invalid.
* Bounded: the hosts are counted from the parsed ranges before any name is built, so an expression
  naming more than ``MAX_HOSTS`` hosts, or names of more than ``MAX_BYTES`` in all (a 3,000-character
  prefix times 65,536 hosts), is refused in milliseconds; a number in brackets above 2**64-1
  (Slurm clamps it) or longer than 64 digits is refused too, never reaching Python's int-string limit.
* Per call, not per expression: ``expand_all`` (``orch hosts A B C``) counts every expression first and
  holds ``MAX_HOSTS`` and ``MAX_BYTES`` for all of them together.

Refused here although Slurm silently guesses something (its guesses are never what was meant):
unbalanced or nested brackets, whitespace inside brackets, ``+`` signs, an open range ``n[1-]``,
an empty item between commas (``a,,b``), and more than ``MAX_HOSTS`` hosts in total.
A blank expression expands to no hosts, as in Slurm. A newline separates like a space (Slurm would
keep it inside a host name), so ``scontrol show hostnames`` output can be piped back in.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Sequence
from typing import Any

from orchestrator.errors import ConfigError

MAX_HOSTS = 1_000_000  # total expansion cap (ours: a typo like n[1-9999999] must not eat the memory)
MAX_RANGE = 64 * 1024  # Slurm 22.05 (MAX_RANGE): max hosts in one lo-hi range
MAX_RANGES = 256 * 1024  # Slurm 22.05 (hostlist.c MAX_RANGES): max comma-separated ranges in one group
MAX_DIGITS = 64  # digits of one host number, zero padding included (longer: a typo, not a host name)
MAX_NUMBER = 2**64 - 1  # Slurm keeps host numbers in an unsigned long and clamps larger ones silently
MAX_PREFIX_COUNT = 64 * 1024  # Slurm 22.05 (MAX_PREFIX_CNT): max values of a group that is not the last one
MAX_BYTES = 32 * 1024 * 1024  # the expanded names, one separator each (ours: long names x many hosts)

_DIGITS = "0123456789"
_SPACE = frozenset(" \t\n\r\f\v")
_SEPARATORS = _SPACE | {","}
_RANGE_RE = re.compile(r"([0-9]+)(?:-([0-9]+))?\Z")
_ITEM_RE = re.compile(r"((?:[^\[\], \t\n\r\f\v]|\[[^\[\] \t\n\r\f\v]*\])+)")
_GAP_RE = re.compile(r"[ \t\n\r\f\v]*,?[ \t\n\r\f\v]*")
_EDGE_GAP_RE = re.compile(r"[ \t\n\r\f\v]*")
_FORBIDDEN_IN_HOST = frozenset("[],") | _SPACE

_GRAMMAR_HINT = "write it like Slurm does, e.g. node[01-04,07],gpu[1-2]-ib[1-2]"


_Range = tuple[str, int, int]  # (start as written, start, end): the width is len(start as written)


class HostlistError(ConfigError, ValueError):
    """An invalid Slurm hostlist. Also a ValueError, so pydantic validators report it per field."""


def _error(expr: str, problem: str, hint: str = _GRAMMAR_HINT) -> HostlistError:
    shown = expr if len(expr) <= 100 else f"{expr[:70]}...{expr[-20:]}"
    return HostlistError(f"invalid hostlist {shown!r}: {problem}", hint=hint)


def expand(expr: str) -> list[str]:
    """All host names of a Slurm hostlist expression, in Slurm's order (a fresh list each call).

    Raises HostlistError (a ConfigError) for what Slurm calls invalid and for the forms listed in
    the module docstring. Cached: expanding the same nodelist for every rank costs one lookup.
    """
    return list(expand_cached(expr))


@functools.lru_cache(maxsize=256)
def expand_cached(expr: str) -> tuple[str, ...]:
    """Like ``expand`` but returns the cached, immutable tuple itself (do not convert per call).

    Counts first: every bracket group is parsed into (start, end) ranges and the number of hosts is
    computed from them, so an expression that would expand to more than ``MAX_HOSTS`` names is
    refused in milliseconds, before a single name is built.
    """
    parsed, _, _ = _measure(expr)
    if "[" not in expr:
        return tuple(item for item in parsed if isinstance(item, str))
    hosts: list[str] = []
    for entry in parsed:
        if isinstance(entry, str):
            hosts.append(entry)
        else:
            hosts.extend(_expand_item(*entry))
    return tuple(hosts)


def _measure(expr: str) -> tuple[list[tuple[str, list[str], list[list[_Range]]] | str], int, int]:
    """Parse ``expr``: its items, how many hosts and how many bytes of names (nothing expanded).

    Refuses as soon as the running totals pass ``MAX_HOSTS`` or ``MAX_BYTES``.
    """
    items = _split_items(expr)
    if "[" not in expr:
        if len(items) > MAX_HOSTS:
            raise _too_many(expr)
        return list(items), len(items), sum(len(item) + 1 for item in items)
    parsed: list[tuple[str, list[str], list[list[_Range]]] | str] = []
    total = size = 0
    for item in items:
        if "[" in item:
            texts, groups = _parse_item(expr, item)
            hosts_here = math.prod(_count(ranges) for ranges in groups)
            total += hosts_here
            size += _bytes(texts, groups, hosts_here)
            parsed.append((item, texts, groups))
        else:
            total += 1
            size += len(item) + 1
            parsed.append(item)
        if total > MAX_HOSTS:
            raise _too_many(expr)
        if size > MAX_BYTES:
            raise _error(expr, f"its host names would take more than {MAX_BYTES // (1024 * 1024)} MiB",
                         hint="check the host names and ranges for a typo (a long prefix times many hosts)")
    return parsed, total, size


def expand_all(exprs: Sequence[str]) -> list[str]:
    """The hosts of several expressions in turn, ``MAX_HOSTS`` and ``MAX_BYTES`` holding for all together.

    Every expression is counted before any is expanded, so thirty expressions of a million hosts
    each are refused like one of thirty million: the caps bound a call, not an item.
    """
    total = size = 0
    for expr in exprs:
        _, hosts_here, bytes_here = _measure(expr)
        total += hosts_here
        size += bytes_here
        if total > MAX_HOSTS or size > MAX_BYTES:
            raise HostlistError(
                f"the {len(exprs)} hostlists together name more than {MAX_HOSTS:,} hosts or "
                f"{MAX_BYTES // (1024 * 1024)} MiB of host names (the limit is for all of them, not each)",
                hint="expand them in several calls, or check the ranges for a typo (an extra digit?)")
    return [host for expr in exprs for host in expand_cached(expr)]


def count(expr: str) -> int:
    """How many hosts ``expr`` names, without building them (the same checks as ``expand``)."""
    total = 0
    for item in _split_items(expr):
        if "[" in item:
            total += math.prod(_count(ranges) for ranges in _parse_item(expr, item)[1])
        else:
            total += 1
    return total


def _bytes(texts: list[str], groups: list[list[_Range]], hosts: int) -> int:
    """At most how many bytes the names of one item take (a separator each), without building them."""
    size = hosts * (sum(len(t) for t in texts) + 1)
    for ranges in groups:
        widest = max(max(len(lo_text), len(str(hi))) for lo_text, _, hi in ranges)
        size += hosts * widest
    return size


def _too_many(expr: str) -> HostlistError:
    return _error(expr, f"it expands to more than {MAX_HOSTS:,} hosts",
                  hint="check the ranges for a typo (an extra digit?)")


def _split_items(expr: str) -> list[str]:
    """Split at commas and whitespace outside brackets; check bracket balance and empty items."""
    # Fast path (C regex): items and the gaps between them; a well-formed gap is whitespace with
    # at most one comma (none before the first item or after the last). Anything else is
    # rescanned character by character to say exactly what is wrong.
    parts = _ITEM_RE.split(expr)
    gaps = parts[0::2]
    if (_EDGE_GAP_RE.fullmatch(gaps[0]) and _EDGE_GAP_RE.fullmatch(gaps[-1])
            and all(_GAP_RE.fullmatch(gap) for gap in gaps[1:-1])):
        return parts[1::2]
    return _scan_items(expr)


def _scan_items(expr: str) -> list[str]:
    items: list[str] = []
    start = 0
    depth = 0
    commas = 0  # commas in the current run of separators
    seen_item = False
    for i, ch in enumerate(expr):
        if depth:
            if ch == "]":
                depth = 0
            elif ch == "[":
                raise _error(expr, f"nested '[' at position {i}",
                             hint="brackets cannot nest; use one group per number, e.g. rack[1-2]-node[1-4]")
            elif ch in _SPACE:
                raise _error(expr, f"whitespace inside brackets at position {i}",
                             hint="remove the spaces inside [...], e.g. n[1-2,5]")
            continue
        if ch in _SEPARATORS:
            if start < i:
                items.append(expr[start:i])
                seen_item = True
                commas = 0
            if ch == ",":
                commas += 1
                if commas > 1 or not seen_item:
                    raise _error(expr, f"empty host name before the ',' at position {i}",
                                 hint="remove the extra comma")
            start = i + 1
        elif ch == "[":
            depth = 1
        elif ch == "]":
            raise _error(expr, f"']' at position {i} has no matching '['",
                         hint="balance the brackets, e.g. n[1-4]")
    if depth:
        raise _error(expr, f"'[' at position {expr.rindex('[')} is never closed",
                     hint="close the bracket, e.g. n[1-4]")
    if start < len(expr):
        items.append(expr[start:])
    elif commas:
        raise _error(expr, "empty host name after the last ','", hint="remove the trailing comma")
    return items


def _count(ranges: list[_Range]) -> int:
    return sum(hi - lo + 1 for _, lo, hi in ranges)


def _parse_item(expr: str, item: str) -> tuple[list[str], list[list[_Range]]]:
    """``text0[g1]text1[g2]...`` -> the texts and each group's ranges (nothing expanded yet)."""
    # item = text0 [g1] text1 [g2] ... [gk] textk ; str.split keeps that alternation
    parts = re.split(r"\[([^\]]*)\]", item)
    texts, groups = parts[0::2], parts[1::2]
    if texts[-1]:
        raise _error(expr, f"text {texts[-1]!r} after the last ']' in {item!r}",
                     hint="Slurm (22.05) allows no suffix after the last bracket group; "
                          "write those names out, e.g. n1-ib,n2-ib")
    ranges = [_group_ranges(expr, group) for group in groups]
    for group in ranges[:-1]:
        if _count(group) > MAX_PREFIX_COUNT:
            raise _error(expr, f"a bracket group before the last one has more than {MAX_PREFIX_COUNT:,} "
                               "values (Slurm's limit)", hint="split the expression into several items")
    return texts, ranges


def _expand_item(item: str, texts: list[str], groups: list[list[_Range]]) -> list[str]:
    values = [_group_values(ranges) for ranges in groups]
    if len(values) == 1:
        prefix = texts[0]
        return [prefix + v for v in values[0]] if prefix else values[0]
    if len(values) == 2:  # the common rack[..]-node[..] form, leftmost group slowest
        head, middle = texts[0], texts[1]
        return [f"{head}{a}{middle}{b}" for a in values[0] for b in values[1]]
    # Slurm's nesting: groups k-1, k-2, ..., 1 from slowest to faster, then group k fastest.
    k = len(values)
    order = [*range(k - 2, -1, -1), k - 1]
    hosts: list[str] = []
    for combo in itertools.product(*(values[j] for j in order)):
        chosen = [""] * k
        for j, value in zip(order, combo, strict=True):
            chosen[j] = value
        hosts.append("".join(itertools.chain.from_iterable(zip(texts[:-1], chosen, strict=True))))
    return hosts


def _group_ranges(expr: str, group: str) -> list[_Range]:
    if not group:
        raise _error(expr, "empty brackets '[]'", hint="put a number or a range inside, e.g. n[1-4]")
    if group.count(",") >= MAX_RANGES:
        raise _error(expr, f"more than {MAX_RANGES:,} ranges in one bracket group (Slurm's limit)",
                     hint="merge consecutive numbers into ranges, e.g. n[1-100]")
    out: list[_Range] = []
    for text in group.split(","):
        match = _RANGE_RE.match(text)
        if match is None:
            what = "an empty range (extra ',')" if not text else f"range {_short(text)!r} is not N or N-M"
            raise _error(expr, f"{what} in [{_short(group)}]",
                         hint="use decimal numbers only, e.g. n[1-4,7,09-11]")
        lo_text, hi_text = match.group(1), match.group(2)
        lo = _number(lo_text)
        hi = lo if hi_text is None else _number(hi_text)
        if lo is None or hi is None:
            raise _error(expr, f"range {_short(text)!r} has a number above {MAX_NUMBER} or longer than "
                               f"{MAX_DIGITS} digits", hint="Slurm keeps host numbers in 64 bits (and would "
                                                         "silently clamp this one); check for a typo")
        if lo > hi:
            raise _error(expr, f"range {text!r} is reversed (start > end)",
                         hint=f"write it ascending: {hi_text}-{lo_text}")
        if hi - lo + 1 > MAX_RANGE:
            raise _error(expr, f"range {text!r} has more than {MAX_RANGE:,} hosts (Slurm's limit)",
                         hint="split it into several ranges, or check for a typo")
        out.append((lo_text, lo, hi))
    return out


def _group_values(ranges: list[_Range]) -> list[str]:
    out: list[str] = []
    for lo_text, lo, hi in ranges:
        width = len(lo_text)
        numbers = map(str, range(lo, hi + 1))
        out.extend(numbers if width == 1 else (n.zfill(width) for n in numbers))
    return out


def _number(digits: str) -> int | None:
    """The value of a host number, or None beyond what Slurm can hold (never near Python's int-string limit)."""
    if len(digits) > MAX_DIGITS:
        return None
    value = int(digits)
    return value if value <= MAX_NUMBER else None


def _short(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:25]}...{text[-10:]}"


def compress(hosts: Sequence[str]) -> str:
    """The Slurm ranged form of ``hosts``, keeping their order (``expand(compress(h)) == list(h)``).

    Matches ``scontrol show hostlist``: consecutive numbers with the same prefix and compatible
    zero padding become ranges, and consecutive ranges with the same prefix share one bracket:
    ``n1,n2,n3,n7,m1`` -> ``n[1-3,7],m1``; unsorted input stays unsorted (``n[3,1-2]``).
    """
    # One run per range: [prefix, first digits, last digits, last number]; digits "" = no number.
    runs: list[list[Any]] = []
    last: list[Any] = ["", "", "", -2]
    for host in hosts:
        _check_host(host)
        prefix = host.rstrip(_DIGITS)
        digits = host[len(prefix):]
        number = _number(digits) if digits else None
        if number is None:  # no number, or one no range can hold (expand refuses it): the name as is
            prefix, digits = host, ""
        if number is not None:
            # joins iff str(number).zfill(width) == digits: same width, or wider without leading zero
            if (last[1] and number == last[3] + 1 and last[0] == prefix
                    and (len(digits) == len(last[1]) or (len(digits) > len(last[1]) and digits[0] != "0"))):
                last[2], last[3] = digits, number
                continue
            last = [prefix, digits, digits, number]
        else:
            last = [host, "", "", -2]
        runs.append(last)
    out: list[str] = []
    i = 0
    while i < len(runs):
        prefix, first, final, _ = runs[i]
        j = i + 1
        if not first:
            out.append(prefix)
        else:
            while j < len(runs) and runs[j][1] and runs[j][0] == prefix:
                j += 1
            if j == i + 1 and first == final:
                out.append(prefix + first)
            else:
                ranges = (r[1] if r[1] == r[2] else f"{r[1]}-{r[2]}" for r in runs[i:j])
                out.append(f"{prefix}[{','.join(ranges)}]")
        i = j
    return ",".join(out)


def _check_host(host: str) -> None:
    if not host:
        raise HostlistError("cannot compress an empty host name", hint="drop empty entries from the list")
    bad = _FORBIDDEN_IN_HOST.intersection(host)
    if bad:
        raise HostlistError(f"host name {host!r} contains {''.join(sorted(bad))!r}",
                            hint="host names cannot contain brackets, commas or whitespace")
