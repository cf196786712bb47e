"""What ``orch logs`` shows of a job folder's logs, read from the end: rank 0's output with the batch
script's own lines around it (the default), the batch log alone, one rank's log, or every rank's with
a ``[rank R]`` prefix; once, or following the files as they grow.

The file names are :mod:`orchestrator.records.jobdirs`'s (``logs/slurm-<id>.out``, ``logs/<id>-rank<R>.out``,
``logs/local-rank<R>.out``). Big logs are never read whole: a view reads the last ``lines`` lines of
each file (backwards, in blocks, at most :data:`MAX_TAIL_BYTES`), and following reads only what was
appended since. Nothing here asks Slurm: the caller says when the job has ended.

The batch script prints its own lines (``orch: job <id> (attempt A, requeue R) on <nodes>: MASTER_ADDR=...``,
preflight notes) before srun starts the ranks, and its last lines (a requeue, srun's exit) after
them. Shown with rank 0's log, the batch lines up to the newest start line (and the preflight lines
after it) come first, rank 0's lines next, the rest of the batch lines last. Without ``-f`` the ranks
of ``--all-ranks`` are shown one after the other (the files hold no times to interleave them by);
with ``-f`` new lines are shown as they arrive, whichever rank wrote them.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from orchestrator.records.jobdirs import JobDir
from orchestrator.records.joblayout import log_path
from orchestrator.records.logs import outwatch
from orchestrator.spec.runconfig import LOG_DIR
from orchestrator.spec.safefile import note, open_regular

BLOCK = 64 * 1024
MAX_TAIL_BYTES = 64 * 1024 * 1024  # a view never reads more than this of one file
FOLLOW_CHUNK = 4 * 1024 * 1024  # what one poll reads of a growing file, at most
MAX_PENDING = 1024 * 1024  # an unfinished line kept while following, at most (longer: shown as it is)
# the batch script's start line (templates/base.sbatch.j2) and the preflight lines that follow it
# (older scripts said "(restart N)": their logs are read too)
_START_RE = re.compile(rb"^orch: job \S+ \((?:attempt [0-9]+, requeue [0-9]+|restart [0-9]+)\) on ")
_PREFLIGHT_PREFIX = b"orch: preflight:"


def tail_lines(path: Path, lines: int, *, max_bytes: int = MAX_TAIL_BYTES) -> tuple[list[bytes], int, bool]:
    """The last ``lines`` lines of ``path`` (each with its newline, the last maybe without), the file's
    size when read, and whether earlier lines were left out. A missing file: ``([], 0, False)``."""
    try:
        with open_regular(path) as fh:  # a FIFO or a device under a log's name: noted, never read
            size = fh.seek(0, os.SEEK_END)
            pos, blocks, newlines = size, [], 0
            limit = min(max_bytes, size)
            while pos > 0 and newlines <= lines and size - pos < limit:  # blocks, never the whole file
                step = min(BLOCK, pos, limit - (size - pos))
                pos -= step
                fh.seek(pos)
                block = fh.read(step)
                blocks.append(block)
                newlines += block.count(b"\n")
            data = b"".join(reversed(blocks))
    except FileNotFoundError:
        return [], 0, False
    except OSError as exc:
        note(path, exc.strerror or f"cannot be read ({type(exc).__name__})")
        return [], 0, False
    found = data.splitlines(keepends=True)
    cut = pos > 0  # the first line may be a part of one
    if cut and found:
        found = found[1:]
    left_out = cut or len(found) > lines
    return found[-lines:] if lines > 0 else [], size, left_out


def split_batch(lines: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """The batch log's lines before the ranks' output (up to the newest start line and the preflight
    lines after it) and after it. Without a start line, every line comes before."""
    starts = [i for i, line in enumerate(lines) if _START_RE.match(line)]
    if not starts:
        return lines, []
    end = starts[-1] + 1
    while end < len(lines) and lines[end].startswith(_PREFLIGHT_PREFIX):
        end += 1
    return lines[:end], lines[end:]


def rank_logs(job: JobDir) -> dict[int, Path]:
    """Every rank log of the job's current id (or of a local run) in its logs/ folder, by rank."""
    folder = job.path / LOG_DIR
    job_id = None if job.mode == "local" else job.job_id
    prefix = "local-rank" if job_id is None else f"{job_id}-rank"
    found: dict[int, Path] = {}
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except OSError:
        return found
    for name in names:
        if name.startswith(prefix) and name.endswith(".out"):
            number = name[len(prefix):-len(".out")]
            if number.isascii() and number.isdigit() and len(number) < 10:
                found[int(number)] = folder / name
    return dict(sorted(found.items()))


