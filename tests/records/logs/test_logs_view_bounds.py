"""``orch logs --interval`` is finite and sane; ``orch logs`` reads the tail of a 3 GiB log, never the file, and
following a line that never ends keeps memory bounded (the log views' reader).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, TESTS, clean_environ

from orchestrator.cli import main
from orchestrator.records.logs.view import MAX_PENDING, MAX_TAIL_BYTES, Source, copy_new, tail_lines

NONFINITE = TESTS / "jobs" / "nonfinite.py"

RUN_TIMEOUT = 240


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], must_name: list[str],
            jobs: Path | None = None) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("orch: error:") == 1 and "HINT:" in err and "Traceback" not in err, err
    for text in must_name:
        assert text in err, f"{text!r} not in {err!r}"
    if jobs is not None:
        assert not jobs.exists() or not any(jobs.iterdir()), list(jobs.iterdir())
    return err


# --- orch logs ------------------------------------------------------------------------------------

@pytest.mark.parametrize("interval", ["nan", "NaN", "inf", "-inf", "-1", "0", "1e300", "0.001", "3601"])
def test_logs_intervals_that_spin_or_never_wake_are_refused(interval: str, tmp_path: Path,
                                                            clean_env: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job"
    job.mkdir()
    # nan/inf are no number argparse takes (spec/numbers.ascii_float); the others fail the bounds table
    needles = ["--interval", "not a finite number", "e.g."] if "n" in interval.lower() else ["--interval", "HINT: e.g."]
    for follow in (["-f"], []):
        refused(["logs", str(job), *follow, f"--interval={interval}"], capsys, needles)


def _sparse_log(path: Path, size: int, tail: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        fh.truncate(size)  # a hole: no disk used, 3 GiB of NUL bytes when read
    with path.open("ab") as fh:
        fh.write(tail)


def test_logs_of_a_3_gib_log_show_its_last_lines_under_a_memory_limit(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("name: t\npartitions:\n  - {name: cpu, nodes: 'n[1-2]', gpus_per_node: 0, cpus_per_node: 2, "
                       f"mem_per_node: 4G}}\nlauncher: {{job_root: '{root}'}}\n", encoding="utf-8")
    done = subprocess.run([ORCH, "run", "--cluster", str(cluster), "--json", str(NONFINITE), "--nproc", "1",
                           "epochs=1", "test_samples=0"], capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env=clean_environ(ORCH_STATE_DIR=str(tmp_path / "state")))
    assert done.returncode == 0, done.stderr[-2000:]
    job_dir = Path(json.loads(done.stdout)["job_dir"])
    log = job_dir / "logs" / "local-rank0.out"
    lines = [f"line {i} of the end\n".encode() for i in range(50)]
    _sparse_log(log, 3 << 30, b"\n" + b"".join(lines))

    def limit() -> None:  # 1 GiB of address space: reading the file whole cannot fit
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    proc = subprocess.run([ORCH, "logs", str(job_dir), "-n", "5"], capture_output=True, timeout=120,
                          env=clean_environ(ORCH_STATE_DIR=str(tmp_path / "state")), preexec_fn=limit)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.endswith(b"".join(lines[-5:])), proc.stdout[-500:]
    assert len(proc.stdout) < 1000


def test_tail_of_a_3_gib_file_without_newlines_reads_at_most_the_cap(tmp_path: Path) -> None:
    log = tmp_path / "big.out"
    _sparse_log(log, 3 << 30, b"\nthe end\n")
    found, size, left_out = tail_lines(log, 10, max_bytes=1 << 20)
    assert size == (3 << 30) + 9 and left_out
    assert found == [b"the end\n"]  # the 3 GiB "line" before it is cut at the cap and left out
    found, _, _ = tail_lines(log, 3)  # the default cap
    assert sum(map(len, found)) <= MAX_TAIL_BYTES


def test_following_a_line_that_never_ends_keeps_memory_bounded(tmp_path: Path) -> None:
    log = tmp_path / "big.out"
    _sparse_log(log, 64 << 20, b"")  # 64 MiB, not one newline
    source = Source(path=log, prefix=b"", offset=0)

    class Sink:
        written = 0

        def writelines(self, lines: Any) -> None:
            self.written += sum(len(x) for x in lines)

        def flush(self) -> None:
            pass

    out = Sink()
    for _ in range(20):
        copy_new([source], out)  # type: ignore[list-item, arg-type]
        assert len(source.pending) <= MAX_PENDING
    assert source.offset == os.path.getsize(log) and out.written >= (64 << 20) - MAX_PENDING
