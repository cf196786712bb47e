"""orch doctor judged on real code: public training scripts (tests/doctor/real/) and their hand-read truth.

``tests/doctor/real/truth.yaml`` lists, per script, the real distributed-training pitfalls (code, file,
line, reason, severity_ok) and known false findings. This module runs the doctor's Python API on each
script's entry file, matches every finding to the truth and scores it:

* a finding is **true** when a pitfall has the same code and file and its line is within
  ``LINE_TOLERANCE`` of the pitfall's ``line`` or one of its ``also`` lines (a statement spread over a few
  lines, or the ``torch.save`` inside the helper a guarded call reaches; an ``also`` entry written
  ``"other/file.py:LINE"`` is a line in another file of the script's folder, for a helper module);
  every other finding is false;
* **precision**: true findings / all findings; **error precision**: error-severity findings that are true
  and whose pitfall has ``severity_ok: true`` / all error-severity findings (1.0 when there are none);
* **recall**: pitfalls matched by at least one finding / all pitfalls (``OTHER`` pitfalls, which no code
  covers, count as misses); **coded recall**: the same over the pitfalls with a catalog code (``OTHER`` left out),
  the measure the doctor's targets are set in.

Scripts whose entry has ``heldout: true`` were read (and their truth written) after the doctor was tuned, and
the doctor was not changed for them: they are the honest measure. The table ends with one line per subset
(tuned, set 3, set 4: ``set: N`` in truth.yaml) and one for the scripts still held out; ``--heldout`` /
``--tuned`` / ``--set N`` score one subset alone; ``--default`` scores the doctor's certain and likely findings (the
possible ones left out, as without ``--all``); ``--shown`` scores exactly what ``orch doctor SCRIPT`` prints without
``--all``: the service's reading (``orchestrator.service.doctor.diagnose``, which also drops the finding the script's
launch style answers: DDP014 for a per-node script, DDP015 for a ``--local_rank`` one), possible findings left out.

Run ``python tests/doctor/real_corpus.py`` for the per-code table and the figures (``--findings`` lists
every finding with its verdict).
"""

from __future__ import annotations

import copy
import fcntl
import functools
import hashlib
import inspect
import os
import pickle
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "real"  # the truth and the sources, committed
TRUTH = HERE / "truth.yaml"
SOURCES = HERE / "SOURCES.md"
# The scripts' code: fetched code is never committed, so each checkout holds its own copy, at tests/doctor/real/NAME/
# (git-ignored) or wherever ORCH_DOCTOR_CORPUS points (SOURCES.md names each script's repository, commit and paths).
REAL = Path(os.environ.get("ORCH_DOCTOR_CORPUS") or HERE)
LINE_TOLERANCE = 2
OTHER = "OTHER"


@dataclass(frozen=True)
class Pitfall:
    script: str
    code: str
    file: str
    line: int
    also: tuple[int, ...]
    reason: str
    severity_ok: bool
    name: str = ""
    elsewhere: tuple[tuple[str, int], ...] = ()  # (file, line) in other files of the folder

    def distance(self, code: str, file: str, line: int) -> int | None:
        """How far ``line`` is from this pitfall's lines, or None when the finding cannot be this pitfall."""
        if code != self.code:
            return None
        here = (self.line, *self.also) if file == self.file else ()
        lines = [*here, *(at for f, at in self.elsewhere if f == file)]
        if not lines:
            return None
        gap = min(abs(line - at) for at in lines)
        return gap if gap <= LINE_TOLERANCE else None


@dataclass(frozen=True)
class Judged:
    script: str
    code: str
    severity: str
    file: str
    line: int
    message: str
    pitfall: Pitfall | None
    confidence: str = "likely"  # certain, likely, possible: orch doctor shows possible ones only with --all

    @property
    def true(self) -> bool:
        return self.pitfall is not None

    @property
    def error_ok(self) -> bool:
        return self.pitfall is not None and self.pitfall.severity_ok


