"""What each test costs in CPU, to find where the suite's time goes (docs/testing.md, "Where the suite's time goes").

On this project's 2-core machine the CI is CPU-bound from start to end, so a test's wall time says little (it
stretches with whatever runs beside it); its CPU does not. As a pytest plugin it writes one line per test to
``$ORCH_SUITE_CPU`` (tab-separated: the test's id, its wall seconds, the CPU-seconds of the test's own process and
of the children it waited for, ``getrusage``, and the CPU-seconds the whole machine spent meanwhile, from
``/proc/stat``: the one measure that sees a Slurm job's ranks, which are nobody's children; it is right only while
nothing else runs)::

    ORCH_SUITE_CPU=/tmp/first.tsv PYTHONPATH="$PWD/bench" .venv/bin/python -m pytest -p suite_cpu \
        --ignore=tests/e2e -n 2

Then ``python bench/suite_cpu.py /tmp/first.tsv [--machine] [--top N]`` prints the totals by folder, file and test
function (parameters folded together); ``--machine`` ranks by the machine's CPU instead of the process's.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import time
from collections import Counter
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ENV = "ORCH_SUITE_CPU"


def _own() -> float:
    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def _machine() -> float:
    """CPU-seconds every core has spent busy since boot (``/proc/stat``'s first line, less idle and iowait)."""
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(field) for field in stat.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, None]:
    out = os.environ.get(ENV)
    if not out:
        yield
        return
    wall, own, machine = time.monotonic(), _own(), _machine()
    yield  # setup, call and teardown
    row = f"{item.nodeid}\t{time.monotonic() - wall:.2f}\t{_own() - own:.2f}\t{_machine() - machine:.2f}\n"
    with open(out, "a", encoding="utf-8") as log:  # one short append per test: workers' lines never interleave
        log.write(row)


@dataclass(frozen=True)
class Row:
    test: str
    wall: float
    own: float
    machine: float


def read(lines: Iterable[str]) -> list[Row]:
    rows = []
    for line in lines:
        fields = line.rstrip("\n").split("\t")
        if len(fields) == 4:
            rows.append(Row(fields[0], float(fields[1]), float(fields[2]), float(fields[3])))
    return rows


def totals(rows: Iterable[Row], machine: bool = False) -> dict[str, Counter[str]]:
    """CPU-seconds by folder (``tests/local``), file, and test function (its parameters folded together)."""
    by: dict[str, Counter[str]] = {"folder": Counter(), "file": Counter(), "function": Counter()}
    for row in rows:
        cpu = row.machine if machine else row.own
        file = row.test.split("::", 1)[0]
        by["folder"]["/".join(file.split("/")[:2])] += cpu
        by["file"][file] += cpu
        by["function"][re.sub(r"\[.*\]$", "", row.test)] += cpu
    return by


def table(rows: list[Row], machine: bool = False, top: int = 20) -> str:
    by = totals(rows, machine)
    measure = "the machine's CPU-seconds" if machine else "CPU-seconds (the test's process and children)"
    out = [f"{len(rows)} tests, {sum(r.wall for r in rows):.0f} wall-seconds, "
           f"{sum(r.machine if machine else r.own for r in rows):.0f} {measure}"]
    for kind, counts in by.items():
        out += ["", f"| {kind} | CPU-seconds |", "| --- | --- |"]
        out += [f"| `{name}` | {cpu:.0f} |" for name, cpu in counts.most_common(top)]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Totals of a suite_cpu log, by folder, file and test function.")
    parser.add_argument("log", type=Path)
    parser.add_argument("--machine", action="store_true", help="rank by the machine's CPU (end-to-end tests)")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)
    print(table(read(args.log.read_text(encoding="utf-8").splitlines()), args.machine, args.top))


if __name__ == "__main__":
    main()
