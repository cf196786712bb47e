"""The docs speak to users and maintainers, not to the project's history.

README.md and docs/*.md say what orch does and why. They do not name this project's own issues
("issue 12", "issue #12", "(issue 21, part 1)", a bare "#12") or its numbered work periods
("round 3", "the second round", "session 6", "the fifth pass"): a reader knows none of them. What
changed when belongs in CHANGELOG.md, which is not checked here. Citations of other projects'
issues (``pytorch/pytorch#152563``, ``submitit#1700``) stay allowed: they name the project.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG = ROOT / "CHANGELOG.md"

_ORDINAL = r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)"
HISTORY = [
    # this project's issues: "issue 12", "issues 10, 12", "issue #12", "Issue 23"
    re.compile(r"\bissues?[-\s]*#?\d+", re.IGNORECASE),  # also an anchor: #remote-orch-over-ssh-issue-21
    # a bare "#12" (an owner/repo#12 or project#12 citation has a name right before the '#')
    re.compile(r"(?<![\w/.-])#\d+\b"),
    # numbered rounds: "round 3", "round2", "rounds 1-2", "the second round", "this round",
    # "hardening round" (a "round trip" or "round-robin" is no work period)
    re.compile(r"(?<![A-Za-z])rounds?[-_ ]?\d+", re.IGNORECASE),  # also test_..._round2.py, not "around 3"
    re.compile(rf"\b(?:{_ORDINAL}|last|this|next|previous|hardening) round\b(?![- ](?:trip|robin))",
               re.IGNORECASE),
    # numbered sessions: "session 3", "sessions 1-2"
    re.compile(r"\bsessions? \d+", re.IGNORECASE),
    # numbered passes of work: "the fifth pass", "the sixth and seventh passes"
    re.compile(r"\b(?:third|fourth|fifth|sixth|seventh|eighth|ninth|tenth) pass(?:es)?\b", re.IGNORECASE),
]


def pages() -> list[Path]:
    """The pages a user reads: README.md and docs/*.md (CHANGELOG.md is where history goes)."""
    found = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [p for p in found if p.resolve() != CHANGELOG.resolve()]


def mentions(text: str) -> list[str]:
    """The history mentions in one line of text, in order."""
    hits = sorted((m.start(), m.group(0)) for pattern in HISTORY for m in pattern.finditer(text))
    return [hit for _, hit in hits]


def offending(paths: list[Path], root: Path = ROOT) -> list[str]:
    """``file:line: text  [mentions]`` for every line that names the project's history."""
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            hits = mentions(line)
            if hits:
                where = path.relative_to(root) if path.is_relative_to(root) else path
                found.append(f"{where}:{number}: {line.strip()}  [{', '.join(hits)}]")
    return found


def test_the_pages_are_found() -> None:
    names = {p.name for p in pages()}
    assert "README.md" in names and "benchmarks.md" in names and "doctor.md" in names
    assert CHANGELOG not in pages()


def test_no_page_names_the_project_history() -> None:
    found = offending(pages())
    assert not found, (
        "README.md and docs/*.md name the project's own issues or work periods; say what the code does "
        "and why instead, and put the history in CHANGELOG.md:\n" + "\n".join(found))


@pytest.mark.parametrize("text", [
    "Before issue 19, the doctor read one file.",
    "bounds are issue 10's",
    "see issue #12",
    "(issue 21, part 1)",
    "[benchmarks](benchmarks.md#remote-orch-over-ssh-issue-21)",
    "after issues 10, 12's status work",
    "Inputs bounded (Issue 23).",
    "fixed in #12",
    "Since session 6 the bench has a third path",
    "Older figures (sessions 1-2)",
    "round 3 of the hardening",
    "tests/test_hardening_round2.py",
    "the second round of checks",
    "as in the last round",
    "the hardening round",
    "### Fifth pass: tuning",
    "tuned on by the sixth and seventh passes",
])
def test_a_history_mention_is_found(text: str) -> None:
    assert mentions(text), text


@pytest.mark.parametrize("text", [
    "pytorch/pytorch#152563 made the recorder vendor neutral",
    "see submitit#1700 and anemoi-core#1327",
    "one SSH round trip on the open connection",
    "the second round-trip is skipped",
    "after two warm-up rounds, round after round",
    "the sampler lays the list out round-robin",
    "a command run by ssh gets no SIGHUP when the session goes away",
    "`round(x, 3)` keeps three digits",
    "the first pass over the data reads every file",
    "around 3 s per run",
    "held-out set 6, measured 2026-11-27, commit c601c65",
    "#SBATCH --nodes=2",
    "numbered by the global rank",
])
def test_a_citation_or_plain_word_is_allowed(text: str) -> None:
    assert not mentions(text), mentions(text)


def test_the_failure_names_file_line_and_text(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A page\n\nFine text, pytorch#130610 cited.\nBounded inputs (issue 23) since round 2.\n",
                    encoding="utf-8")
    assert offending([page], root=tmp_path) == [
        "page.md:4: Bounded inputs (issue 23) since round 2.  [issue 23, round 2]"]


def test_the_changelog_may_name_history() -> None:
    """CHANGELOG.md is where dated history goes, so it is never among the checked pages."""
    assert CHANGELOG.is_file()
    assert CHANGELOG not in pages()
