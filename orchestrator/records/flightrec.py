"""NCCL's flight recorder dumps, read without torch: each rank's last collectives, and which rank the others waited
for (the cross-rank reading of torch's own analyser, ``torch/distributed/flight_recorder/fr_trace.py``).

A task of an NCCL run asks torch to keep its last collectives and to write them when a collective times out
(:func:`orchestrator.task.hang.flight_recorder_env`): one file per rank, ``logs/nccl_trace_rank_<R>`` of the job
folder. torch's FlightRecorder ``dump()`` (``torch/csrc/distributed/c10d/FlightRecorderDetail.hpp``) writes it: a
pickle of a dict (``version``, ``pg_config``, ``pg_status``, ``entries``), each entry a dict with ``record_id``,
``process_group`` (name, description), ``collective_seq_id``, ``profiling_name`` (``nccl:all_reduce``),
``state`` (scheduled, started, completed), ``input_sizes``, ``output_sizes`` and ``frames`` (the Python stack
where the collective was called, innermost first: ``filename``, ``line``, ``name``). torch 2.14.1 writes format
"2.10"; its JSON form (``_dump_nccl_trace_json``) has the same keys and is read too.

The files are the job's own, in the user's job folder, but a pickle can run code: the unpickler here makes
nothing but builtin containers and scalars (the few helpers torch's C++ pickler names for typed lists become
plain lists), refuses any other global and any persistent id, and reads at most :data:`DUMP_LIMIT` bytes
(:mod:`orchestrator.spec.safefile`). An unreadable file is a warning naming it, never a traceback.

:func:`verdict` compares the ranks' records per process group: the first collective number at which ranks called
different collectives or the same one with different sizes (mismatched), else the ranks that never reached the
last collective the others entered (behind). :func:`merge` adds it to the places read from the ranks' stacks
(:mod:`orchestrator.records.restarts.places`): each rank's collective number, and a rank that entered the
collective the others wait for is placed in it even where its Python stack is elsewhere (NCCL's collectives run
on the GPU while Python goes on).
"""

from __future__ import annotations

import dataclasses
import io
import json
import pickle
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from orchestrator.records.restarts.places import Frame, Place, user_frame
from orchestrator.spec.runconfig import LOG_DIR
from orchestrator.spec.safefile import note, read_bytes

TRACE_PREFIX = "nccl_trace_rank_"  # torch appends the rank (TORCH_FR_DUMP_TEMP_FILE / TORCH_NCCL_DEBUG_INFO_TEMP_FILE)
DUMP_LIMIT = 64 * 1024 * 1024  # 2000 entries (task/hang.py's TRACE_ENTRIES) of ~30 frames: a few MB
DEFAULT_GROUP = "0"  # the default process group's name in the dumps
Kind = Literal["behind", "mismatch", "sizes"]


def _same(value: object, *_: object) -> object:
    return value


# The globals torch's C++ pickler may name (torch/csrc/jit/serialization/pickler.cpp: typed lists and type
# tags): each only returns its argument, so here each is a function that does the same, not torch's.
_ALLOWED: dict[tuple[str, str], Callable[..., object]] = {
    ("torch.jit._pickle", name): _same
    for name in ("build_intlist", "build_doublelist", "build_boollist", "build_genericlist", "restore_type_tag")
}


class _Unpickler(pickle.Unpickler):
    """Builtin containers and scalars only: any other global, and any persistent id (a tensor), is refused."""

    def find_class(self, module: str, name: str) -> Any:
        found = _ALLOWED.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which a flight recorder dump never holds")
        return found

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("it holds a persistent id (a tensor), which a flight recorder dump never holds")


class DumpError(ValueError):
    """A dump that cannot be read: why, in words."""


@dataclass(frozen=True)
class Collective:
    """One entry of a rank's flight recorder: a collective it called."""

    seq: int  # collective_seq_id: the number of this collective in its process group, the same on every rank
    op: str  # all_reduce (from nccl:all_reduce)
    state: str  # scheduled, started, completed
    group: str
    sizes: str  # input sizes, as text ([[8, 4]])
    p2p: bool
    frame: Frame | None  # the innermost user frame that called it

    def label(self) -> str:
        return f"{self.op} (collective {self.seq})"


@dataclass(frozen=True)
class RankDump:
    rank: int
    entries: tuple[Collective, ...]

    def collectives(self, group: str) -> dict[int, Collective]:
        """This rank's collectives (not point-to-point) of ``group``, by number (the last entry wins)."""
        return {c.seq: c for c in self.entries if c.group == group and not c.p2p}


