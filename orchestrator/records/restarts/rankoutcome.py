"""The ranks' outcome records: what each task leaves in the job folder about how it ended, read back.

Every task (``orchestrator.task.launch``, under ``srun`` and under ``orch run``) leaves a record of how
it ended in the job folder (``logs/rank<R>.outcome.json``, see :mod:`orchestrator.task.outcome`): it is
written as ``running`` when the task starts and rewritten when it ends as

- ``completed``: exit 0;
- ``failed``: its own failure (an exception in training, bad input), with the one-line reason;
- ``waited``: it gave up waiting in a collective (timed out, or lost the connection), with the
  timeout that applied and the setting that sets it (``launcher.collective_timeout`` in training,
  ``launcher.init_timeout`` at start-up, in build and around checkpoints);
- ``signalled``: it was stopped by a signal while still running (SIGTERM from srun or orch run).

A record still saying ``running`` after the job ended means the task ended without a word (SIGKILL,
the out-of-memory killer, a lost node) or was stuck where no signal handler could run. Records of an
earlier run of the folder (a requeue, ``orch run --resume``) carry another ``restart`` and are set aside
(:func:`current_run`). No I/O here: the callers read the files (``outcome.read_outcomes``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Kind = Literal["running", "completed", "failed", "waited", "signalled"]
FINAL_KINDS = frozenset({"completed", "failed", "waited", "signalled"})
LOST_CONNECTION = "lost"  # ``waited.how``: the connection to another rank closed (it exited)
TIMED_OUT = "timeout"  # ``waited.how``: the collective timed out
PEER_FAILURE_EXIT = 3  # a task's exit code when a collective failed or timed out: most likely another rank's failure


class LastStep(BaseModel):
    """The last training step this rank finished (kept in memory, written with the outcome)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)  # JSON types exactly

    epoch: int = Field(ge=1)  # 1-based
    step: int = Field(ge=0)  # steps of that epoch done
    time: float = Field(ge=0, allow_inf_nan=False)  # wall clock (time.time())


class WorldJoin(BaseModel):
    """A script's rank: the default process group it joined (``size`` None: init_process_group not called)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)  # JSON types exactly

    size: int | None = Field(default=None, ge=1)  # the default group's world size
    rank: int | None = Field(default=None, ge=0)  # this rank's rank in it
    backend: str | None = Field(default=None, max_length=40)
    orch_rendezvous: bool | None = None  # at orch's MASTER_ADDR:MASTER_PORT (None: a store orch cannot place)


class RankOutcome(BaseModel):
    """One task's record (``logs/rank<R>.outcome.json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)  # JSON types exactly

    version: Literal[1] = 1
    rank: int = Field(ge=0)
    world_size: int = Field(ge=1)
    run: str = Field(max_length=200)  # the Slurm job id (array element ``123_4``), or "local"
    restart: int = Field(ge=0)  # SLURM_RESTART_COUNT, or job.json's restarts for orch run --resume
    kind: Kind
    exit_code: int | None = Field(default=None, ge=-128, le=255)  # a signal as -N (as Popen says)
    reason: str | None = Field(default=None, max_length=2000)  # one line: why it failed or gave up
    how: Literal["timeout", "lost"] | None = None  # waited: timed out, or lost the connection
    timeout_s: int | None = Field(default=None, ge=0)  # waited/timeout: the timeout that applied
    timeout_setting: str | None = Field(default=None, max_length=100)  # launcher.collective_timeout, ...
    signal: str | None = Field(default=None, max_length=20)  # signalled: SIGTERM, SIGINT
    stopped_by: str | None = Field(default=None, max_length=40)  # signalled: "srun", "orch run"
    host: str | None = Field(default=None, max_length=255)
    pid: int | None = Field(default=None, ge=0)
    started: float = Field(ge=0, allow_inf_nan=False)  # wall clock
    ended: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    last_step: LastStep | None = None
    first_step: float | None = Field(default=None, ge=0, allow_inf_nan=False)  # when its first step ended
    world: WorldJoin | None = None  # scripts in several ranks: the world it joined (records/restarts/world.py)


def parse_outcome(text: str) -> RankOutcome | str:
    """A record from a file's text, or why it is not one (a note for the report; never raises)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(data, dict):
        return "not a JSON object"
    try:
        return RankOutcome.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "record"
        return f"{where}: {first.get('msg', 'invalid')}"


def current_run(records: Sequence[RankOutcome], run: str | None = None,
                restart: int | None = None) -> tuple[dict[int, RankOutcome], list[str]]:
    """The records of the current run, by rank, and notes on those set aside. ``run``/``restart``:
    the run asked about (Slurm's job id and restart count) when known; else the newest run present.
    Two records of one rank and run: the later one counts."""
    pool = [r for r in records if run is None or r.run == run]
    notes = [f"rank {r.rank}: a record of job {r.run} set aside (not job {run})"
             for r in records if run is not None and r.run != run]
    if restart is None and pool:
        newest = max(pool, key=lambda r: (r.restart, r.started))
        restart = newest.restart
    current: dict[int, RankOutcome] = {}
    for record in pool:
        if record.restart != restart:
            notes.append(f"rank {record.rank}: the record of restart {record.restart} set aside "
                         f"(this run is restart {restart})")
            continue
        held = current.get(record.rank)
        if held is None or (record.ended or record.started) >= (held.ended or held.started):
            current[record.rank] = record
    return current, notes
