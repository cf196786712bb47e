"""Each rank's Python stack at the end of a hang (``logs/rank<R>.stack.txt``) and the table of all ranks'
places read from them (``logs/places.json``): this module owns both files.

The task writes its stack file (no torch here): a rank that gave up in a collective writes the traceback of
its error (where its collective was called); a rank stopped by SIGTERM while running writes the stack of its
main thread where the signal found it. Each task removes its file when it starts, so the files are this
attempt's. ``orch run`` (``local/runner.py``), ``orch status`` and ``orch logs`` (``slurm/jobstate.py``) read
them into the table (:mod:`orchestrator.records.restarts.places`) and name the rank the others waited for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import linecache
import os
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType

from orchestrator.records import flightrec, pyspy
from orchestrator.records.atomic import write_text_atomic
from orchestrator.records.joblayout import log_path, outcome_path
from orchestrator.records.logs.view import tail_lines
from orchestrator.records.restarts import places
from orchestrator.records.restarts.blame import Blame, blame
from orchestrator.records.restarts.rankoutcome import TIMED_OUT, RankOutcome, current_run, parse_outcome
from orchestrator.spec.runconfig import LOG_DIR
from orchestrator.spec.safefile import read_text

STACK_SUFFIX = ".stack.txt"  # logs/ holds files only (beside rank<R>.outcome.json)
PLACES_FILE = "places.json"
STACK_LIMIT = 256 * 1024
LOG_LINES = 400  # of a rank's log, read for a faulthandler dump
STOPPED_MARK = "(orch cancel or scancel, the time limit, or orch ending"  # task/hang.py's STOPPED_NOTE: Python ran
HANG_KINDS = frozenset({"stuck", "all_waited", "early_exit", "vanished", "stopped"})  # blame's kinds of a hang
TIMED_OUT_GRACE_S = 1.0  # after a rank's collective timed out: the others are stuck, or time out within it
STOPPED_KIND = "signalled"  # stopped by its launcher while running: its exit code is the launcher's signal


def stack_path(job_dir: Path, rank: int) -> Path:
    return job_dir / LOG_DIR / f"rank{rank}{STACK_SUFFIX}"


def places_path(job_dir: Path) -> Path:
    return job_dir / LOG_DIR / PLACES_FILE


class StackFile:
    """This task's stack file; inactive (every call a no-op) until :meth:`start`."""

    def __init__(self) -> None:
        self.path: Path | None = None

    def start(self, job_dir: Path, rank: int) -> None:
        """This attempt's file: none yet (an earlier attempt's is removed, and so is its flight recorder dump)."""
        self.path = stack_path(job_dir, rank)
        for old in (self.path, flightrec.dump_path(job_dir, rank), pyspy.dump_path(job_dir, rank)):
            with contextlib.suppress(OSError):
                old.unlink()

    def waited(self, exc: BaseException) -> None:
        """This rank gave up in a collective: the traceback of its error, where the collective was called."""
        frames = traceback.extract_tb(exc.__traceback__)
        self._write(places.WAITED_HEADER, "".join(traceback.format_list(frames)))

    def stopped(self, frame: FrameType | None) -> None:
        """This rank was stopped while running: its main thread's stack where the signal found it."""
        if frame is not None:
            self._write(places.STOPPED_HEADER, "".join(traceback.format_stack(frame)))

    def _write(self, header: str, frames: str) -> None:
        if self.path is None:
            return
        with contextlib.suppress(OSError):  # a full disk or a removed folder: the outcome record still says how
            write_text_atomic(self.path, f"{header} (pid {os.getpid()})\nTraceback (most recent call last):\n"
                                         f"{frames}", fsync=False)


STACK = StackFile()  # this process's file


def read_stacks(job_dir: Path, ranks: list[int], logs: Mapping[int, Path] | None = None) -> dict[int, str | None]:
    """Each rank's stack text (None: it left none); without a stack file, the faulthandler dump at the end of its
    log (``logs``) when Python never ran after it (a rank blocked in native code), with its lines' code; without
    that either (it did not answer faulthandler), the dump py-spy took of it (:mod:`orchestrator.records.pyspy`)."""
    found = {rank: read_text(stack_path(job_dir, rank), STACK_LIMIT) for rank in ranks}
    for rank, path in (logs or {}).items():
        if found.get(rank) is None and path.is_file():
            lines, _, _ = tail_lines(path, LOG_LINES)
            dump = places.last_dump(b"".join(lines).decode("utf-8", errors="replace"), STOPPED_MARK)
            found[rank] = _with_code(dump) if dump else pyspy.read_dump(job_dir, rank)
    return found