@dataclass
class Score:
    findings: list[Judged] = field(default_factory=list)
    pitfalls: list[Pitfall] = field(default_factory=list)

    @property
    def found(self) -> list[Pitfall]:
        return [p for p in self.pitfalls if any(j.pitfall == p for j in self.findings)]

    @property
    def precision(self) -> float:
        return _ratio(sum(j.true for j in self.findings), len(self.findings))

    @property
    def error_precision(self) -> float:
        errors = [j for j in self.findings if j.severity == "error"]
        return _ratio(sum(j.error_ok for j in errors), len(errors))

    @property
    def recall(self) -> float:
        return _ratio(len(self.found), len(self.pitfalls))

    @property
    def coded(self) -> list[Pitfall]:
        """The pitfalls with a catalog code (``OTHER`` left out)."""
        return [p for p in self.pitfalls if p.code != OTHER]

    @property
    def coded_recall(self) -> float:
        return _ratio(sum(p.code != OTHER for p in self.found), len(self.coded))


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else 1.0


def truth() -> dict[str, dict[str, Any]]:
    """The hand-read truth, a fresh copy per call (callers may change it): parsed once per process."""
    return copy.deepcopy(_parsed_truth())


@functools.cache
def _parsed_truth() -> dict[str, dict[str, Any]]:
    # libyaml's loader when PyYAML has it: the truth is 400 KB, a second with the pure-Python one
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = yaml.load(TRUTH.read_text(encoding="utf-8"), Loader=loader)
    assert isinstance(data, dict)
    return data


def absent() -> list[str]:
    """The scripts of the truth whose entry file is not in this checkout's copy of the corpus (``REAL``)."""
    return [name for name, entry in sorted(_parsed_truth().items()) if not (REAL / name / entry["entry"]).is_file()]


def absent_reason() -> str:
    missing = absent()
    return (f"the corpus's code is not here ({len(missing)} of {len(_parsed_truth())} scripts absent, "
            f"{', '.join(missing[:1])} first): fetched code is never committed; copy each script as "
            f"tests/doctor/real/SOURCES.md lists it into {REAL}/NAME/ (tests/doctor/corpus_copy.py does, from fetched "
            f"snapshots) or point ORCH_DOCTOR_CORPUS at such a copy")


def require_code() -> None:
    """For the corpus's command lines: stop, saying why, in a checkout without the corpus's code."""
    if absent():
        raise SystemExit(absent_reason())


def needs_code() -> Any:
    """A pytest mark that skips, with the reason, a test that reads the corpus's code when this checkout has none."""
    import pytest
    missing = absent()
    return pytest.mark.skipif(bool(missing), reason=absent_reason() if missing else "")


def is_heldout(entry: dict[str, Any]) -> bool:
    """Whether the script was judged after the doctor was tuned (``heldout: true``)."""
    value = entry.get("heldout", False)
    assert isinstance(value, bool), f"heldout must be true or false, not {value!r}"
    return value


def set_label(entry: dict[str, Any]) -> str:
    """The set a script came in: ``set 3``, ``set 4`` (``set: N`` in truth.yaml), or ``tuned`` (the first 66)."""
    return f"set {entry['set']}" if "set" in entry else "tuned"


def subset(heldout: bool) -> list[str]:
    """The scripts of one subset: held out (``heldout: true``) or tuned (the rest)."""
    return [name for name, entry in sorted(truth().items()) if is_heldout(entry) == heldout]


def also_lines(item: dict[str, Any]) -> list[tuple[str, int]]:
    """A truth item's ``line`` and ``also`` lines as (file, line); ``"file.py:LINE"`` names another file."""
    out = [(item["file"], int(item["line"]))]
    for x in item.get("also", ()):
        file, _, line = str(x).rpartition(":")
        out.append((file or item["file"], int(line)))
    return out


def pitfalls(name: str, entry: dict[str, Any]) -> list[Pitfall]:
    out = []
    for p in entry.get("pitfalls") or ():
        lines = also_lines(p)[1:]
        out.append(Pitfall(script=name, code=p["code"], file=p["file"], line=int(p["line"]),
                           also=tuple(at for f, at in lines if f == p["file"]), reason=p["reason"],
                           severity_ok=bool(p["severity_ok"]), name=p.get("name", ""),
                           elsewhere=tuple((f, at) for f, at in lines if f != p["file"])))
    return out


