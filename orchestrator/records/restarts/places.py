"""Where each rank was when a hang ended, and which rank the others waited for: pure functions.

Each rank that gave up in a collective, or was stopped while stuck, leaves its Python stack in the job folder
(:mod:`orchestrator.records.stacks`). :func:`classify` reads one rank's stack and says where it was:

- ``collective``: in a collective (which one: the ``torch.distributed`` function, or ``all_reduce`` for a
  ``backward`` under DDP), and the user's line that called it;
- ``user``: in the user's code (the innermost user frame: function, file:line, and the call on that line);
- ``exited``: no stack, the rank had already ended (its exit code, from the records);
- ``unknown``: no stack and no exit code.

User frames are the frames outside torch, orch, installed packages and the standard library.
:func:`culprit` names the rank the others waited for: a rank outside the collective they wait in (in user
code, exited), or, when all ranks are in collectives, the rank in a different collective than the others.
:func:`sentence` says it in one line, e.g. ``rank 1 stopped at stuck.py:16 in load_batch (time.sleep) while
rank 0 waited in all_reduce at stuck.py:23 (loss.backward)``. No I/O here.
"""

from __future__ import annotations

import re
import signal
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import PurePath
from typing import Any, Literal

State = Literal["collective", "user", "exited", "unknown"]
WAITED_HEADER = "orch: this rank waited in a collective and gave up"  # the first line of a waiter's stack file
STOPPED_HEADER = "orch: this rank was stopped while running"  # the first line of a stopped rank's stack file
NATIVE_HEADER = "orch: this rank did not answer (native code); its log's faulthandler dump"  # read from its log

# torch.distributed's collectives, by the name of the function a user calls
COLLECTIVES = frozenset({
    "all_reduce", "broadcast", "barrier", "monitored_barrier", "all_gather", "all_gather_into_tensor",
    "all_gather_object", "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "reduce",
    "gather", "gather_object", "scatter", "scatter_object_list", "broadcast_object_list", "send", "recv",
    "isend", "irecv", "batch_isend_irecv", "all_reduce_coalesced", "new_group", "destroy_process_group",
})
BACKWARD_FUNCTIONS = frozenset({"backward", "_engine_run_backward", "run_backward"})  # DDP all-reduces in these
# A frame's file -> not the user's: the standard library, installed packages, orch's own code, frozen modules.
LIBRARY = re.compile(r"(^<frozen |[/\\](site|dist)-packages[/\\]|[/\\]lib[/\\]python3\.\d+[/\\]|"
                     r"[/\\]orchestrator[/\\](task|runtime|records|local|slurm|commands|spec|env)[/\\])")
TORCH_DISTRIBUTED = re.compile(r"[/\\]torch[/\\]distributed[/\\]")
TORCH_AUTOGRAD = re.compile(r"[/\\]torch[/\\](autograd[/\\]|_tensor\.py)")
# A framework's signal handler runs on top of the code the signal interrupted, and may call a collective of
# its own (Lightning's SIGTERM handler broadcasts the signal to the other ranks): where the rank was is the
# frame the handler interrupted, and the handler's failed collective is not a place it waited in.
SIGNAL_HANDLERS = re.compile(r"[/\\](lightning[/\\]pytorch|pytorch_lightning)[/\\]trainer[/\\]connectors[/\\]"
                             r"signal_connector\.py$")
_FAULT_FRAME = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+) in (?P<func>.*?)\s*$')
_TRACE_FRAME = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+), in (?P<func>.*?)\s*$')
_THREAD = re.compile(r"^(Current thread|Thread) 0x[0-9a-fA-F]+")
_CALL = re.compile(r"([A-Za-z_][\w.]*)\s*\(")
_NOT_CALLS = frozenset({"if", "while", "for", "return", "print", "not", "and", "or", "in", "elif", "with", "assert"})


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str
    source: str = ""  # the line's code, when the stack carries it (a traceback's format)


