"""orch doctor on real public training scripts (tests/doctor/real/): precision and recall against truth
read by hand (truth.yaml). The floors are today's figures, rounded down: a change that makes the doctor
worse on real code fails here. `pytest -s` prints the per-code table and one line per subset.

Three sets: the 66 *tuned* scripts were read while the doctor was built (12 of them were the first held-out set,
seen by the third tuning, 12 the second, seen by the fourth); sets 3 and 4 (``set: N``) were each read and
judged, and their truth committed, before the doctor was run on them (the honest measure, docs/doctor.md, "Judged
on real code"), then tuned on by the fifth tuning; sets 5 and 6 likewise, measured held out, then tuned on by the
sixth and seventh tunings (no set is held out now). Each set keeps its own floors so a regression on one cannot
hide behind another (the doctor is deterministic)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from real_corpus import (
    LINE_TOLERANCE,
    OTHER,
    REAL,
    SOURCES,
    absent,
    also_lines,
    default_output,
    is_heldout,
    needs_code,
    run_doctor,
    score_all,
    set_label,
    table,
    total,
    truth,
)

from orchestrator.doctor.catalog import CATALOG

# The tests that read the scripts' code skip, with the reason, in a checkout without the corpus (fetched code is never
# committed: the CI's clean clone has the truth and the sources, not the code).
needs_corpus = needs_code()

# Before the doctor's rules, on the first 42 scripts: precision 0.19, error precision 0.00, recall 0.17 (7 of 40).
# After the second tuning: 1.00 (35 of 35), 1.00 (no error finding), 0.70 (28 of 40); its first held-out 12: 1.00
# (9 of 9), 0.33 (8 of 24). Third tuning (DDP014, DDP006's per-node guards, DDP009/DDP006 in the project's classes):
# the 54 tuned scripts 1.00 (61 of 61), recall 0.77 (49 of 64); the new held-out 12: precision 0.40 (4 of 10),
# recall 0.20 (4 of 20); whole corpus (66): 0.92 (65 of 71), 1.00 (no error finding), 0.63 (53 of 84).
# Fourth tuning (DDP015, DDP008 on environment-built URLs, DDP004/DDP011 through helpers and .shuffle()): the 66 tuned
# scripts 0.96 (79 of 82), recall 0.77 (65 of 84); set 3 (judged before the doctor ran on them): precision 0.84
# (21 of 25), recall 0.78 (18 of 23).
# Fifth tuning: set 4 (12 scripts, judged and committed before the doctor ran on them) measured first: precision 0.19
# (3 of 16), recall 0.30 (3 of 10). Then tuned on sets 3 and 4 (DDP016; rank-aware loggers, evaluation samplers,
# URLs built from the environment, sys.path helpers, spawn targets followed, a --rank flag's default, ...): tuned 66
# 0.98 (84 of 86), recall 0.81 (68 of 84); set 3 0.96 (23 of 24), 0.87 (20 of 23); set 4 0.80 (8 of 10), 0.80 (8 of
# 10); whole corpus (90) 0.96 (115 of 120), error precision 1.00 (no error finding), recall 0.82 (96 of 117).
# Set 5 (11 scripts, held out: judged and committed before the doctor ran on them, never tuned on): measured 0.76
# (13 of 17), error precision 0.00 (3 error findings, all false: DGL's use_ddp loaders, WeNet's subgroup destroy),
# recall 0.48 (10 of 21); after fixing only those two error false findings 0.93 (13 of 14), 1.00, 0.48. Whole corpus
# (101) then 0.96 (128 of 134), 1.00, recall 0.77 (106 of 138).
# Sixth tuning (set 5 no longer held out; DDP008 on %-/format-built URLs, DDP005 past a helper's kept results): set 5
# 0.94 (15 of 16), 1.00, recall 0.57 (12 of 21); other sets unchanged; whole corpus 0.96 (130 of 136), 1.00, recall
# 0.78 (108 of 138).
# Set 6 (11 scripts, held out: judged and committed before the doctor ran on them): measured 0.39 (12 of 31), error
# precision 1.00 (no error finding), recall 0.62 (10 of 16); whole corpus (112) then 0.85 (142 of 167), recall 0.77
# (118 of 154). Seventh tuning (set 6 no longer held out; DDP016 on a DistributedSampler's rank=, an absolute import
# beside its relative fallback, attributes/own rank helpers by what they hold, a script's rank-0 flag in its helpers,
# stdout silenced off rank 0, full-set and counter values in DDP005, the 'module.' prefix handled, DDP009 after a
# helper's set_device; two reader misses added to the truth): set 6 0.80 (20 of 25), recall 0.89 (16 of 18); other
# sets unchanged; whole corpus 0.93 (150 of 161), 1.00, recall 0.79 (124 of 156). The whole-corpus precision floor
# falls from 0.95 to 0.93 because set 6 joined the corpus (no set lost a true finding or gained a false one).
MIN_PRECISION = 0.93
MIN_ERROR_PRECISION = 1.0
# Set 7 (3 scripts, held out: judged and committed before the doctor ran on them): measured 0.50 (4 of 8), error
# precision 1.00 (no error finding), recall 0.27 (3 of 11). Eighth tuning (DDP017 forward through .module, DDP018 a
# backward skipped on one rank, DDP001 on named-but-unbound devices): set 7 1.00 (12 of 12), recall 0.55 (6 of 11);
# whole corpus (115) 0.94 (164 of 175), 1.00, recall 0.78 (132 of 169): the recall floor falls from 0.79 to 0.78
# because set 7 joined (no set lost a true finding; sets 4 and 5 gained one each).
# Set 8 (7 framework scripts, held out: judged and committed before the doctor ran on them): measured 1.00 (0 of 0),
# error precision 1.00, recall 0.00 (0 of 5); whole corpus (122) then 0.94 (164 of 175), 1.00, recall 0.76 (132 of
# 174). Ninth tuning (framework collectives and conditions in DDP002, Lightning's spawn strategies in DDP014, DDP005
# under Fabric/Accelerate, class aliases followed, DDP019 a swallowed init failure, DDP016 on gathered lists): set 8
# 1.00 (1 of 1), recall 0.20 (1 of 5); whole corpus 0.94 (171 of 182), 1.00, recall 0.78 (136 of 175): the recall
# floor falls from 0.78 to 0.77 because set 8 joined (5 pitfalls, 3 of them OTHER); no set lost a true finding.
MIN_RECALL = 0.77
# DDP020 (names nothing defines, pyflakes): 4 names no file defines, confirmed by hand and added to the truth (DINO's
# sys, KAIR's pickle, LoRA's warnings, simclr's EmbEnsEval; all warnings); whole corpus 0.94 (175 of 186), recall 0.78.
# Per set: (precision, recall) floors.
MIN_SUBSET = {"tuned": (0.97, 0.82), "set 3": (0.95, 0.86), "set 4": (0.80, 0.80), "set 5": (0.93, 0.57),
              "set 6": (0.80, 0.89), "set 7": (1.0, 0.63), "set 8": (1.0, 0.20)}
# The default output (orch doctor without --all: its possible findings left out) on the 122 scripts of the tuned
# sets and sets 3 to 8, where it was first measured: precision 0.96 (174 of 182), recall 0.78 (139 of 179); --all
# there: 0.94 (175 of 186), 0.78 (140 of 179). (precision, recall) floors, rounded down. Since the findings of the
# places measured weak on code never seen are possible (confidence.MEASURED_WEAK: a helper module's DDP005, DDP006,
# DDP009, DDP019, DDP020), the default output there is 0.98 (171 findings), recall 0.74: these sets were tuned on, so
# the helper findings left out were mostly true here. Measured again on sets 9-24 (2026-12-02), the script's DDP003,
# DDP017 and DDP005 (but its prints) joined them. Since a launched script's DDP001 is possible (orch's launcher binds
# each rank's GPU first; docs/doctor.md, "Between sets 38 and 39"), cleanrl's and PyG's, judged in sets 4 and 5 as plain
# torchrun runs, are left out too: recall 0.72 (143 of 198), precision 0.98 (2026-12-06).
MIN_DEFAULT = (0.95, 0.72)
DEFAULT_SETS = frozenset({"tuned", "set 3", "set 4", "set 5", "set 6", "set 7", "set 8"})

_CODE = re.compile(r"^(DDP\d{3}|OTHER)$")
# Codes the truth may use before the doctor's catalog has them (checks being added).
_PLANNED = {"DDP011": "unseeded split/shuffle feeding distributed data",
            "DDP012": "device context manager as a bare statement",
            "DDP013": "rank 0's validation shard printed unreduced",
            "DDP022": "a check that the run is on one node"}
# How a script must be started (set 9 on): the orch launch style (or `none`: no style runs it as written, or a list of
# the styles that all run it), the framework, and whether it can work across 2 nodes started that way.
_LAUNCH = {"env", "local-rank-arg", "per-node", "slurm", "none"}
_FRAMEWORK = {"none", "lightning", "fabric", "accelerate", "hf-trainer"}


def test_truth_is_well_formed() -> None:
    """The truth's form; where this checkout has the corpus's code, every file and line it names too."""
    data = truth()
    code = not absent()
    sources = SOURCES.read_text(encoding="utf-8")
    if code:
        assert len(data) == len({p.name for p in REAL.iterdir() if p.is_dir()}), "a folder without truth or the reverse"
    for name, entry in data.items():
        folder = REAL / name
        assert f"| {name} |" in sources, f"{name} is not in SOURCES.md"
        assert not code or (folder / entry["entry"]).is_file(), f"{name}: entry {entry['entry']} missing"
        assert set(entry) <= {"entry", "heldout", "set", "pitfalls", "not_pitfalls", "launch", "framework",
                              "two_nodes", "args"}, f"{name}: unknown key"
        assert isinstance(entry.get("args", []), list) and all(
            isinstance(arg, str) for arg in entry.get("args", [])), f"{name}: args must be a list of strings"
        if "launch" in entry:
            styles = entry["launch"] if isinstance(entry["launch"], list) else [entry["launch"]]
            assert styles and set(styles) <= _LAUNCH, f"{name}: launch {entry['launch']!r}"
            assert entry.get("framework") in _FRAMEWORK, f"{name}: framework {entry.get('framework')!r}"
            assert isinstance(entry.get("two_nodes"), bool), f"{name}: two_nodes must be true or false"
        is_heldout(entry)  # a bool when present
        assert isinstance(entry.get("set", 3), int), f"{name}: set must be a number"
        for kind in ("pitfalls", "not_pitfalls"):
            for item in entry.get(kind) or ():
                where = f"{name}/{item['file']}:{item['line']} {item['code']}"
                assert _CODE.match(item["code"]), where
                assert item["code"] in CATALOG or item["code"] in _PLANNED or item["code"] == OTHER, where
                for file, line in also_lines(item) if code else ():
                    path = folder / file
                    assert path.is_file(), f"{where}: no such file {file}"
                    lines = path.read_text(encoding="utf-8").splitlines()
                    assert 1 <= line <= len(lines) and lines[line - 1].strip(), f"{where}: {file}:{line} is blank/out"
                if kind == "pitfalls":
                    assert isinstance(item["severity_ok"], bool) and item["reason"].strip(), where
                    assert item["code"] != OTHER or item.get("name"), f"{where}: OTHER needs a name"
                else:
                    assert item["why"].strip(), where


@needs_corpus
def test_corpus_files_parse() -> None:
    """Every corpus script's entry is real Python (the doctor must read it). A project module may not be: copied
    verbatim, mobilenetv2.pytorch's ``utils/dataloaders.py`` still calls ``.cuda(async=True)`` (Python 2's keyword),
    which the doctor reads past (it skips a helper it cannot parse and reads the rest)."""
    for name, entry in truth().items():
        path = REAL / name / entry["entry"]
        if path.is_file():
            ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@pytest.fixture(scope="module")
def scores():  # type: ignore[no-untyped-def]
    # A held-out set (heldout: true) is not scored here until it is measured: the doctor must not be run on it
    # (nor tuned on what it shows) before its figures are taken with bench/doctor_corpus.py --set N.
    return score_all([name for name, entry in sorted(truth().items()) if not is_heldout(entry)])


@needs_corpus
def test_real_corpus_scores(scores, capsys) -> None:  # type: ignore[no-untyped-def]
    all_ = total(scores)
    with capsys.disabled():
        print(f"\n(line tolerance {LINE_TOLERANCE})\n" + table(scores))
    assert len(scores) >= 40
    assert all_.precision >= MIN_PRECISION, table(scores)
    assert all_.error_precision >= MIN_ERROR_PRECISION, table(scores)
    assert all_.recall >= MIN_RECALL, table(scores)
    data = truth()
    scored = {set_label(data[n]) for n in scores}
    assert scored == set(MIN_SUBSET), "a set without floors (or floors without a set)"
    for label, (precision, recall) in MIN_SUBSET.items():
        part = total({n: s for n, s in scores.items() if set_label(data[n]) == label})
        assert part.pitfalls, f"no {label} scripts"
        assert part.precision >= precision, f"{label}: precision {part.precision:.2f}\n" + table(scores)
        assert part.error_precision >= MIN_ERROR_PRECISION, f"{label}: error precision\n" + table(scores)
        assert part.recall >= recall, f"{label}: recall {part.recall:.2f}\n" + table(scores)


@needs_corpus
def test_default_output_scores(scores) -> None:  # type: ignore[no-untyped-def]
    """What orch doctor shows by default (certain and likely findings) is at least as precise as --all."""
    data = truth()
    measured = {n: s for n, s in scores.items() if set_label(data[n]) in DEFAULT_SETS}
    shown, every = total(default_output(measured)), total(measured)
    assert len(shown.findings) < len(every.findings), "no possible finding left out"
    assert shown.precision >= MIN_DEFAULT[0] and shown.precision >= every.precision, table(default_output(measured))
    assert shown.recall >= MIN_DEFAULT[1], table(default_output(measured))
    assert shown.error_precision >= MIN_ERROR_PRECISION


def test_matching_rule_is_strict() -> None:
    """A finding one line beyond the tolerance, in another file or with another code, is false."""
    from real_corpus import Pitfall
    p = Pitfall("s", "DDP006", "a.py", 10, (20,), "r", False)
    assert p.distance("DDP006", "a.py", 10 + LINE_TOLERANCE) == LINE_TOLERANCE
    assert p.distance("DDP006", "a.py", 21) == 1
    assert p.distance("DDP006", "a.py", 10 + LINE_TOLERANCE + 1) is None
    assert p.distance("DDP006", "b.py", 10) is None
    assert p.distance("DDP005", "a.py", 10) is None
    q = Pitfall("s", "DDP006", "a.py", 10, (), "r", False, elsewhere=(("h.py", 40),))
    assert q.distance("DDP006", "h.py", 40 + LINE_TOLERANCE) == LINE_TOLERANCE
    assert q.distance("DDP006", "h.py", 10) is None  # a.py's lines do not count in h.py
    assert q.distance("DDP006", "a.py", 40) is None


@needs_corpus
def test_launch_gate_refuses_no_correct_script() -> None:
    """What ``orch run``/``orch submit`` do before launching (the doctor's gate, refusing on errors) lets every
    corpus script through unless its truth has a pitfall that certainly breaks the run (``severity_ok``). The gate's
    reading of one script is ``check_files([script])``, the reading the scores share (``run_doctor``, read once per
    test process); its verdict is ``report``'s."""
    import io

    from orchestrator.doctor.gate import report
    refused = []
    for name, entry in truth().items():
        if any(p.get("severity_ok") for p in entry.get("pitfalls") or ()) or is_heldout(entry):
            continue  # a held-out set is read by the doctor only when it is measured
        script = REAL / name / entry["entry"]
        try:
            report(run_doctor(script), [script], io.StringIO(), refuse=True, ignore=(), would_refuse=None)
        except Exception as exc:  # ScriptRefused: an error-severity finding
            refused.append(f"{name}: {exc}")
    assert not refused, refused


@needs_corpus
def test_shown_is_what_orch_doctor_prints() -> None:
    """``--shown`` scores exactly what ``orch doctor SCRIPT`` prints without ``--all``: on a ``--local_rank``
    script whose DDP015 the style answers, the CLI's findings and the bench's are the same places and codes."""
    import json
    import subprocess
    import sys

    from real_corpus import ROOT, shown_by_orch_doctor
    from support import clean_environ
    entry = REAL / "convai_gpt" / "train.py"
    proc = subprocess.run([sys.executable, "-c", "import sys; from orchestrator.cli import entrypoint; "
                           "sys.exit(entrypoint())", "doctor", entry.name, "--json"], cwd=entry.parent,
                          capture_output=True, text=True, env=clean_environ(PYTHONPATH=str(ROOT)), timeout=120,
                          check=False)
    everything = json.loads(proc.stdout)  # --json gives the possible findings too, each with its confidence
    printed = {(Path(f["file"]).resolve(), f["line"], f["code"]) for f in everything if f["confidence"] != "possible"}
    shown = {(Path(f.file).resolve(), f.line, f.code) for f in shown_by_orch_doctor(entry)}
    assert printed == shown and everything, (printed, shown)
    assert "DDP015" in {f.code for f in run_doctor(entry)} and "DDP015" not in {code for _, _, code in shown}


def test_launch_verdict_rule() -> None:
    """A script that cannot work on 2 nodes is right only when refused; one that can, only when let through with
    its style and framework right (real_launch.py: right, or refused before the queue)."""
    from real_launch import Verdict
    ok = Verdict("s", "env", ("accelerate",), False, "", ("env", "slurm"), "accelerate", True)
    assert ok.style_right and ok.framework_right and ok.verdict_right and ok.right_or_refused
    assert not Verdict("s", "env", (), False, "", ("env",), "accelerate", True).right_or_refused  # framework missed
    assert not Verdict("s", "slurm", (), False, "", ("env",), "none", True).right_or_refused  # style wrong
    assert not Verdict("s", "env", ("accelerate",), True, "x", ("env",), "accelerate", True).right_or_refused
    refused = Verdict("s", "per-node", ("fabric",), True, "x", ("env",), "fabric", False)
    assert refused.right_or_refused and refused.verdict_right and not refused.style_right
    assert not Verdict("s", "env", (), False, "", ("env",), "none", False).right_or_refused  # let through


# The held-out sets, each judged and committed before the doctor ran on it and measured once (docs/doctor.md, "Set 9"
# to "Set 17"). Each keeps at least the (precision, recall) of the default output it was first measured with, rounded
# down; from set 11 on, with no error finding on correct code. Kept out of the floors above.
#
# Set 9 (22 scripts from 21 repositories, measured on commit 327ea9d, never tuned on): default output precision 0.35
# (8 of 23), recall 0.24 (6 of 25); --all the same.
# Set 10 (23 scripts from 23 repositories, measured on commit 03da53f): default output precision 0.41 (7 of 17), recall
# 0.24 (7 of 29); --all the same.
# Set 11 (25 scripts from 25 repositories, measured on commit 8b6dd38): default output precision 0.82 (31 of 38),
# recall 0.35 (14 of 40), no error finding.
# Set 12 (26 scripts from 26 repositories, measured on commit 838dfc9, after the tuning on sets 9-11 that added
# DDP023): default output precision 0.46 (22 of 48), recall 0.37 (17 of 46; over pitfalls with a catalog code 0.44, 17
# of 39), no error finding; what orch doctor prints (--shown, the finding the launch style answers dropped) 0.56 (22 of
# 39); --all 0.47 (23 of 49), 0.39 (18 of 46); launch right or refused 18 of 26.
# Set 13 (31 scripts from 31 repositories, judged and committed 22:49-22:55 UTC, measured on commit 053737b, after the
# tuning on sets 9-12): default output precision 0.61 (25 of 41), recall 0.33 (17 of 51; over pitfalls with a catalog
# code 0.36, 17 of 47), one error finding, false (DDP007 on Phasic Policy Gradient, fixed since: not as measured);
# --shown 0.71 (25 of 35); --all 0.58 (26 of 45), 0.35 (18 of 51); launch right or refused 22 of 31.
# Set 14 (27 scripts from 27 repositories, judged and committed 02:12-02:19 UTC, measured on commit 128a4c1, after the
# tuning on sets 9-13): default output precision 0.61 (20 of 33), recall 0.33 (15 of 46; over pitfalls with a catalog
# code 0.41, 15 of 37), no error finding; --shown 0.74 (20 of 27); --all 0.49 (20 of 41), 0.33 (15 of 46); launch right
# or refused 21 of 27.
# Set 15 (26 scripts from 26 repositories, judged and committed 05:39-05:47 UTC, measured on commit d04712b, after the
# tuning on sets 9-14): default output precision 0.41 (21 of 51), recall 0.31 (17 of 54; over pitfalls with a catalog
# code 0.40, 17 of 43), no error finding; --shown 0.50 (21 of 42); --all 0.42 (23 of 55), 0.33 (18 of 54); launch right
# or refused 19 of 26.
# Set 16 (26 scripts from 26 repositories, judged and committed 10:03-10:10 UTC, measured on commit 3154465, after the
# tuning on sets 9-15 and the confidence measured on their first contact): default output precision 0.39 (16 of 41),
# recall 0.21 (12 of 56; over pitfalls with a catalog code 0.27, 12 of 44), one error finding, false (DDP002 on a script
# with other pitfalls: not correct code); --shown 0.53 (16 of 30); --all 0.33 (20 of 60), 0.27 (15 of 56); launch right
# or refused 21 of 26.
# Set 17 (24 scripts from 24 repositories, judged and committed 13:49-14:00 UTC, measured on commit 5359fc2 at
# 14:02-14:07 UTC, after the tuning on set 16): default output precision 0.25 (6 of 24), recall 0.19 (6 of 31; over
# pitfalls with a catalog code 0.26, 6 of 23), no error finding; --shown 0.30 (6 of 20); --all 0.33 (10 of 30), 0.32
# (10 of 31); launch right or refused 23 of 24.
# Set 18 (15 scripts from 15 repositories, judged and committed 19:32-19:39 UTC by three judges, measured on commit
# 7d4b3fe at 19:39 UTC, after the tuning on set 17): default output precision 0.00 (0 of 1: a false DDP015), recall 0.00
# (0 of 21; over pitfalls with a catalog code 0 of 15), no error finding; --shown nothing printed; --all 0.40 (2 of 5),
# 0.10 (2 of 21); launch right or refused 10 of 15 (style 14, framework 11, 2-node verdict 14).
# Set 19 (21 scripts from 21 repositories, judged by three judges, truth committed 07:08 UTC on 2026-12-01, measured on
# commit ffeb860 at 07:09-07:11 UTC, after the tuning on set 18): default output precision 0.68 (13 of 19), recall 0.23
# (13 of 57; over pitfalls with a catalog code 0.32, 13 of 41), no error finding; --shown 0.76 (13 of 17); --all 0.64
# (16 of 25), 0.28 (16 of 57); launch right or refused 17 of 21 (style 19, framework 20, 2-node verdict 18).
# Set 20 (24 scripts from 24 repositories, judged by three judges, truth committed 14:11 UTC on 2026-12-01 and
# reviewed at 14:16 (five DDP015 on --local_rank scripts removed, as in sets 18 and 19), measured on commit d03e7db at
# 14:16-14:18 UTC, after the tuning on set 19): default output precision 0.62 (23 of 37), recall 0.29 (18 of 63; over
# pitfalls with a catalog code 0.33, 18 of 54), no error finding; --shown 0.82 (23 of 28); --all 0.51 (26 of 51), 0.33
# (21 of 63); launch right or refused 19 of 24 (style 22, framework 24, 2-node verdict 19).
# Set 21 (24 scripts from 24 repositories, judged by three judges, truth committed 00:41-00:46 UTC on 2026-12-02 and
# reviewed at 00:54 (four DDP015 on --local_rank scripts and one DDP014 on a per-node script removed, as in sets 18-20),
# measured on commit 33914e2 at 00:54-00:55 UTC): default output precision 0.58 (18 of 31), recall 0.25 (14 of 55; over
# pitfalls with a catalog code 0.33, 14 of 43), no error finding; --shown 0.72 (18 of 25); --all 0.60 (24 of 40), 0.33
# (18 of 55); launch right or refused 14 of 24 (style 20, framework 23, 2-node verdict 17).
# Set 22 (22 scripts from 22 repositories, judged by three judges, truth committed 04:09-04:13 UTC on 2026-12-02 and
# reviewed at 04:14 (three DDP015 on --local_rank scripts removed, as in sets 18-21), measured on commit 6c05629 at
# 04:15-04:17 UTC): default output precision 0.54 (15 of 28), recall 0.17 (11 of 66; over pitfalls with a catalog code
# 0.21, 11 of 53), no error finding; --shown 0.65 (15 of 23); --all 0.48 (20 of 42), 0.21 (14 of 66); launch right or
# refused 15 of 22 (style 21, framework 20, 2-node verdict 17).
# Set 24 (21 scripts from 21 repositories, judged by four judges, truth committed 14:44-14:50 UTC on 2026-12-02, no
# change by the lead, measured on commit e33e30d at 14:50-14:56 UTC): default output precision 0.53 (19 of 36), recall
# 0.37 (16 of 43; over pitfalls with a catalog code 0.47, 16 of 34), no error finding; --shown 0.70 (19 of 27); --all
# 0.47 (24 of 51), 0.42 (18 of 43); launch right or refused 18 of 21 (style 21, framework 21, 2-node verdict 18).
# Set 25 (19 scripts from 19 repositories, four judges, truth committed 0091ccb, 7743ebc, 60e9c84, ba13f75 on
# 2026-12-03 before the doctor ran on it, measured on ba13f75): default output precision 0.70 (19 of 27), recall 0.40
# (17 of 43; coded 0.49, 17 of 35), no error finding; --shown 0.86 (19 of 22); --all 0.61, 0.47; launch right or
# refused 12 of 19 (style 15, framework 17, 2-node verdict 14). Kept apart in tests/doctor/heldout25/ until merged here.
# Tuning on set 25 (later on 2026-12-03): default output 0.70 (23 of 33), recall 0.49 (21 of 43); printed 0.88 (23 of
# 26). The precision floor is 0.69, under the measured 0.70: the two findings more that are false there are the ones the
# launch style answers (GeoTransformer's DDP015, IDDM's DDP014), which appear because those styles are read now (the
# printed output, which drops them, went from 0.86 to 0.88).
# Set 26 (17 scripts from 17 repositories, three judges, truth committed 3df2c46, d35685a, ec08c93 on 2026-12-04 before
# the doctor ran on it, measured on f39fe14): default output precision 0.50 (8 of 16), recall 0.20 (8 of 41; coded 0.23,
# 8 of 35), no error finding; --shown 0.73 (8 of 11); --all 0.44, 0.29; launch right or refused 13 of 17 (style 17,
# framework 17). Kept apart in tests/doctor/heldout26/ until merged here. Tuned on afterwards (a49505f, 20f3ccf,
# a8831e4): default 0.68 (13 of 19), printed 0.93 (13 of 14), recall 0.29, launch 14 of 17.
# Set 27 (23 scripts from 23 repositories, four judges, truth committed e17959c, 5a951e6, ff1fa7b, 29854ed on 2026-12-04
# before the doctor ran on it, measured on d41081f): default output precision 0.63 (22 of 35), recall 0.43 (20 of 47),
# no error finding; --shown 0.79 (22 of 28); --all 0.52, 0.49; launch right or refused 14 of 23 (style 19, framework
# 22). Kept apart in tests/doctor/heldout27/ until merged here.
# Set 28 (23 scripts from 23 repositories, four judges, truth committed 05de527, ed4ab13, 8ded6b2, 4419b5b, 23eaf6b on
# 2026-12-04 before the doctor ran on it, measured on 23eaf6b): default output precision 0.56 (22 of 39), recall 0.37
# (15 of 41), three false DDP007 errors; --shown 0.64 (21 of 33); --all 0.44, 0.39; launch right or refused 20 of 23
# (style 21, framework 23). Kept apart in tests/doctor/heldout28/ until merged here. Tuned on afterwards: no error
# finding (the DDP007 fix), so the row asks for none.
# Set 29 (24 scripts from 24 repositories, four judges, truth committed on 2026-12-04 before the doctor ran on it, in
# commits lost before they landed; measured on the doctor of 6fa2a1b): default output precision 0.46 (22 of
# 48), recall 0.34 (19 of 56), one error finding on a true DDP003 its judge did not call an error; --shown 0.57 (24 of
# 42); --all 0.42, 0.39; launch right or refused 21 of 24 (style 24, framework 24). Kept apart in
# tests/doctor/heldout29/ until merged.
# Set 30 (23 scripts from 22 repositories, four judges, truth committed 94bd8fe, 6aebb20, 3664613, 7c9ee20 on 2026-12-04
# before the doctor ran on it, measured on 6aebb20): default output precision 0.60 (21 of 35), recall 0.31 (19 of 61),
# no error finding; --shown 0.81 (21 of 26); --all 0.56, 0.38; launch right or refused 17 of 23 (style 21,
# framework 23). Kept apart in tests/doctor/heldout30/ until merged.
# Set 31 (24 scripts from 24 repositories, four judges, truth committed 1bd02d4, 2864666, 8943e1e + f036ed5, 4459dfb on
# 2026-12-04 before the doctor ran on it, measured on 3d5bfc5): default output precision 0.62 (26 of 42), recall 0.46
# (24 of 52), three false error findings (DDP002 on a subgroup's barrier); --shown 0.68 (25 of 37); --all 0.51, 0.52;
# launch right or refused 20 of 24 (style 23, framework 24). Kept apart in tests/doctor/heldout31/ until merged.
# Set 32 (22 scripts from 20 repositories, eight judges, truth committed b318a60, 1d433ec, 988ea33, 82d0095, 446e77e,
# c9095a6, b2cebbd, 6b83d1c on 2026-12-04 before the doctor ran on it, measured on 6b83d1c): default output precision
# 0.54 (15 of 28), recall 0.25 (13 of 52), three false error findings (DDP020); --shown 0.60 (15 of 25); --all 0.41,
# 0.33; launch right or refused 16 of 22 (style 18, framework 22). Kept apart in tests/doctor/heldout32/ until merged.
# Set 33 (30 scripts from 30 repositories, five judges, truth committed adb5334, ed5251a, 28c043a, a4d4828, ac9eab4 on
# 2026-12-04/05 before the doctor ran on it, measured on ed5251a): default output precision 0.62 (30 of 48), recall
# 0.36 (25 of 69), one false error finding (DDP020); --shown 0.75 (30 of 40); --all 0.51, 0.45; launch right or refused
# 22 of 30 (style 28, framework 30). Kept apart in tests/doctor/heldout33/ until merged.
# Set 34 (30 scripts from 29 repositories, five judges, truth committed 409b41e, 34dbe52, da8b50e, df701a0, 82e1c91 on
# 2026-12-05 before the doctor ran on it, measured on 409b41e): default output precision 0.62 (36 of 58), recall 0.28
# (28 of 99), two false error findings (DDP002); --shown 0.77 (36 of 47); --all 0.59, 0.32; launch right or refused
# 24 of 30 (style 26, framework 30). Kept apart in tests/doctor/heldout34/ until merged.
# Set 35 (30 scripts from 30 repositories, five judges, truth committed 1a9f14b, 79f32a6 and 7d4c25c, 1035c54,
# d46c7d4, 0dfe48b on 2026-12-05 before the doctor ran on it, measured with the doctor of ec0a94c on 7d4c25c): default
# output precision 0.59 (32 of 54), recall 0.36 (25 of 70), no error finding; --shown 0.73 (32 of 44); --all 0.52,
# 0.44; launch right or refused 23 of 30 (style 29, framework 27). Kept apart in tests/doctor/heldout35/ until merged.
# Set 36 (21 scripts from 21 repositories, four judges, truth committed 5d3efcd, 1ad194a, 3b22f38 and 447aa89 on
# 2026-12-05 before the doctor ran on it; its first ten measured at 12:59 with the doctor of bc17863, all 21 at 14:36
# with the same doctor on 447aa89): default output precision 0.65 (24 of 37), recall 0.38 (19 of 50), no error
# finding; --shown 0.80 (24 of 30, one unjustified error); --all 0.54, 0.40; launch right or refused 18 of 21 (style
# 21, framework 20).
# Set 37 (30 scripts from 30 repositories, five judges, truth committed ec1fd42 and 4a5ed2e on 2026-12-05 before the
# doctor ran on it, measured on 3e21bc7): default output precision 0.63 (37 of 59), recall 0.32 (29 of 92), one error
# finding its judge does not count certain (DDP020 on a true pitfall); --shown 0.69 (34 of 49); --all 0.65, 0.42; launch
# right or refused 27 of 30 (style 30, framework 30).
# Set 38 (30 scripts from 30 repositories, five judges, truth committed 5244e23 on 2026-12-05 before the doctor ran on
# it, measured on 5ed2095): default output precision 0.69 (33 of 48), recall 0.33 (27 of 83), one error finding, on a
# true pitfall its judge codes DDP002 (ECAPA's rank-0-only destroy_process_group in the epoch loop, called DDP007);
# --shown 0.71 (29 of 41); --all 0.56, 0.41; launch right or refused 27 of 30 (style 29, framework 28).
# Set 39 (30 scripts from 30 repositories, five judges, truth committed 25efe34 on 2026-12-06 before the doctor ran on
# it, measured with the doctor of ea97744 on 25efe34): default output precision 0.85 (79 of 93), recall 0.44 (55 of
# 126), no error finding; --shown 0.93 (71 of 76); --all 0.79, 0.52; launch right or refused 24 of 30 (style 29,
# framework 30).
# Set 40 (26 scripts from 26 repositories, five judges, truth committed 1684169 on 2026-12-06 before the doctor ran on
# it, measured with the doctor of db15057 on 1684169): default output precision 0.61 (39 of 64), recall 0.32 (25 of
# 79), no error finding; --shown 0.64 (37 of 58); --all 0.59, 0.34; launch right or refused 22 of 26 (style 23,
# framework 25).
# Set 41 (37 scripts from 37 repositories, ten judges, truth committed 887fbde on 2026-12-06 before the doctor ran on
# it, measured with the doctor of 887fbde): default output precision 0.63 (48 of 76), recall 0.31 (35 of 112), no error
# finding; --shown 0.77 (48 of 62); --all 0.49, 0.36; launch right or refused 36 of 37 (style 35, framework 37).
# Set 42 (49 scripts from 49 repositories, nine judges, truth committed 6c0b7dd on 2026-12-06 before the doctor ran on
# it, measured with the doctor of 69ca98f): default output precision 0.73 (47 of 64), recall 0.26 (37 of 141), no error
# finding; --shown 0.87 (47 of 54); --all 0.68, 0.36; launch right or refused 38 of 49 (style 43, framework 49).
# Set 43 (41 scripts from 41 repositories, ten judges, truth committed 194e316 on 2026-12-06 before the doctor ran on
# it, measured with the doctor of 029b629): default output precision 0.75 (79 of 105), recall 0.40 (53 of 132), no
# error finding; --shown 0.84 (75 of 89); --all 0.66, 0.47; launch right or refused 31 of 41 (style 37, framework 41).
# Set 44 (51 scripts from 51 repositories, ten judges given the new DDP024, truth committed 7ee3d44 on 2026-12-06
# before the doctor ran on it, measured with the doctor of 7ee3d44): default output precision 0.60 (57 of 95), recall
# 0.24 (39 of 165), no error finding; --shown 0.69 (55 of 80); --all 0.49, 0.28; launch right or refused 35 of 51 (style
# 45, framework 50).
# Set 45 (48 scripts from 48 repositories, ten judges, truth committed 052e35b on 2026-12-06 before the doctor ran on
# it, measured with the doctor of 36abd53): default output precision 0.63 (41 of 65), recall 0.25 (31 of 123), no error
# finding; --shown 0.76 (39 of 51); --all 0.34, 0.32; launch right or refused 40 of 48 (style 46, framework 48).
# Set 46 (52 scripts from 52 repositories, ten judges, truth committed 165b554 on 2026-12-06 before the doctor ran on
# it, measured with the doctor of 5f45fdb): default output precision 0.64 (57 of 89), recall 0.32 (42 of 133), one error
# finding, on a true pitfall its judge marks certain; --shown 0.71 (56 of 79); --all 0.54, 0.37; launch right or refused
# 44 of 52 (style 50, framework 51).
# Set 47 (55 scripts from 55 repositories, eleven judges, truth committed a8e5a99 on 2026-12-07 before the doctor ran on
# it, measured with the doctor of 37ff1df): default output precision 0.68 (74 of 109), recall 0.31 (58 of 186), no
# error finding; --shown 0.75 (69 of 92); --all 0.67, 0.35; launch right or refused 44 of 55 (style 50, framework 54).
# Set 48 (49 scripts from 49 repositories, ten judges, truth committed 4783e71 on 2026-12-07 before the doctor ran on
# it, measured with the doctor of bf4b2e0): default output precision 0.71 (59 of 83), recall 0.31 (46 of 150), one false
# error finding (UDPM's destroy before a return, fixed after: hence True below); --shown 0.77 (54 of 70); --all 0.65,
# 0.41; launch right or refused 41 of 49 (style 45, framework 47).
# Set 49 (54 scripts from 54 repositories, ten judges, truth committed b95c844 on 2026-12-07 before the doctor ran on
# it, measured with the doctor of b95c844): default output precision 0.75 (85 of 114), recall 0.35 (61 of 175); six
# error findings, five on a true hang whose judge does not mark it certain (finetune-hf-vits' rank-0 validation, under
# a flag the shipped configs set) and one false (a NameError in dead code): hence False below; --shown 0.88 (84 of 96);
# --all 0.61, 0.45; launch right or refused 45 of 54 (style 50, framework 54).
# Set 50 (53 scripts from 53 repositories, ten judges, truth committed a7173d7 on 2026-12-07 before the doctor ran on
# it, measured with the doctor of a7173d7): default output precision 0.63 (47 of 75), recall 0.28 (37 of 132), no
# error finding; --shown 0.72 (46 of 64); --all 0.61, 0.39; launch right or refused 47 of 53 (style 52, framework 53).
# Set 51 (52 scripts judged from 52 repositories, ten judges, truth committed 9f2d76b on 2026-12-07 before the doctor
# ran on it, measured with the doctor of e4be677): default output precision 0.72 (75 of 104), recall 0.36 (58 of 159),
# one error finding (true: an undefined name); --shown 0.74 (68 of 92); --all 0.67, 0.43; launch right or refused 47 of
# 52 (style 50, framework 52). One script, ardm_dialog_pretrain (RoderickGu/pretrain-300M), found after the measurement
# to be set 39's project under another name, is left out: over the 51 left, 0.72 (73 of 102), recall 0.36 (56 of 155),
# --shown 0.74 (67 of 91), launch 46 of 51 (the row below).
# Set 52 (47 scripts judged from 47 repositories, ten judges, truth committed 8df9699 on 2026-12-07 before the doctor
# ran on it, measured with the doctor of 71bccf7): default output precision 0.72 (55 of 76), recall 0.32 (43 of 135), no
# error finding; --shown 0.81 (54 of 67, one error finding: a true DDP008 its judge did not call certain); --all 0.66,
# 0.40; launch right or refused 38 of 47 (style 44, framework 46).
# Set 53 (44 scripts judged from 44 repositories, ten judges, truth committed 9e28e79 on 2026-12-07 before the doctor
# ran on it, measured with the doctor of cbb8649): default output precision 0.81 (50 of 62), recall 0.26 (36 of 139), no
# error finding; --shown 0.88 (49 of 56); --all 0.67, 0.30; launch right or refused 36 of 44 (style 39, framework 44).
# Set 54 (42 scripts judged from 42 repositories, ten judges, truth committed 920376e on 2026-12-07 before the doctor
# ran on it, measured with the doctor of 920376e): default output precision 0.67 (52 of 78), recall 0.36 (41 of 115),
# two error findings, both true; --shown 0.73 (49 of 67); --all 0.56, 0.40; launch right or refused 34 of 42 (style 41,
# framework 42). One script, gabgpt_multigpu, was refused as not valid Python (a Python 3.12 f-string, PEP 701, read by
# the 3.11 parser): no finding, both its pitfalls missed, its launch wrong.
HELD_OUT = [  # set, scripts, precision floor, recall floor, no error finding
    (9, 22, 0.34, 0.24, False),
    (10, 23, 0.41, 0.24, False),
    (11, 25, 0.81, 0.35, True),
    (12, 26, 0.45, 0.36, True),
    (13, 31, 0.60, 0.33, True),
    (14, 27, 0.60, 0.32, True),
    (15, 26, 0.41, 0.31, True),
    (16, 26, 0.39, 0.21, False),
    (17, 24, 0.25, 0.19, True),
    (18, 15, 0.0, 0.0, True),
    (19, 21, 0.68, 0.22, True),
    (20, 24, 0.62, 0.28, True),
    (21, 24, 0.58, 0.25, True),
    (22, 22, 0.53, 0.16, True),
    (23, 22, 0.57, 0.28, True),
    (24, 21, 0.52, 0.37, True),
    (25, 19, 0.69, 0.39, True),
    (26, 17, 0.50, 0.19, True),
    (27, 23, 0.62, 0.42, True),
    (28, 23, 0.56, 0.36, True),
    (29, 24, 0.45, 0.33, False),
    (30, 23, 0.60, 0.31, True),
    (31, 24, 0.62, 0.46, False),
    (32, 22, 0.54, 0.25, False),
    (33, 30, 0.62, 0.36, False),
    (34, 30, 0.62, 0.28, False),
    (35, 30, 0.59, 0.36, True),
    (36, 21, 0.64, 0.38, True),
    (37, 30, 0.62, 0.31, False),
    (38, 30, 0.68, 0.32, False),
    (39, 30, 0.84, 0.43, True),
    (40, 26, 0.60, 0.31, True),
    (41, 37, 0.62, 0.30, True),
    (42, 49, 0.72, 0.25, True),
    (43, 41, 0.74, 0.39, True),
    (44, 51, 0.59, 0.23, True),
    (45, 48, 0.62, 0.24, True),
    (46, 52, 0.63, 0.31, True),
    (47, 55, 0.67, 0.30, True),
    (48, 49, 0.70, 0.30, True),
    (49, 54, 0.74, 0.34, False),
    (50, 53, 0.62, 0.27, True),
    (51, 51, 0.71, 0.35, True),
    (52, 47, 0.71, 0.31, True),
    (53, 44, 0.80, 0.25, True),
    (54, 42, 0.66, 0.35, True),
]


@needs_corpus
@pytest.mark.parametrize(("number", "scripts", "precision", "recall", "no_error"), HELD_OUT,
                         ids=[f"set {row[0]}" for row in HELD_OUT])
def test_held_out_set_keeps_its_measured_figures(number: int, scripts: int, precision: float, recall: float,
                                                  no_error: bool) -> None:
    scores = score_all([name for name, entry in sorted(truth().items()) if set_label(entry) == f"set {number}"])
    shown = total(default_output(scores))
    assert len(scores) == scripts
    assert shown.precision >= precision, table(default_output(scores))
    assert shown.recall >= recall, table(default_output(scores))
    if no_error:
        assert shown.error_precision == 1.0, table(default_output(scores))  # no error finding on correct code
