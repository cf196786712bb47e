"""Issue 23, class 4: inputs bounded before any work is done.

- ``orch run --nproc``: at most :func:`max_local_ranks` (4 per core, at least 8, at most 1024), refused
  before a single process starts; spawning stops at SIGTERM; a spawn refused by the process limit
  (``ulimit -u``, as a second user) stops the ranks already started and is one clear error.
- hostlists: the bytes of the names are bounded (a long prefix times many hosts), in ``orch hosts``,
  ``orch env``, cluster.yaml partitions and ``--nodelist``: refused in well under a second.
- integers: ASCII digits only, length-capped (spec/numbers.parse_int, every type=int option);
  floats from records never overflow (to_float).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import ORCH, TEST_CLUSTER, clean_environ

from orchestrator.cli import main
from orchestrator.env import hostlist
from orchestrator.errors import ConfigError
from orchestrator.local.plan import check_nproc
from orchestrator.local.runner import LocalRunner
from orchestrator.spec.numbers import (
    MAX_LOCAL_RANKS,
    MIN_LOCAL_RANK_LIMIT,
    ascii_float,
    ascii_int,
    max_local_ranks,
    parse_int,
    path_problem,
    to_float,
)

FAST = 2.0  # seconds: what a refusal may take at most (the probe ran for minutes)


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], *names: str) -> str:
    start = time.monotonic()
    code = main(argv)
    took = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("orch: error:") == 1 and "Traceback" not in err, err
    assert took < FAST, took
    for name in names:
        assert name in err, (name, err)
    return err


# -- --nproc -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("cpus, limit", [(1, 8), (2, 8), (3, 12), (16, 64), (255, 1020), (256, 1024), (10_000, 1024)])
def test_the_local_rank_limit(cpus: int, limit: int) -> None:
    assert max_local_ranks(cpus) == limit
    check_nproc(limit, cpus)
    with pytest.raises(ConfigError, match="more than this machine can run"):
        check_nproc(limit + 1, cpus)
    assert MIN_LOCAL_RANK_LIMIT <= limit <= MAX_LOCAL_RANKS


@pytest.mark.parametrize("value", ["100000", "1025", "99999999999999999999", "123456789012345678901234567890"])
def test_orch_run_refuses_too_many_ranks_before_anything_starts(value: str, tmp_path: Path, clean_env: Any,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    jobs = tmp_path / "jobs"
    err = refused(["run", "smoke", "--nproc", value, "--job-root", str(jobs)], capsys, "--nproc")
    assert "at most" in err
    assert not jobs.exists()  # no folder, no process


@pytest.mark.parametrize("value", ["١٢", "²", "１２", "1" * 41, "0x10", "1e3", " ", "--1"])
def test_non_ascii_or_overlong_numbers_are_no_numbers(value: str, tmp_path: Path, clean_env: Any,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(["run", "smoke", f"--nproc={value}", "--job-root", str(tmp_path / "j")], capsys, "--nproc")
    assert "invalid int value" in err or "at least 1" in err


@pytest.mark.parametrize("argv", [["list", "--limit", "٣"], ["status", "--limit", "9" * 50], ["logs", "1", "-n", "²"],
                                  ["logs", "1", "--interval", "١"], ["logs", "1", "--interval", "1e400"]])
def test_every_number_option_is_ascii_and_bounded(argv: list[str], clean_env: Any,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    refused(argv, capsys, "invalid")


@given(st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_parse_int_takes_ascii_digits_only(text: str) -> None:
    value = parse_int(text, signed=True)
    stripped = text.strip()
    if value is not None:
        assert stripped.lstrip("+-").isascii() and stripped.lstrip("+-").isdigit()
        assert int(stripped) == value
    elif stripped.isascii() and stripped.isdigit() and len(stripped) <= 40:
        pytest.fail(f"{text!r} is a number")


@given(st.integers(min_value=-(10**400), max_value=10**400) | st.floats(allow_nan=True) | st.booleans() | st.none())
@settings(max_examples=300, deadline=None)
def test_to_float_never_raises(value: object) -> None:
    result = to_float(value)
    assert result is None or isinstance(result, float)


@pytest.mark.parametrize("text", ["1", "-3", "+7", "0012"])
def test_ascii_int_and_float_take_plain_numbers(text: str) -> None:
    assert ascii_int(text) == int(text)
    assert ascii_float(text) == float(text)


@pytest.mark.parametrize("text", ["x" * 4096, "a/" + "b" * 256, "a\0b", "é" * 2100])
def test_paths_longer_than_linux_takes_are_named(text: str) -> None:
    assert path_problem(text) is not None


# -- spawning stops --------------------------------------------------------------------------------

def _sleeper(tmp_path: Path) -> Path:
    """A stand-in python for the ranks: records its pid, sleeps until signalled."""
    script = tmp_path / "fake-python"
    script.write_text(f"#!/bin/sh\ncase \"$*\" in *orchestrator.runtime.launch*) ;; "
                      f"*) exec {sys.executable} \"$@\";; esac\n"
                      f"echo $$ >> {tmp_path / 'started'}\nexec sleep 60\n")  # the watchdog: the real python
    script.chmod(0o755)
    return script


def test_spawning_stops_at_sigterm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    real_popen = subprocess.Popen
    calls: list[int] = []

    def popen(argv: Any, *args: Any, **kwargs: Any) -> Any:
        if "orchestrator.runtime.launch" in argv:
            calls.append(1)
            if len(calls) == 3:  # SIGTERM arrives while orch run is starting the third of 8 ranks
                os.kill(os.getpid(), signal.SIGTERM)
        return real_popen(argv, *args, **kwargs)

    monkeypatch.setattr("orchestrator.local.runner.subprocess.Popen", popen)
    runner = LocalRunner(job_dir=job_dir, nproc=8, python=str(_sleeper(tmp_path)), grace=1.0)
    start = time.monotonic()
    result = runner.run()
    assert time.monotonic() - start < 30
    assert result.status == "interrupted" and result.exit_code == 128 + signal.SIGTERM
    assert len(calls) == 3, calls  # not one rank more
    for pid in (tmp_path / "started").read_text().split():
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


PIDS_CGROUP = Path("/sys/fs/cgroup/pids")  # cgroup v1; the v2 mount has pids.max in every group too
CGROUP_V2 = Path("/sys/fs/cgroup/cgroup.controllers")


def _pids_group(name: str) -> Path | None:
    """A fresh pids cgroup (v1 or v2), or None where this test may not make one."""
    base = PIDS_CGROUP if PIDS_CGROUP.is_dir() else Path("/sys/fs/cgroup") if CGROUP_V2.exists() else None
    if base is None:
        return None
    group = base / name
    try:
        group.mkdir()
        (group / "pids.max").write_text("8\n")
    except OSError:
        return None
    return group


@pytest.mark.parametrize("limit", [4, 6])
def test_a_spawn_refused_by_the_process_limit_is_one_clear_error(limit: int, tmp_path: Path) -> None:
    """Under a pids cgroup (the kernel refuses fork with EAGAIN, as under ``ulimit -u``): orch run stops
    the ranks it started, starts no more, and says why (exit 2, no traceback)."""
    group = _pids_group(f"orch-h23-{os.getpid()}-{limit}")
    if group is None:
        pytest.skip("no pids cgroup can be made here")
    fake = tmp_path / "fake-python"
    fake.write_text(f"#!/bin/sh\ncase \"$*\" in *orchestrator.runtime.launch*) exec sleep 60;; esac\n"
                    f"exec {sys.executable} \"$@\"\n")
    fake.chmod(0o755)
    code = ("import sys; from pathlib import Path; from orchestrator.local.runner import LocalRunner\n"
            "from orchestrator.errors import OrchError\n"
            f"r = LocalRunner(job_dir=Path({str(tmp_path / 'job')!r}), nproc=8, python={str(fake)!r}, grace=1.0)\n"
            "try:\n    r.run()\nexcept OrchError as e:\n"
            "    print(e.render(), file=sys.stderr); sys.exit(e.exit_code)\n")
    procs = group / ("cgroup.procs" if (group / "cgroup.procs").exists() else "tasks")
    try:
        (group / "pids.max").write_text(f"{limit}\n")
        proc = subprocess.run(["sh", "-c", f'echo $$ > {procs} && exec "$0" -c "$1"', sys.executable, code],
                              capture_output=True, text=True, timeout=60, env=clean_environ())
        assert proc.returncode == 2, proc.stderr
        assert "could not start rank" in proc.stderr and "ulimit -u" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        assert not procs.read_text().split()  # every rank it started was stopped
    finally:
        for pid in procs.read_text().split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.2)
        with contextlib.suppress(OSError):
            group.rmdir()


# -- hostlists ------------------------------------------------------------------------------------

@given(prefix=st.integers(min_value=600, max_value=5000), hosts=st.integers(min_value=30_000, max_value=65_536))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_long_prefix_times_many_hosts_is_refused_fast(prefix: int, hosts: int) -> None:
    expr = "x" * prefix + f"[1-{hosts}]"
    if (prefix + len(str(hosts)) + 1) * hosts <= hostlist.MAX_BYTES:
        return
    start = time.monotonic()
    with pytest.raises(hostlist.HostlistError, match="MiB"):
        hostlist.expand(expr)
    assert time.monotonic() - start < 0.5


@pytest.mark.parametrize("expr", ["x" * 3000 + "[1-60000]", "x" * 3000 + "[1-983040]",
                                  "a[1-1000]" + "b" * 1000 + "[1-1000]", ",".join(["y" * 2000 + "[1-9999]"] * 3)])
def test_orch_hosts_refuses_huge_expansions(expr: str, capsys: pytest.CaptureFixture[str]) -> None:
    refused(["hosts", expr], capsys, "invalid hostlist")


def test_orch_env_refuses_a_huge_nodelist(clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in {"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_LOCALID": "0",
                        "SLURM_NODEID": "0", "SLURM_NTASKS": "2", "SLURM_NNODES": "2",
                        "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_NUM_NODES": "2",
                        "SLURM_STEP_TASKS_PER_NODE": "1(x2)", "SLURM_TASKS_PER_NODE": "1(x2)",
                        "SLURM_STEP_NODELIST": "x" * 3000 + "[1-60000]",
                        "SLURM_JOB_NODELIST": "x" * 3000 + "[1-60000]"}.items():
        clean_env.setenv(name, value)
    start = time.monotonic()
    assert main(["env"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and time.monotonic() - start < FAST, err


def _cluster(tmp_path: Path, **changes: Any) -> Path:
    data: dict[str, Any] = {**TEST_CLUSTER, **changes,
                            "launcher": {**TEST_CLUSTER["launcher"], "job_root": str(tmp_path / "jobs")}}
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("nodes", ["n" * 3000 + "[1-60000]", "p" * 800 + "[1-65536]"])
def test_a_partition_with_a_huge_node_list_is_refused(nodes: str, tmp_path: Path, clean_env: Any,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    parts = [{**TEST_CLUSTER["partitions"][0], "nodes": nodes}, *TEST_CLUSTER["partitions"][1:]]
    cluster = _cluster(tmp_path, partitions=parts)
    refused(["submit", "smoke", "--dry-run", "--cluster", str(cluster)], capsys, "MiB")


@pytest.mark.parametrize("nodes", ["g" * 3000 + "[1-60000]", "h" * 700 + "[1-65000]"])
def test_a_huge_nodelist_option_is_refused(nodes: str, tmp_path: Path, clean_env: Any,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    refused(["submit", "smoke", "--dry-run", "--cluster", str(_cluster(tmp_path)), "--nodelist", nodes],
            capsys, "--nodelist")


def test_orch_hosts_reads_a_bounded_stdin(tmp_path: Path) -> None:
    proc = subprocess.run(f"head -c 20000000 /dev/zero | tr '\\0' 'a' | {ORCH} hosts", shell=True,
                          capture_output=True, text=True, timeout=60, env=clean_environ())
    assert proc.returncode == 2 and "longer than" in proc.stderr and "Traceback" not in proc.stderr