@dataclass(frozen=True)
class Place:
    """One rank's place when the hang ended (a row of the table in ``places.json``)."""

    rank: int
    state: State
    op: str | None = None  # collective: which one
    file: str | None = None  # the innermost user frame
    line: int | None = None
    function: str | None = None
    call: str | None = None  # what that line was calling (``time.sleep``, ``loss.backward``)
    exit_code: int | None = None
    seq: int | None = None  # NCCL's flight recorder: the number of the collective it is in, or of its last one
    sizes: str | None = None  # the flight recorder's input sizes, where the ranks' sizes differ

    def label(self) -> str:
        """``all_reduce (collective 42)`` (with the flight recorder's number), ``all_reduce of [[8, 4]] (collective
        42)`` (sizes differ)."""
        sizes = f" of {self.sizes}" if self.sizes else ""
        return f"{self.op}{sizes}" + (f" (collective {self.seq})" if self.seq is not None else "")

    def where(self) -> str:
        """``at stuck.py:16 in load_batch (time.sleep)``; ``outside the user's code`` without a user frame."""
        if self.file is None:
            return "outside the user's code"
        text = f"at {PurePath(self.file).name}:{self.line} in {self.function}"
        return text + (f" ({self.call})" if self.call else "")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_frames(text: str) -> list[Frame]:
    """The main thread's frames, outermost first, from a faulthandler dump (innermost first, one block per
    thread) or a Python traceback (outermost first, each frame's code on the next line). The main thread:
    the block with a ``<module>`` frame, else the first."""
    blocks: list[list[Frame]] = []
    innermost_first: list[bool] = []
    current: list[Frame] | None = None
    for raw in text.splitlines():
        if _THREAD.match(raw) or raw.startswith("Traceback (most recent call last)") or raw.startswith("Stack "):
            current = []
            blocks.append(current)
            innermost_first.append(not raw.startswith("Traceback") and "most recent call last" not in raw)
            continue
        trace, fault = _TRACE_FRAME.match(raw), _FAULT_FRAME.match(raw)
        found = trace or fault
        if found is not None:
            if current is None:
                current = []
                blocks.append(current)
                innermost_first.append(fault is not None)
            current.append(Frame(found["file"], int(found["line"]), found["func"]))
        elif current and raw.startswith("    ") and raw.strip() and not current[-1].source:
            last = current[-1]
            current[-1] = Frame(last.file, last.line, last.function, raw.strip())
    chosen = next((i for i, b in enumerate(blocks) if any(f.function == "<module>" for f in b)), 0 if blocks else None)
    if chosen is None:
        return []
    frames = blocks[chosen]
    return list(reversed(frames)) if innermost_first[chosen] else frames


def last_dump(log: str, stopped_note: str) -> str | None:
    """The last faulthandler dump in a rank's log when nothing of Python's followed it (no ``stopped_note``: the
    rank never ran Python again, blocked in native code), as a traceback (outermost first); else None."""
    lines = log.splitlines()
    heads = [i for i, line in enumerate(lines) if _THREAD.match(line)]
    if not heads:
        return None
    end = heads[-1] + 1
    while end < len(lines) and (_FAULT_FRAME.match(lines[end]) or lines[end].strip() in ("", "<no Python frame>")):
        end += 1
    if any(stopped_note in line for line in lines[end:]):
        return None
    start = heads[-1]
    while start > 0 and (_THREAD.match(lines[start - 1]) or _FAULT_FRAME.match(lines[start - 1])
                         or not lines[start - 1].strip()):
        start -= 1
    return "\n".join(lines[start:end])


def user_frame(frame: Frame) -> bool:
    return LIBRARY.search(frame.file) is None


def collective_of(frames: list[Frame]) -> str | None:
    """The collective these frames are in (innermost first), or None."""
    for frame in reversed(frames):
        if TORCH_DISTRIBUTED.search(frame.file) and frame.function in COLLECTIVES:
            return frame.function
    if any(TORCH_AUTOGRAD.search(f.file) and f.function in BACKWARD_FUNCTIONS for f in frames):
        return "all_reduce"  # DDP's gradient all-reduce runs in backward
    return None


def call_on(frames: list[Frame], index: int) -> str | None:
    """What the frame at ``index`` was calling: the first call in its code, else the next frame's function."""
    source = frames[index].source
    for found in _CALL.finditer(source.split("#", 1)[0]):
        if found.group(1) not in _NOT_CALLS:
            return found.group(1)
    return frames[index + 1].function if index + 1 < len(frames) else None