# A folder the test workers of one run share (tests/doctor/conftest.py sets it under pytest-xdist): what one worker
# read there, no other reads again. None: each process reads for itself.
SHARED: Path | None = None


@functools.cache
def read_once(text: str, filename: str) -> tuple[Any, ...]:
    """``check_source(text, filename)``: read once per test process and, where the workers share ``SHARED``, once
    per run (the doctor is deterministic: a file's text and its project, which the tests never change)."""
    from orchestrator.doctor.check import check_source
    if SHARED is None:
        return tuple(check_source(text, filename))
    SHARED.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(f"{filename}\0{text}".encode()).hexdigest()
    done = SHARED / f"{key}.pickle"
    with open(SHARED / f"{key}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a worker reading it now: wait for its reading
        if done.exists():
            found: tuple[Any, ...] = pickle.loads(done.read_bytes())
            return found
        found = tuple(check_source(text, filename))
        partial = done.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(found))
        partial.replace(done)
        return found


def reader(text: str, filename: str) -> list[Any]:
    """``read_once`` as ``orch doctor --fix`` calls its reader."""
    return list(read_once(text, filename))


@functools.cache
def run_doctor(entry: Path) -> tuple[Any, ...]:
    """The doctor's findings for one script, following its local imports when the doctor can: ``check_files``'s
    reading (a script's findings, a place and code once), read once (``read_once``): the corpus's tests, the fixes'
    and the bench score the same scripts several ways."""
    from orchestrator.doctor import check
    params = inspect.signature(check.check_files).parameters
    options = {name: True for name in params if "follow" in name or name in ("imports", "local_imports")}
    if options:  # an older tree's reading (a measurement on an exported commit)
        return tuple(check.check_files([entry], **options))
    return tuple(check.dedupe(read_once(check.read_script(entry), str(entry))))


def _relative(file: str, folder: Path) -> str:
    path = Path(file)
    path = path if path.is_absolute() else (Path.cwd() / path)
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        return file


def shown_by_orch_doctor(entry: Path) -> list[Any]:
    """What ``orch doctor ENTRY`` prints without ``--all``: the service's reading (the finding the launch style
    answers dropped), less the possible findings."""
    from orchestrator.doctor.layouts import Asked
    from orchestrator.service.doctor import diagnose
    return [f for f in diagnose([str(entry)], (), Asked()).findings if f.confidence != "possible"]


def judge(name: str, entry: dict[str, Any], shown: bool = False) -> Score:
    folder = REAL / name
    real = pitfalls(name, entry)
    score = Score(pitfalls=real)
    for f in (shown_by_orch_doctor if shown else run_doctor)(folder / entry["entry"]):
        file = _relative(f.file, folder)
        near = [(gap, i) for i, p in enumerate(real) if (gap := p.distance(f.code, file, f.line)) is not None]
        hit = real[min(near)[1]] if near else None  # the closest pitfall
        score.findings.append(Judged(name, f.code, f.severity, file, f.line, f.message, hit, f.confidence))
    return score


def score_all(names: Sequence[str] | None = None, shown: bool = False) -> dict[str, Score]:
    data = truth()
    return {name: judge(name, data[name], shown) for name in (names or sorted(data))}


def default_output(scores: dict[str, Score]) -> dict[str, Score]:
    """What ``orch doctor`` shows without ``--all``: the certain and likely findings (the possible ones left out)."""
    return {name: Score(findings=[j for j in s.findings if j.confidence != "possible"], pitfalls=s.pitfalls)
            for name, s in scores.items()}


def total(scores: dict[str, Score]) -> Score:
    out = Score()
    for s in scores.values():
        out.findings.extend(s.findings)
        out.pitfalls.extend(s.pitfalls)
    return out