@dataclass
class Source:
    """One log file of a view: its path and the prefix its lines get (``[rank 3] ``, or none)."""

    path: Path
    prefix: bytes = b""
    offset: int = 0  # how far it was shown
    pending: bytes = b""  # a line still being written (following)
    refused: bool = False  # not a regular file: noted once, not read again


@dataclass
class View:
    """What one ``orch logs`` call shows: ``mode`` is "default", "batch", "rank" or "all"."""

    job: JobDir
    mode: str
    rank: int | None = None
    lines: int = 1000
    notes: list[str] = field(default_factory=list)

    def batch_path(self) -> Path | None:
        return None if self.job.mode == "local" or self.job.job_id is None else log_path(self.job.path,
                                                                                          self.job.job_id)

    def rank_path(self, rank: int) -> Path:
        return log_path(self.job.path, None if self.job.mode == "local" else self.job.job_id, rank)

    def sources(self) -> list[Source]:
        """The files this view shows, in order (for --all-ranks: the rank logs that exist now)."""
        batch = self.batch_path()
        if self.mode == "batch":
            return [Source(batch)] if batch is not None else []
        if self.mode == "rank":
            return [Source(self.rank_path(self.rank or 0))]
        if self.mode == "all":
            return [Source(path, f"[rank {r}] ".encode()) for r, path in rank_logs(self.job).items()]
        return ([Source(batch)] if batch is not None else []) + [Source(self.rank_path(0))]

    def show(self, out: BinaryIO, *, following: bool = False) -> tuple[list[Source], int]:
        """Write the view once (the tail of each file); its sources, with the offsets shown, and how
        many lines were written. ``following``: a last line still being written is left to follow."""
        sources = self.sources()
        tails: list[list[bytes]] = []
        for source in sources:
            found, source.offset, left_out = tail_lines(source.path, self.lines)
            if following and found and not found[-1].endswith(b"\n"):  # still being written: shown whole later
                source.offset -= len(found[-1])
                found = found[:-1]
            elif found and not found[-1].endswith(b"\n"):
                found[-1] += b"\n"
            if left_out:
                self.notes.append(f"orch: the first lines of {source.path} are left out (the last {self.lines} "
                                  "are shown; --lines N shows more)")
            tails.append([source.prefix + line for line in found])
        if self.mode == "default" and len(tails) == 2:
            before, after = split_batch(tails[0])
            shown = [*before, *tails[1], *after]
        else:
            shown = [line for tail in tails for line in tail]
        out.writelines(shown)
        out.flush()
        return sources, len(shown)

    def follow(self, sources: list[Source], out: BinaryIO, ended: Callable[[], bool], *,
               interval: float = 0.5, check_every: float = 2.0) -> None:
        """Write what is appended to ``sources`` (and, for --all-ranks, to rank logs that appear) until
        ``ended()`` says the job is over; then what was written meanwhile, and any unfinished line.
        Between reads it waits on ``out``: when the reader of ``out`` goes away (an SSH session that
        ended, a pipe's reader that quit) it stops at once with BrokenPipeError (:mod:`.outwatch`)."""
        next_check = 0.0
        while True:
            if self.mode == "all":
                known = {s.path for s in sources}
                sources += [s for s in self.sources() if s.path not in known]
            copy_new(sources, out)
            now = time.monotonic()
            if now >= next_check:
                next_check = now + check_every
                if ended():
                    copy_new(sources, out, final=True)
                    return
            if outwatch.wait(out, interval):
                raise outwatch.reader_gone_error()


def copy_new(sources: list[Source], out: BinaryIO, *, final: bool = False) -> None:
    """Each source's complete new lines (with its prefix); ``final``: the unfinished last line too."""
    for source in sources:
        if source.refused:
            continue
        try:
            with open_regular(source.path) as fh:
                size = fh.seek(0, os.SEEK_END)
                if size < source.offset:  # truncated: start again
                    source.offset, source.pending = 0, b""
                fh.seek(source.offset)
                data = fh.read(FOLLOW_CHUNK)
        except FileNotFoundError:
            continue
        except OSError as exc:  # not a file (a FIFO, a device, a folder) or unreadable: said once, then skipped
            note(source.path, exc.strerror or f"cannot be read ({type(exc).__name__})")
            source.refused = True
            continue
        source.offset += len(data)
        data = source.pending + data
        complete, newline, rest = data.rpartition(b"\n")
        if len(rest) > MAX_PENDING:  # a "line" without end (binary output, a progress bar): shown in parts
            complete, newline, rest = data, b"\n", b""
        source.pending = rest
        lines = [line + b"\n" for line in complete.split(b"\n")] if newline else []
        if final and rest:
            lines.append(rest + b"\n")
            source.pending = b""
        if lines:
            out.writelines(source.prefix + line for line in lines)
            out.flush()
