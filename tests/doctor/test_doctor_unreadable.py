"""The doctor skips, with a warning, source it cannot read: a 100,000-term expression, 50,000 unary minus signs
(under a 1.5 GB address-space limit) and a FIFO instead of a script; never a traceback or a hang, in
``orch doctor`` and in ``orch submit``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, clean_environ

TIMEOUT = 60


# -- -----------------------------------------------------------------------------------------

def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))


def _sources(tmp_path: Path) -> dict[str, Path]:
    terms = tmp_path / "terms.py"
    terms.write_text("x = " + " + ".join(["1"] * 100_000) + "\n")
    unary = tmp_path / "unary.py"
    unary.write_text("x = " + "-" * 50_000 + "1\n")
    calls = tmp_path / "calls.py"
    calls.write_text("x = f" + "()" * 100_000 + "\nimport os\n")
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    nots = tmp_path / "nots.py"
    nots.write_text("x = " + "not " * 100_000 + "1\n")
    return {"terms": terms, "unary": unary, "calls": calls, "nots": nots, "fifo": fifo}


@pytest.mark.parametrize("which", ["terms", "unary", "calls", "nots", "fifo"])
def test_the_doctor_skips_what_it_cannot_read(which: str, tmp_path: Path) -> None:
    path = _sources(tmp_path)[which]
    good = tmp_path / "good.py"
    good.write_text("import torch.distributed as dist\ndist.init_process_group('nccl')\n")
    start = time.monotonic()
    proc = subprocess.run([ORCH, "doctor", str(path), str(good)], capture_output=True, text=True, timeout=TIMEOUT,
                          env=clean_environ(), cwd=tmp_path, preexec_fn=_limit_memory)
    assert time.monotonic() - start < 30
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr
    assert f"{path.name}" in proc.stderr and "not checked" in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr  # the good file's findings decide


@pytest.mark.parametrize("which", ["terms", "unary", "fifo"])
def test_submitting_source_the_doctor_cannot_read(which: str, tmp_path: Path, write_cluster: Any) -> None:
    path = _sources(tmp_path)[which]
    argv = [ORCH, "submit", str(path), "--dry-run", "--cluster", str(write_cluster())]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, env=clean_environ(), cwd=tmp_path,
                          preexec_fn=_limit_memory)
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr
    if which == "fifo":
        assert proc.returncode == 2 and "FIFO" in proc.stderr, proc.stderr
    else:
        assert proc.returncode == 0 and "not checked" in proc.stderr, proc.stderr