@dataclass(frozen=True)
class Verdict:
    """What the records of all ranks say: ``culprits`` did not reach (behind) or called another collective
    than (mismatch, sizes) collective ``seq``, which ``entered`` called as ``op``."""

    kind: Kind
    group: str
    seq: int
    op: str
    entered: tuple[int, ...]
    culprits: tuple[int, ...]
    where: Frame | None  # where the entered ranks called it
    found: Mapping[int, Collective]  # each culprit's collective at ``seq`` (mismatch) or its last one (behind)
    sizes: str = ""  # the entered ranks' input sizes
    unread: tuple[int, ...] = ()  # ranks without a readable dump

    def sentence(self) -> str:
        """``rank 1 never reached collective 4 (all_reduce), which ranks 0, 2, 3 entered at train.py:44 in train``."""
        at = f" {_at(self.where)}" if self.where else ""
        who = _ranks(self.entered)
        if self.kind == "behind":
            lead = f"{_ranks(self.culprits)} never reached collective {self.seq} ({self.op}), which {who} entered{at}"
            lasts = [f"rank {r}'s last was {c.label()}" for r, c in sorted(self.found.items())]
            text = "; ".join([lead, *lasts])
        else:
            theirs = "; ".join(f"rank {r} called {_called(c, self.kind)}{_where(c)}"
                               for r, c in sorted(self.found.items()))
            mine = f"{self.op} of {self.sizes}" if self.kind == "sizes" else self.op
            text = f"{theirs} where {who} called {mine} (collective {self.seq}){at} (mismatched collectives)"
        return text + (f" (no flight record from {_ranks(self.unread)})" if self.unread else "")

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "group": self.group, "seq": self.seq, "op": self.op,
                "entered": list(self.entered), "culprits": list(self.culprits), "unread": list(self.unread),
                "sentence": self.sentence()}


def dump_path(job_dir: Path, rank: int) -> Path:
    return job_dir / LOG_DIR / f"{TRACE_PREFIX}{rank}"


def read_dumps(job_dir: Path, ranks: Iterable[int]) -> dict[int, RankDump | None]:
    """Each rank's dump (None: none, or unreadable, with a warning naming the file and why)."""
    found: dict[int, RankDump | None] = {}
    for rank in ranks:
        path = dump_path(job_dir, rank)
        data = read_bytes(path, DUMP_LIMIT)
        if data is None:
            found[rank] = None
            continue
        try:
            found[rank] = parse_dump(data, rank)
        except DumpError as exc:
            note(path, f"is not a readable flight recorder dump ({exc})")
            found[rank] = None
    return found


def parse_dump(data: bytes, rank: int) -> RankDump:
    """One rank's dump (a pickle, or torch's JSON form) -> its collectives; :class:`DumpError` says why not."""
    if not data.strip():
        raise DumpError("it is empty")
    try:
        if data.lstrip()[:1] == b"{":
            raw: Any = json.loads(data.decode("utf-8", errors="replace"))
        else:
            raw = _Unpickler(io.BytesIO(data)).load()
    except pickle.UnpicklingError as exc:
        raise DumpError(f"refused: {exc}" if "never holds" in str(exc) else f"damaged: {exc}") from None
    except EOFError:
        raise DumpError("it ends early: truncated, perhaps written while the rank was stopped") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, MemoryError, RecursionError,
            OverflowError) as exc:
        raise DumpError(f"damaged: {type(exc).__name__}: {exc}"[:300]) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("entries"), list):
        raise DumpError("it holds no list of entries")
    return RankDump(rank, tuple(c for c in map(_collective, raw["entries"]) if c is not None))


def _collective(entry: object) -> Collective | None:
    """One entry, or None when it lacks what a collective needs (a number and a name)."""
    if not isinstance(entry, dict):
        return None
    seq, name = entry.get("collective_seq_id"), entry.get("profiling_name")
    if not isinstance(seq, int) or isinstance(seq, bool) or not isinstance(name, str):
        return None
    group = entry.get("process_group")
    group_name = group[0] if isinstance(group, (list, tuple)) and group and isinstance(group[0], str) else DEFAULT_GROUP
    op = name.split(":", 1)[-1].split(" ", 1)[0]
    raw_frames = entry.get("frames")
    frames = [_frame(f) for f in raw_frames if isinstance(f, dict)] if isinstance(raw_frames, list) else []
    user = next((f for f in frames if f is not None and user_frame(f)), None)  # innermost first
    state = entry.get("state")
    return Collective(seq=seq, op=op, state=state if isinstance(state, str) else "unknown", group=group_name,
                      sizes=_text(entry.get("input_sizes")), p2p=entry.get("is_p2p") is True or op in ("send", "recv"),
                      frame=user)


def _frame(raw: Mapping[str, object]) -> Frame | None:
    file, line, name = raw.get("filename"), raw.get("line"), raw.get("name")
    if isinstance(file, str) and isinstance(line, int) and isinstance(name, str):
        return Frame(file, line, name)
    return None


def _text(value: object) -> str:
    try:
        return json.dumps(value) if isinstance(value, list) else "?"
    except (TypeError, ValueError, RecursionError):  # bytes, a set, lists nested past the recursion limit
        return "?"


