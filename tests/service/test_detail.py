"""service/detail.py: a selected job's rank 0 log tail, every rank's state, start-up phases and attempts,
each read again only when its files changed (the pane's text: tests/views/test_views_detail.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support import training_job

from orchestrator.records.atomic import write_text_atomic
from orchestrator.records.jobdirs import read_job_dir
from orchestrator.records.joblayout import outcome_path
from orchestrator.records.live import Memo
from orchestrator.records.restarts.attempts import write_attempts
from orchestrator.service.detail import read_detail
from orchestrator.task.outcome import Recorder


def test_the_detail_of_a_failed_job(tmp_path: Path) -> None:
    folder = training_job(tmp_path / "jobs", "train", job_id="5", world=3)
    (folder / "logs" / "5-rank0.out").write_text("".join(f"line {i}\n" for i in range(40)))
    for rank, kind in ((0, "waited"), (1, "failed")):
        recorder = Recorder()
        recorder.start(outcome_path(folder, rank), rank=rank, world_size=3, run="5", restart=0, stopped_by="srun",
                       init_timeout=60, collective_timeout=60)
        recorder.step(1, 7)
        recorder.finish(kind, 1, reason="boom" if rank else "lost the connection to another rank",
                        how="lost" if kind == "waited" else None)
    write_text_atomic(folder / "result.json", json.dumps({
        "startup": {"queued": 1.5, "imports": 2.0, "import_torch": 1.0},
        "goodput": {"goodput": 0.5, "allocated_s": 10.0, "training_s": 5.0}}))
    write_attempts(folder, [{"attempt": 0, "requeue": 0, "kind": "failed", "blamed_rank": 1, "exit_code": 1}])
    memo: Memo[Any] = Memo()
    detail = read_detail(read_job_dir(folder), memo)
    assert detail.log[-1] == "line 39" and len(detail.log) == 12
    assert [(r.rank, r.kind) for r in detail.ranks] == [(0, "waited"), (1, "failed"), (2, "not started")]
    assert detail.ranks[1].last_step == "epoch 1 step 7" and detail.ranks[1].reason == "boom"
    assert detail.startup is not None and "startup (rank 0):" in detail.startup and "queued" in detail.startup
    assert len(detail.attempts) == 1 and detail.attempts[0].startswith("attempt 0 (requeue 0): failed rank 1")
    assert detail.ledger is not None and "goodput 50.0%" in detail.ledger
    reads = memo.reads
    read_detail(read_job_dir(folder), memo)
    assert memo.reads == reads  # nothing changed: nothing read again
    with (folder / "logs" / "5-rank0.out").open("a") as fh:
        fh.write("the last line\n")
    assert read_detail(read_job_dir(folder), memo).log[-1] == "the last line"
    assert memo.reads == reads + 1


def test_a_job_without_records_yet(tmp_path: Path) -> None:
    folder = training_job(tmp_path / "jobs", "here", mode="local", world=2)
    detail = read_detail(read_job_dir(folder), Memo())
    assert detail.log_file.name == "local-rank0.out" and detail.log == ()
    assert [(r.rank, r.kind) for r in detail.ranks] == [(0, "not started"), (1, "not started")]
    assert detail.startup is None and detail.attempts == () and detail.ledger is None
