"""bench/suite_cpu.py: its log lines read back and its totals by folder, file and test function, and the plugin
writing one line per test in a real pytest run."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from support import ROOT, clean_environ


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    return importlib.import_module("suite_cpu")


LOG = [
    "tests/local/test_runner.py::test_a[x]\t10.0\t6.0\t12.0",
    "tests/local/test_runner.py::test_a[y]\t9.0\t5.0\t11.0",
    "tests/local/test_other.py::test_b\t1.0\t0.5\t0.5",
    "tests/e2e/test_e2e_script.py::test_c\t28.0\t1.0\t54.0",
    "a line cut short\t1.0",
]


def test_totals_fold_parameters_and_rank_by_the_measure_asked(bench: ModuleType) -> None:
    rows = bench.read(LOG)
    assert len(rows) == 4  # the cut line is left out
    own = bench.totals(rows)
    assert own["function"]["tests/local/test_runner.py::test_a"] == 11.0
    assert own["folder"].most_common(1) == [("tests/local", 11.5)]
    machine = bench.totals(rows, machine=True)
    assert machine["folder"].most_common(1) == [("tests/e2e", 54.0)]  # the ranks Slurm started
    text = bench.table(rows, machine=True, top=1)
    assert text.splitlines()[0] == "4 tests, 48 wall-seconds, 78 the machine's CPU-seconds"
    assert "| `tests/e2e/test_e2e_script.py::test_c` | 54 |" in text and "test_a" not in text


def test_the_plugin_writes_one_line_per_test(tmp_path: Path) -> None:
    (tmp_path / "test_two.py").write_text("def test_one():\n    pass\n\ndef test_two():\n    sum(range(10**6))\n")
    log = tmp_path / "cpu.tsv"
    env = clean_environ(PYTHONPATH=os.pathsep.join([str(ROOT / "bench"), str(ROOT)]), ORCH_SUITE_CPU=str(log))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "suite_cpu", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "test_two.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = log.read_text().splitlines()
    assert [line.split("\t")[0] for line in lines] == ["test_two.py::test_one", "test_two.py::test_two"]
    assert all(float(value) >= 0 for line in lines for value in line.split("\t")[1:])