def verdict(dumps: Mapping[int, RankDump | None]) -> Verdict | None:
    """The ranks to blame by their records: per process group (the default group first), the first collective
    number where the ranks' calls differ (mismatch: another collective; sizes: other input sizes), else the
    ranks whose last collective comes before the last one the others entered (behind); None when the records
    agree. Ranks without a readable dump are left out, and named."""
    readable = {r: d for r, d in dumps.items() if d is not None}
    unread = tuple(sorted(r for r, d in dumps.items() if d is None))
    groups = sorted({c.group for d in readable.values() for c in d.entries if not c.p2p},
                    key=lambda g: (g != DEFAULT_GROUP, g))
    for group in groups:
        calls = {r: d.collectives(group) for r, d in readable.items()}
        members = sorted(r for r, c in calls.items() if c or group == DEFAULT_GROUP)
        found = _mismatch(group, {r: calls[r] for r in members}) or _behind(group, {r: calls[r] for r in members})
        if found is not None:
            return dataclasses.replace(found, unread=unread)
    return None


# what must be the same on every rank at one collective number: the collective, then its sizes
_CALL_KEYS: tuple[tuple[Kind, Callable[[Collective], object]], ...] = (
    ("mismatch", lambda c: c.op), ("sizes", lambda c: (c.op, c.sizes)))


def _mismatch(group: str, calls: Mapping[int, dict[int, Collective]]) -> Verdict | None:
    present = [c for c in calls.values() if c]
    if len(present) < 2:
        return None
    common = set.intersection(*(set(c) for c in present))
    for seq in sorted(common):
        here = {r: c[seq] for r, c in calls.items() if seq in c}
        for kind, key in _CALL_KEYS:
            counts = Counter(key(c) for c in here.values())
            if len(counts) > 1:  # the most common call is the expected one; in a tie the lowest rank is the odd one
                # (as places.culprit says it)
                expected = max(counts, key=lambda k: (counts[k], min(r for r, c in here.items() if key(c) == k)))
                entered = tuple(r for r in sorted(here) if key(here[r]) == expected)
                odd = {r: c for r, c in here.items() if key(c) != expected}
                first = here[entered[0]]
                return Verdict(kind=kind, group=group, seq=seq, op=first.op, entered=entered,
                               culprits=tuple(sorted(odd)), where=first.frame, found=odd, sizes=first.sizes)
    return None


def _behind(group: str, calls: Mapping[int, dict[int, Collective]]) -> Verdict | None:
    lasts = {r: max(c) if c else 0 for r, c in calls.items()}
    if not lasts:
        return None
    frontier = max(lasts.values())
    entered = tuple(sorted(r for r, s in lasts.items() if s == frontier))
    late = tuple(sorted(r for r, s in lasts.items() if s < frontier))
    if not late or frontier == 0:
        return None
    first = calls[entered[0]][frontier]
    return Verdict(kind="behind", group=group, seq=frontier, op=first.op, entered=entered, culprits=late,
                   where=first.frame, found={r: calls[r][lasts[r]] for r in late if lasts[r]})


def merge(table: list[Place], dumps: Mapping[int, RankDump | None], found: Verdict | None) -> list[Place]:
    """The places with what the records add: each rank's collective number (``seq``: the one it waits in, or its
    last), a rank that entered the collective the others wait for placed in it (its stack may be elsewhere:
    NCCL's collectives run on the GPU), a rank without a stack given its last collective's line, and with
    mismatched sizes each rank's sizes (pure)."""
    group = found.group if found is not None else DEFAULT_GROUP
    merged = []
    for place in table:
        dump = dumps.get(place.rank)
        calls = dump.collectives(group) if dump is not None else {}
        if not calls:
            merged.append(place)
            continue
        mine = _current(place.rank, calls, found)
        changes: dict[str, Any] = {"seq": mine.seq}
        if found is not None and found.kind == "sizes":
            changes["sizes"] = mine.sizes
        if found is not None and found.kind == "behind" and place.rank in found.culprits:
            pass  # its last collective is behind it (the others went past it): where it is, its stack says
        elif found is not None and place.state in ("user", "unknown"):  # in the collective the others wait in
            changes.update(state="collective", op=mine.op, call=None, **_line(mine.frame))
        elif found is None and place.file is None and place.state == "unknown" and mine.state != "completed":
            changes.update(state="collective", op=mine.op, **_line(mine.frame))
        merged.append(dataclasses.replace(place, **changes))
    return merged


def _current(rank: int, calls: Mapping[int, Collective], found: Verdict | None) -> Collective:
    """The collective ``rank`` is in by the verdict (a mismatch's number), else its last one."""
    if found is not None and found.kind != "behind" and found.seq in calls:
        return calls[found.seq]
    return calls[max(calls)]


def _line(frame: Frame | None) -> dict[str, Any]:
    if frame is None:
        return {"file": None, "line": None, "function": None}
    return {"file": frame.file, "line": frame.line, "function": frame.function}


def _at(frame: Frame) -> str:
    return f"at {Path(frame.file).name}:{frame.line} in {frame.function}"


def _where(found: Collective) -> str:
    return f" {_at(found.frame)}" if found.frame else ""


def _called(found: Collective, kind: Kind) -> str:
    return f"{found.op} of {found.sizes} (collective {found.seq})" if kind == "sizes" else found.label()


def _ranks(ranks: Iterable[int]) -> str:
    listed = sorted(ranks)
    return f"rank{'s' if len(listed) > 1 else ''} {', '.join(map(str, listed))}"
