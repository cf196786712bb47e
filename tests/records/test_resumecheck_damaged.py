"""Damaged resume folders are refused before any rank starts: a job.json edited or truncated, a checkpoint of
another job or with bad counters. Folders come from one real ``orch run smoke`` (copied per test); refusals
go through the real CLI (exit 2, ``orch: error:``, a HINT, no traceback, no rank started).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import assert_refused, no_rank_started, resume

# --- damaged resume folders ----------------------------------------------------------------------------

def _edit_json(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads((folder / "job.json").read_text())
    change(data)
    (folder / "job.json").write_text(json.dumps(data))

JOB_JSON_DAMAGE: list[tuple[str, Callable[[Path], None], str]] = [
    ("params lr text", lambda f: _edit_json(f, lambda d: d["params"].update(lr="fast")), "lr"),
    ("params lr negative", lambda f: _edit_json(f, lambda d: d["params"].update(lr=-1)), "lr"),
    ("params lr null", lambda f: _edit_json(f, lambda d: d["params"].update(lr=None)), "lr"),
    ("params unknown key", lambda f: _edit_json(f, lambda d: d["params"].update(colour=1)), "colour"),
    ("params seed huge", lambda f: _edit_json(f, lambda d: d["params"].update(seed=2**70)), "seed"),
    ("env key with =", lambda f: _edit_json(f, lambda d: d["env"].update({"A=B": "1"})), "env"),
    ("env key NUL", lambda f: _edit_json(f, lambda d: d["env"].update({"A\0B": "1"})), "env"),
    ("env value NUL", lambda f: _edit_json(f, lambda d: d["env"].update({"NCCL_DEBUG": "a\0b"})), "env"),
    ("env owned name", lambda f: _edit_json(f, lambda d: d["env"].update({"MASTER_PORT": "1"})), "MASTER_PORT"),
    ("ranks zero", lambda f: _edit_json(f, lambda d: d.update(tasks_per_node=0)), "tasks_per_node"),
    ("deep nesting", lambda f: (f / "job.json").write_text("[" * 100_000 + "]" * 100_000), "job.json"),
    ("not an object", lambda f: (f / "job.json").write_text("[]"), "job.json"),
    ("job.json a folder", lambda f: ((f / "job.json").unlink(), (f / "job.json").mkdir()), "job.json"),
    ("checkpoints a file", lambda f: (shutil.rmtree(f / "checkpoints"), (f / "checkpoints").write_text("x")),
     "checkpoints"),
    ("job file gone", lambda f: _edit_json(f, lambda d: d.update(job_file="/nonexistent/job.py")), "job file"),
]


@pytest.mark.parametrize(("damage", "name"), [(d, n) for _, d, n in JOB_JSON_DAMAGE],
                         ids=[i for i, _, _ in JOB_JSON_DAMAGE])
def test_damaged_job_json_is_refused_before_any_rank_starts(damage: Callable[[Path], None], name: str,
                                                            job_copy: Path) -> None:
    damage(job_copy)
    before = time.time()
    proc = resume(job_copy)
    assert_refused(proc, name)
    assert no_rank_started(job_copy, before)


def _edit_checkpoint(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Edit the checkpoints and drop their sidecars: a folder of an older orch, so these cases test the
    check every rank makes as it loads (with a sidecar, the CLI refuses first:
    tests/records/test_resumecheck_cli.py)."""
    import torch

    for name in ("latest.pt", "previous.pt"):
        path = folder / "checkpoints" / name
        if path.exists():
            state = torch.load(path, weights_only=True)
            change(state)
            torch.save(state, path)
        (folder / "checkpoints" / f"{name}.json").unlink(missing_ok=True)


def _grow_first_tensor(state: dict[str, Any]) -> None:
    import torch

    key = next(iter(state["model"]))
    state["model"][key] = torch.zeros(tuple(s + 1 for s in state["model"][key].shape))


# One damage of each kind the ranks check (the job, the counters, the model): every other value is checked where
# the ranks' check is a function (tests/runtime/test_identity.py); these prove the ranks refuse it in a real resume.
CHECKPOINT_DAMAGE: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("another job", lambda s: s.update(job="mnist"), "written by job 'mnist'"),
    ("reshaped weight", _grow_first_tensor, "does not match the job's model"),
    ("ranks too many", lambda s: s.update(ranks=s["ranks"] * 3), "ranks hold 3 entries"),
]


@pytest.mark.parametrize(("damage", "message"), [(d, m) for _, d, m in CHECKPOINT_DAMAGE],
                         ids=[i for i, _, _ in CHECKPOINT_DAMAGE])
def test_a_checkpoint_of_another_job_or_with_bad_counters_is_a_clear_error(
        damage: Callable[[dict[str, Any]], None], message: str, job_copy: Path) -> None:
    _edit_checkpoint(job_copy, damage)
    proc = resume(job_copy)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and "HINT:" in proc.stderr, proc.stderr
    assert "load_state_dict" not in proc.stderr and "Traceback" not in proc.stderr
    assert not (job_copy / "metrics.jsonl").read_text().count('"epoch": 2')