def figures(label: str, scores: dict[str, Score]) -> str:
    s = total(scores)
    true = sum(j.true for j in s.findings)
    errors = [j for j in s.findings if j.severity == "error"]
    return (f"{label} ({len(scores)} scripts): precision {s.precision:.2f} ({true} of {len(s.findings)}), "
            f"error precision {s.error_precision:.2f} ({sum(j.error_ok for j in errors)} of {len(errors)}), "
            f"recall {s.recall:.2f} ({len(s.found)} of {len(s.pitfalls)}), coded recall {s.coded_recall:.2f} "
            f"({sum(p.code != OTHER for p in s.found)} of {len(s.coded)})")


def subset_lines(scores: dict[str, Score]) -> list[str]:
    """One figures line per set present in ``scores`` (tuned, set 3, set 4, ...), then one for the scripts
    still held out (``heldout: true``: judged, never tuned on), if any."""
    data = truth()
    lines = []
    for label in sorted({set_label(data[n]) for n in scores}, key=lambda x: (x != "tuned", x)):
        lines.append(figures(label, {n: s for n, s in scores.items() if set_label(data[n]) == label}))
    held = {n: s for n, s in scores.items() if is_heldout(data[n])}
    if held:
        lines.append(figures("held out", held))
    return lines


def table(scores: dict[str, Score]) -> str:
    """Per code: findings, true, false, errors (of which justified), pitfalls, found; then the figures."""
    all_ = total(scores)
    codes = sorted({j.code for j in all_.findings} | {p.code for p in all_.pitfalls}, key=lambda c: (c == OTHER, c))
    rows = ["| code | findings | true | false | errors (justified) | pitfalls | found | missed |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for code in codes:
        fs = [j for j in all_.findings if j.code == code]
        ps = [p for p in all_.pitfalls if p.code == code]
        errors = [j for j in fs if j.severity == "error"]
        found = [p for p in all_.found if p.code == code]
        rows.append(f"| {code} | {len(fs)} | {sum(j.true for j in fs)} | {sum(not j.true for j in fs)} | "
                    f"{len(errors)} ({sum(j.error_ok for j in errors)}) | {len(ps)} | {len(found)} | "
                    f"{len(ps) - len(found)} |")
    rows.append(f"| all | {len(all_.findings)} | {sum(j.true for j in all_.findings)} | "
                f"{sum(not j.true for j in all_.findings)} | "
                f"{sum(j.severity == 'error' for j in all_.findings)} "
                f"({sum(j.error_ok for j in all_.findings if j.severity == 'error')}) | {len(all_.pitfalls)} | "
                f"{len(all_.found)} | {len(all_.pitfalls) - len(all_.found)} |")
    rows.append("")
    rows.append(f"{len(scores)} scripts: precision {all_.precision:.2f}, error precision "
                f"{all_.error_precision:.2f}, recall {all_.recall:.2f}, coded recall {all_.coded_recall:.2f}")
    rows.extend(subset_lines(scores))
    return "\n".join(rows)


def listing(scores: dict[str, Score]) -> str:
    lines = []
    for name, s in scores.items():
        for j in s.findings:
            verdict = "TRUE " if j.true else "FALSE"
            lines.append(f"{verdict} {name}/{j.file}:{j.line}: {j.code} {j.severity} ({j.confidence}): "
                         f"{j.message[:90]}")
        for p in s.pitfalls:
            if p not in s.found:
                label = f"{p.code} ({p.name})" if p.name else p.code
                lines.append(f"MISSED {name}/{p.file}:{p.line}: {label}: {p.reason[:90]}")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    require_code()
    sys.path.insert(0, str(ROOT))
    names = [a for a in argv if not a.startswith("-") and not a.isdigit()]
    if "--heldout" in argv or "--tuned" in argv:
        names = names or subset(heldout="--heldout" in argv)
        if not names:
            print("no held-out scripts: every set has been tuned on (score one with --set N)")
            return 0
    if "--set" in argv:  # --set 4: the scripts of one set
        wanted = f"set {argv[argv.index('--set') + 1]}"
        names = [n for n, e in sorted(truth().items()) if set_label(e) == wanted and n not in argv]
    scores = score_all(names or None, shown="--shown" in argv)
    if "--default" in argv:  # the default output: possible findings left out, as orch doctor without --all
        scores = default_output(scores)
    if "--findings" in argv:
        print(listing(scores))
        print()
    print(table(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
