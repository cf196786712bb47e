"""The pure parts of bench/recovery_slurm.py (``bench_recovery.py --growth ... --slurm``): the node counts it
takes, the nodes a job is kept off, the fault it injects, and the start-up figures and table it prints. The
timed runs are the benchmark's own (docs/benchmarks.md); nothing here runs a job."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest
from support import ROOT


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    return importlib.import_module("recovery_slurm")


def test_node_counts_are_two_or_more(bench: ModuleType) -> None:
    assert bench.counts("2,4,8") == [2, 4, 8]
    assert bench.counts(" 16, 2 ,") == [16, 2]
    for text in ("", "1,2", "2,0"):
        with pytest.raises(ValueError, match="node counts of 2 or more"):
            bench.counts(text)


def test_a_job_is_kept_on_the_first_nodes_in_natural_order(bench: ModuleType) -> None:
    names = ["node10", "node2", "node1", "node3", "node2"]  # sinfo -N lists a node once a partition
    assert bench.excluded(names, 2) == ["node3", "node10"]
    assert bench.excluded(names, 4) == []
    with pytest.raises(ValueError, match="5 nodes asked, the cluster has 4: bring it up with ORCH_SLURM_NODES"):
        bench.excluded(names, 5)


def test_the_kill_is_in_the_middle_of_epoch_two_of_the_first_attempt(bench: ModuleType) -> None:
    # forward passes counted from 0, the bucket-settling pass first: 1 + 16 steps of epoch 1 + 8
    assert bench.fault(2) == ["fault=kill", "fault_rank=2", "fault_step=25", "fault_restart=0"]


def test_startup_from_the_records(bench: ModuleType) -> None:
    hist = [{"batch_started": 110.0}]
    outcomes = [{"first_step": 118.5}, {"first_step": 121.0}]
    s = bench.startup_of(100.0, hist, outcomes, {"imports": 4.25, "process_group": 3.5})
    assert (s.queue, s.to_first_step, s.imports, s.rendezvous) == (10.0, 11.0, 4.25, 3.5)
    missing = bench.startup_of(100.0, hist, [{"first_step": 118.5}, {}], {})
    assert (missing.queue, missing.to_first_step, missing.imports, missing.rendezvous) == (10.0, None, None, None)
    assert bench.startup_of(100.0, [], outcomes, {}).queue is None


def test_startup_table(bench: ModuleType) -> None:
    rows = [(2, 2, bench.Startup(0.84, 9.114, 4.36, 4.005)), (16, 32, bench.Startup(1.0, None, None, 12.0))]
    lines = bench.startup_table(rows).splitlines()
    assert lines[0].split() == ["nodes", "ranks", "queue", "batch->every", "first", "step", "imports", "rendezvous"]
    assert lines[1].split() == ["2", "2", "0.84", "9.11", "4.36", "4.00"]
    assert lines[2].split() == ["16", "32", "1.00", "-", "-", "12.00"]
    assert len({len(line) for line in lines}) == 1  # the columns line up
