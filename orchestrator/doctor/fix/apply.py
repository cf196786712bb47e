"""Run the fixers on one script until no fixable finding is left: each fix is made on the doctor's findings
of the text as it stands (a fix moves the lines below it), then the doctor reads the result again."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import libcst as cst

from orchestrator.doctor.check import check_source
from orchestrator.doctor.confidence import shown
from orchestrator.doctor.findings import DoctorInputError, Finding
from orchestrator.doctor.fix import destroy, device, local_rank, map_location, rank0_save, set_epoch
from orchestrator.doctor.fix.cst import Source
from orchestrator.doctor.fix.tryfinally import NoFix

Fixer = Callable[[Source, Finding], "cst.Module | None"]

FIXERS: dict[str, Fixer] = {
    "DDP001": device.fix,        # torch.cuda.set_device(local_rank) before init_process_group
    "DDP004": set_epoch.fix,     # sampler.set_epoch(epoch) first in the epoch loop
    "DDP006": rank0_save.fix,    # if dist.get_rank() == 0: torch.save(...), then dist.barrier()
    "DDP007": destroy.fix,       # destroy_process_group() out of the loop, into a finally (or at the end)
    "DDP009": map_location.fix,  # torch.load(..., map_location="cpu")
    "DDP015": local_rank.fix,    # args.local_rank = int(os.environ.get("LOCAL_RANK", args.local_rank))
}
_MAX_FIXES = 100  # a bound on the loop, far above any script's findings
_NO_FIX = "no fix of this form here: change it by hand (the fix line says how)"


@dataclass
class Fixed:
    """The fixed text, the findings fixed and the fixable findings left as they were (each with the reason),
    at their lines in the text as it was given."""

    text: str
    fixed: list[Finding] = field(default_factory=list)
    left: list[tuple[Finding, str]] = field(default_factory=list)
    possible: int = 0  # fixable findings of confidence "possible" left as they were (no show_all)
    findings: list[Finding] = field(default_factory=list)  # the doctor's findings in the fixed text
    before: list[Finding] = field(default_factory=list)  # the doctor's findings in the text as given


def fix_source(source: str, filename: str, ignore: Collection[str] = (), show_all: bool = False,
               reader: Callable[[str, str], list[Finding]] = check_source) -> Fixed:
    """The script's text with every fixable finding of ``filename`` that the doctor shows (certain and likely;
    the possible ones too with ``show_all``, as ``--all``), less the codes in ``ignore``, fixed. ``reader``
    reads a text as ``check_source(text, filename)`` does (a caller that has read the script already passes
    its own, which remembers)."""
    result = Fixed(text=source)
    checked: dict[str, list[Finding]] = {}  # the doctor's findings by text: each text is read once

    def check(text: str) -> list[Finding]:
        if text not in checked:
            checked[text] = reader(text, filename)
        return checked[text]

    tried: set[tuple[str, str]] = set()  # (code, the finding's source line) of a fix that could not be made
    first = source.splitlines()
    original: dict[tuple[str, str], list[Finding]] = {}  # the findings at the lines the user has, by code and text
    result.before = check(source)
    for f in result.before:
        original.setdefault((f.code, _at(first, f.line)), []).append(f)
        result.possible += f.file == filename and f.code in FIXERS and f.code not in ignore and not shown(
            f.confidence, show_all)
    for _ in range(_MAX_FIXES):
        lines = result.text.splitlines()
        now = check(result.text)
        todo = [f for f in now if f.file == filename and f.code in FIXERS and f.code not in ignore
                and shown(f.confidence, show_all) and (f.code, _at(lines, f.line)) not in tried]
        if not todo:
            break
        key = (todo[0].code, _at(lines, todo[0].line))
        finding = (original.get(key) or [todo[0]])[0]
        try:
            new = FIXERS[finding.code](Source(cst.parse_module(result.text), parsed=True), todo[0])
        except cst.ParserSyntaxError:  # syntax Python's parser takes and libcst's does not: said, never a traceback
            result.left.extend((f, "libcst cannot parse this file: change it by hand (the fix line says how)")
                               for f in todo)
            break
        except NoFix as exc:  # a fixer that says why it refuses
            new, why = None, f"{exc}: change it by hand (the fix line says how)"
        else:
            why = _NO_FIX
        code = new.code if new is not None else None  # libcst writes the whole module out at each .code: once
        if code is None or code == result.text or not _fixes(code, check, finding.code, now):
            tried.add(key)  # not tried again (nor a finding of the same code on a line that reads the same)
            same = [f for f in todo if (f.code, _at(lines, f.line)) == key]  # each left, at the user's line
            users = original.get(key) or []
            result.left.extend((users[i] if i < len(users) else f, why) for i, f in enumerate(same))
            continue
        result.text = code
        result.fixed.append(finding)
        if original.get(key):
            original[key].pop(0)
    result.findings = check(result.text)  # read already (by the loop or by _fixes)
    return result


def _at(lines: list[str], line: int) -> str:
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _fixes(text: str, check: Callable[[str], list[Finding]], code: str, before: list[Finding]) -> bool:
    """The doctor reports fewer findings of ``code`` in the fixed text, and no more errors."""
    try:
        after = check(text)
    except DoctorInputError:  # a fix that breaks the parse is no fix
        return False
    def count(findings: list[Finding], wanted: Callable[[Finding], bool]) -> int:
        return sum(1 for f in findings if wanted(f))
    return (count(after, lambda f: f.code == code) < count(before, lambda f: f.code == code)
            and count(after, lambda f: f.severity == "error") <= count(before, lambda f: f.severity == "error"))


def unified_diff(before: str, after: str, path: str) -> str:
    """``--- PATH`` / ``+++ PATH`` hunks (``patch -p0 < fix.diff`` applies them where PATH was given); empty
    when nothing changed."""
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=path,
                                 tofile=path)
    return "".join(line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n" for line in lines)