def classify(rank: int, stack: str | None, exit_code: int | None) -> Place:
    """One rank's place from its stack text (None: it left none) and its exit code (None: unknown)."""
    frames = parse_frames(stack or "")
    handler = next((i for i, f in enumerate(frames) if SIGNAL_HANDLERS.search(f.file)), None)
    frames = frames[:handler] if handler else frames  # where the signal found it
    if not frames:
        return Place(rank=rank, state="exited" if exit_code is not None else "unknown", exit_code=exit_code)
    op = collective_of(frames)
    if op is None and handler is None and stack is not None and stack.startswith(WAITED_HEADER):
        op = "a collective"
    users = [i for i, f in enumerate(frames) if user_frame(f)]
    state: State = "collective" if op is not None else "user"
    if not users:
        return Place(rank=rank, state=state, op=op, exit_code=exit_code)
    at = users[-1]
    frame = frames[at]
    return Place(rank=rank, state=state, op=op, file=frame.file, line=frame.line, function=frame.function,
                 call=call_on(frames, at), exit_code=exit_code)


def table(stacks: Mapping[int, str | None], exit_codes: Mapping[int, int | None]) -> list[Place]:
    """Every rank's place, by rank (pure)."""
    return [classify(rank, stacks.get(rank), exit_codes.get(rank)) for rank in sorted({*stacks, *exit_codes})]


def culprit(places: list[Place]) -> Place | None:
    """The rank the others waited for; None when no rank waited in a collective (not a hang)."""
    waiting = [p for p in places if p.state == "collective"]
    if not waiting:
        return None
    outside = [p for p in places if p.state != "collective"]
    if outside:  # in user code first, then exited, then without a word
        order: dict[State, int] = {"user": 0, "exited": 1, "unknown": 2, "collective": 3}
        return min(outside, key=lambda p: (order[p.state], p.rank))
    seqs = {p.seq for p in waiting}
    if None not in seqs and len(seqs) > 1:  # the flight recorder's numbers: the rank behind the others
        return min(waiting, key=lambda p: (p.seq or 0, p.rank))
    counts = Counter((p.op, p.sizes) for p in waiting)
    if len(counts) < 2:
        return None  # every rank in the same collective: nothing here says who is late
    fewest = min(counts.values())
    return min((p for p in waiting if counts[(p.op, p.sizes)] == fewest), key=lambda p: p.rank)  # mismatched


def sentence(places: list[Place]) -> str | None:
    """``rank 1 stopped at stuck.py:16 in load_batch (time.sleep) while rank 0 waited in all_reduce at
    stuck.py:23 (loss.backward)``; None when no rank is to blame."""
    found = culprit(places)
    if found is None:
        return None
    others = [p for p in places if p.state == "collective" and p.rank != found.rank]
    front = max((p.seq for p in others if p.seq is not None), default=None)
    if front is not None and (found.seq is None or found.seq < front):  # the flight recorder: it is behind
        ahead = [p for p in others if p.seq == front]
        rest = "; ".join(_waited(group) for group in _by_site([p for p in others if p.seq != front]))
        after = f", after collective {found.seq}" if found.seq is not None else ""
        return (f"rank {found.rank} never reached collective {front} ({ahead[0].op}), which {_ranks(ahead)} entered "
                f"{ahead[0].where()}; rank {found.rank} {_doing(found)}{after}" + (f"; {rest}" if rest else ""))
    waits = "; ".join(_waited(group) for group in _by_site(others))
    lead = f"rank {found.rank} {_doing(found)}"
    mismatched = " (mismatched collectives)" if found.state == "collective" else ""
    return (f"{lead} while {waits}" if waits else lead) + mismatched


def _doing(found: Place) -> str:
    if found.state == "collective":
        return f"was in {found.label()} {found.where()}"
    if found.state == "user":
        return f"stopped {found.where()}"
    if found.state == "exited":
        return f"had {_exited(found.exit_code or 0)}"
    # stopped where Python could not answer the signal (native code): faulthandler's dump is in its log
    return "stopped where Python could not answer (no stack; see its log)"


def _ranks(group: list[Place]) -> str:
    return f"rank{'s' if len(group) > 1 else ''} {', '.join(str(p.rank) for p in group)}"


def _by_site(places: list[Place]) -> list[list[Place]]:
    groups: dict[tuple[str | None, str], list[Place]] = {}
    for place in places:
        groups.setdefault((place.label(), place.where()), []).append(place)
    return list(groups.values())


def _waited(group: list[Place]) -> str:
    return f"{_ranks(group)} waited in {group[0].label()} {group[0].where()}"


def _exited(code: int) -> str:
    if code >= 0:
        return f"exited with code {code}"
    try:
        return f"been killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"been killed by signal {-code}"