def _with_code(dump: str) -> str:
    """A faulthandler dump as a traceback with each line's code (the files as they are now)."""
    frames = places.parse_frames(dump)
    return f"{places.NATIVE_HEADER}\nTraceback (most recent call last):\n" + "".join(
        f'  File "{f.file}", line {f.line}, in {f.function}\n    {linecache.getline(f.file, f.line).strip()}\n'
        for f in frames)


def place_table(job_dir: Path, records: Mapping[int, RankOutcome], world_size: int,
                run: str | None = None) -> list[places.Place]:
    """Every rank's place: its stack file (else the dump in its log, when it was stopped or never answered), else
    its exit code when it ended on its own (or was killed); with NCCL's flight recorder dumps, what they add
    (:func:`orchestrator.records.flightrec.merge`). ``run``: the Slurm job id (its logs' names)."""
    ranks = list(range(world_size))
    codes = {r: (o.exit_code if o.kind != STOPPED_KIND else None)
             for r, o in records.items() if r < world_size}
    stuck = {r: log_path(job_dir, run if run not in (None, "local") else None, r) for r in ranks
             if r not in records or records[r].kind in ("running", STOPPED_KIND)}
    table = places.table(read_stacks(job_dir, ranks, stuck), {r: codes.get(r) for r in ranks})
    if not any(flightrec.dump_path(job_dir, r).exists() for r in ranks):
        return table
    dumps = flightrec.read_dumps(job_dir, ranks)
    return flightrec.merge(table, dumps, flightrec.verdict(dumps))


def explain(found: Blame | None, table: list[places.Place]) -> Blame | None:
    """``found`` with the places: the sentence that names the rank the others waited for leads its message,
    and that rank leads its ranks; the table goes into its dict (``orch status --json``'s ``failure``)."""
    if found is None or not any(p.state == "collective" for p in table):
        return found
    said = places.sentence(table)
    rows = tuple(p.as_dict() for p in table)
    if said is None:
        return dataclasses.replace(found, places=rows)
    blamed = places.culprit(table)
    ranks = (blamed.rank, *(r for r in found.ranks if r != blamed.rank)) if blamed is not None else found.ranks
    return dataclasses.replace(found, ranks=ranks, message=f"{said}; {found.message}", places=rows, place=said)


def write_places(job_dir: Path, table: list[places.Place], said: str | None) -> None:
    """The table in the job folder (``logs/places.json``), when a rank waited in a collective; with NCCL's flight
    recorder dumps, their own verdict too (``flight``: :meth:`orchestrator.records.flightrec.Verdict.as_dict`)."""
    if not any(p.state == "collective" for p in table):
        return
    data: dict[str, object] = {"culprit": said, "ranks": [p.as_dict() for p in table]}
    ranks = [p.rank for p in table]
    if any(flightrec.dump_path(job_dir, r).exists() for r in ranks):
        found = flightrec.verdict(flightrec.read_dumps(job_dir, ranks))
        data["flight"] = found.as_dict() if found is not None else None
    with contextlib.suppress(OSError):
        write_text_atomic(places_path(job_dir), json.dumps(data, indent=2) + "\n")


def explained(job_dir: Path, found: Blame | None, records: Sequence[RankOutcome], world_size: int | None, *,
              run: str | None = None, restart: int | None = None, write: bool = False) -> Blame | None:
    """:func:`explain` with the table read from ``job_dir`` for the run ``found`` judged (``write``: also keep
    the table in ``logs/places.json``; ``orch run`` does, the readers of a finished job do not)."""
    if found is None or found.kind not in HANG_KINDS:
        return found
    by_rank, _ = current_run(records, run, restart)
    size = world_size if world_size is not None else max(by_rank, default=-1) + 1
    table = place_table(job_dir, by_rank, size, next(iter(by_rank.values())).run if by_rank else run)
    told = explain(found, table)
    if write and told is not None:
        write_places(job_dir, table, told.place)
    return told


def blamed(job_dir: Path, records: Sequence[RankOutcome], *, world_size: int, notes: Sequence[str],
           write: bool) -> Blame | None:
    """:func:`~orchestrator.records.restarts.blame.blame`, then :func:`explained` (``orch run``'s verdict)."""
    return explained(job_dir, blame(records, world_size=world_size, notes=notes), records, world_size, write=write)


def grace_after(job_dir: Path, ranks: Sequence[int], grace: float) -> float:
    """How long ``orch run`` lets the other ranks end on their own after ``ranks`` failed in a collective. A rank
    whose collective timed out says the others are stuck (a rank that died closes the connection instead): a
    short wait (ranks in mismatched collectives time out together), then they are stopped and their stacks read.
    Else ``grace``: the rank that died may still be writing its error."""
    for rank in ranks:
        found = parse_outcome(read_text(outcome_path(job_dir, rank)) or "")
        if isinstance(found, RankOutcome) and found.kind == "waited" and found.how == TIMED_OUT:
            return min(grace, TIMED_OUT_GRACE_S)
    return grace
