"""The docs cannot drift: every command marked runnable in README.md and docs/*.md runs here.

A fenced block is runnable when its info string is ``bash runnable`` (optionally ``exit=N``: the
exit code every line of the block must give; 0 otherwise). Each non-blank line of such a block is
one ``orch ...`` command (a trailing ``# comment`` and ``\\`` continuations are allowed), split with
``shlex`` and run without a shell, with the installed CLI, where a newcomer pastes it: in the root of
a fresh clone (a git repository of the checkout's files, tracked and untracked-but-not-ignored, as
they are on disk; no .venv, no data), one clone per block, with the clone's ``orchestrator`` first
on ``PYTHONPATH`` (as ``pip install -e .`` in the clone gives) and a clean environment (HOME and
the XDG folders in the temporary folder). Nothing runs in the real checkout.
Blocks that need Slurm or an existing job (plain ``bash``) are not run. Blocks that show output
(``console``) of a dry run or of ``orch hosts`` are run and compared with what orch prints today.
See docs/testing.md, "The docs test".
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import shared_blocks
import sharedruns
from support import ORCH, ROOT, clean_environ

DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
RUNNABLE = "runnable"
COMMAND_TIMEOUT = 120  # seconds; a runnable command should take a few (a dry run well under one)
# The README's runnable commands (update when you add or remove one; the meta-test below checks it).
README_COMMANDS = 9

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    info: str
    lines: tuple[tuple[int, str], ...]  # (1-based line, text)

    @property
    def words(self) -> list[str]:
        return self.info.split()

    @property
    def runnable(self) -> bool:
        return RUNNABLE in self.words[1:]

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


@dataclass(frozen=True)
class Command:
    block: Block
    line: int
    argv: tuple[str, ...]  # without the leading "orch"
    expect: int

    @property
    def text(self) -> str:
        return shlex.join(["orch", *self.argv])


def fenced_blocks(text: str, page: Path) -> list[Block]:
    """Every fenced code block of a Markdown text (CommonMark fences: ``` or ~~~, 3 or more)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        fence, info, start = match["fence"], match["info"].strip(), i
        body: list[tuple[int, str]] = []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if close is not None and close["fence"][0] == fence[0] and len(close["fence"]) >= len(fence) \
                    and not close["info"].strip():
                break
            body.append((i + 1, lines[i]))
            i += 1
        blocks.append(Block(page, start + 1, info, tuple(body)))
        i += 1
    return blocks


def block_commands(block: Block) -> list[Command]:
    """The commands of a runnable block; ValueError for anything that is not one ``orch`` command."""
    words = block.words
    if not words or words[0] != "bash" or words[1:2] != [RUNNABLE]:
        raise ValueError(f"{block.where}: a runnable block's info string is 'bash runnable [exit=N]', "
                         f"not {block.info!r}")
    expect = 0
    for extra in words[2:]:
        if not re.fullmatch(r"exit=\d{1,3}", extra):
            raise ValueError(f"{block.where}: unknown word {extra!r} in the info string (only exit=N)")
        expect = int(extra.partition("=")[2])
    commands: list[Command] = []
    pending, first = "", 0
    for number, raw in block.lines:
        if not pending and not raw.strip():
            continue
        if not pending:
            first = number
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        line, pending = pending + raw, ""
        try:
            argv = shlex.split(line, comments=True)
        except ValueError as exc:
            raise ValueError(f"{block.page.relative_to(ROOT)}:{first}: cannot split {line!r}: {exc}") from exc
        if not argv:
            continue  # a comment line
        if argv[0] != "orch" or any(tok in {"|", "||", "&&", ";", "&", ">", ">>", "<"} for tok in argv) \
                or re.search(r"[|;&<>`]|\$\(", line.split("#", 1)[0].replace("'", "").replace('"', "")):
            raise ValueError(f"{block.page.relative_to(ROOT)}:{first}: a runnable block holds only orch "
                             f"commands (no shell, no prompt, no other program): {line.strip()!r}")
        commands.append(Command(block, first, tuple(argv[1:]), expect))
    if pending:
        raise ValueError(f"{block.where}: the last line ends with a continuation")
    if not commands:
        raise ValueError(f"{block.where}: a runnable block without a command")
    return commands


def page_commands(page: Path) -> list[Command]:
    found: list[Command] = []
    for block in fenced_blocks(page.read_text(encoding="utf-8"), page):
        if block.runnable:
            found.extend(block_commands(block))
    return found


def runnable_blocks() -> list[Block]:
    return [b for page in PAGES for b in fenced_blocks(page.read_text(encoding="utf-8"), page) if b.runnable]


# ---------------------------------------------------------------- the extractor


def test_the_marker_cannot_hold_other_commands() -> None:
    bad = [
        "```bash runnable\nrm -rf runs\n```\n",
        "```bash runnable\n$ orch hosts 'a[1-2]'\n```\n",
        "```bash runnable\norch hosts 'a[1-2]' | head -1\n```\n",
        "```bash runnable\norch hosts 'a[1-2]' && rm -rf runs\n```\n",
        "```bash runnable\norch hosts a1; rm -rf runs\n```\n",
        "```bash runnable\norch hosts $(whoami)\n```\n",
        "```bash runnable\norch hosts a1 > out.txt\n```\n",
        "```bash runnable\nORCH_CLUSTER=x orch hosts a1\n```\n",
        "```bash runnable\n# only a comment\n```\n",
        "```bash runnable exit=two\norch hosts a1\n```\n",
        "```console runnable\norch hosts a1\n```\n",
    ]
    for text in bad:
        (block,) = fenced_blocks(text, README)
        assert block.runnable, text
        with pytest.raises(ValueError):
            block_commands(block)


def test_the_extractor_reads_comments_continuations_and_exit_codes() -> None:
    text = ("text\n```bash runnable exit=2\n# a comment line\norch submit smoke \\\n  --nodes 2 --dry-run  # two\n\n"
            "orch hosts 'gpu[1-2]'\n```\n```console\n$ orch hosts x\nx\n```\n````markdown\n```bash runnable\n"
            "orch inside a quoted block\n```\n````\n")
    blocks = fenced_blocks(text, README)
    assert [b.info for b in blocks] == ["bash runnable exit=2", "console", "markdown"]
    commands = block_commands(blocks[0])
    assert [(c.line, c.argv, c.expect) for c in commands] == [
        (4, ("submit", "smoke", "--nodes", "2", "--dry-run"), 2), (7, ("hosts", "gpu[1-2]"), 2)]


def test_every_runnable_block_holds_only_orch_commands() -> None:
    problems = []
    for block in runnable_blocks():
        try:
            block_commands(block)
        except ValueError as exc:
            problems.append(str(exc))
    assert not problems, "\n".join(problems)


def test_the_readme_shows_a_known_number_of_runnable_commands() -> None:
    commands = page_commands(README)
    assert len(commands) == README_COMMANDS > 0, [c.text for c in commands]
    assert {c.argv[0] for c in commands} >= {"submit", "run", "doctor", "list"}


def test_every_page_has_commands_or_is_known_not_to() -> None:
    """A page that lost all its runnable blocks is probably a mistake (these pages have none on purpose)."""
    without = {"README.md", "layout.md", "benchmarks.md", "startup-phases.md", "testing.md",
               "remote.md"}  # remote.md: its commands need an SSH server (tests/remote/test_remote.py)
    for page in DOCS.glob("*.md"):
        assert bool(page_commands(page)) != (page.name in without), page.name


# ---------------------------------------------------------------- running them


# What a fresh clone holds: git's files (tracked, and untracked but not ignored: work in progress),
# as they are on disk; without git, the tree less what a clone never has.
NOT_IN_A_CLONE = (".git", ".venv", "venv", "__pycache__", "*.egg-info", ".mypy_cache", ".ruff_cache",
                  ".pytest_cache", ".hypothesis", "runs", "build", "dist")
_GIT = ("git", "-c", "user.name=orch docs test", "-c", "user.email=docs@example.invalid",
        "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", "-c", "core.hooksPath=/dev/null")


def _git(args: list[str], cwd: Path, home: Path) -> str:
    env = clean_environ(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run([*_GIT, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="session")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository of the checkout's files, made once per session (both workers'): each block clones it
    (``_workdir``)."""
    return sharedruns.once(tmp_path_factory, "docs-pristine", _make_pristine)


def _make_pristine(base: Path) -> Path:
    repo, home = base / "orch", base / "home"
    home.mkdir()
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                capture_output=True, check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: copy the tree
        shutil.copytree(ROOT, repo, symlinks=True, ignore=shutil.ignore_patterns(*NOT_IN_A_CLONE))
    else:
        for name in filter(None, listed.split("\0")):
            source = ROOT / name
            if source.is_file() and not source.is_symlink():  # deleted in the work tree: gone from the clone
                (repo / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, repo / name)
    _git(["init", "-q"], repo, home)
    _git(["add", "-A"], repo, home)
    _git(["commit", "-q", "-m", "the checkout, as a fresh clone has it"], repo, home)
    return repo


def _workdir(tmp_path: Path, pristine: Path) -> tuple[Path, dict[str, str]]:
    """A fresh clone of ``pristine`` (the folder to run in) and the environment to run with."""
    home = tmp_path / "home"
    home.mkdir()
    _git(["clone", "-q", str(pristine), "orch"], tmp_path, home)
    work = tmp_path / "orch"
    env = clean_environ(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"),
                        XDG_DATA_HOME=str(home / ".local" / "share"), XDG_STATE_HOME=str(home / ".local" / "state"),
                        TMPDIR=str(tmp_path), PYTHONPATH=str(work))
    data_dir = clean_environ_data_dir()
    if data_dir:
        env["ORCH_DATA_DIR"] = data_dir
    return work, env


def test_the_commands_run_in_a_fresh_clone_with_its_own_code(tmp_path: Path, pristine: Path) -> None:
    work, env = _workdir(tmp_path, pristine)
    assert not work.is_relative_to(ROOT) and not (work / ".venv").exists()
    assert (work / "tests" / "scripts" / "ddp_train.py").is_file() and (work / ".git").is_dir()
    assert not _git(["status", "--porcelain"], work, tmp_path / "home"), "the clone differs from its commit"
    proc = subprocess.run([sys.executable, "-c", "import orchestrator, jobs; print(orchestrator.__file__); "
                           "print(jobs.__file__)"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert all(Path(f).is_relative_to(work) for f in proc.stdout.split()), proc.stdout


def clean_environ_data_dir() -> str | None:
    """ORCH_DATA_DIR of the test run (clean_environ drops ORCH_*), else the shared copy beside the repo."""
    given = os.environ.get("ORCH_DATA_DIR")
    if given:
        return given
    shared = ROOT.parent / "shared" / "data"
    return str(shared) if (shared / "MNIST" / "raw").is_dir() else None


BLOCKS = runnable_blocks()


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_runnable_block(block: Block, tmp_path: Path, pristine: Path,
                        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each command in the block's clone, in order; an ``orch run`` that finds the clone and home as fresh as the
    clone left them is the one run of that command in a fresh clone this session (tests/docs/shared_blocks.py)."""
    work, env = _workdir(tmp_path, pristine)
    home = tmp_path / "home"
    fresh = shared_blocks.state(work, home)
    for command in block_commands(block):
        started = time.monotonic()
        if shared_blocks.shareable(command.argv) and shared_blocks.state(work, home) == fresh:
            made = shared_blocks.shared_run(tmp_path_factory, lambda folder: _workdir(folder, pristine),
                                            [ORCH, *command.argv], COMMAND_TIMEOUT)
            if made["timed_out"]:
                pytest.fail(f"{block.page.relative_to(ROOT)}:{command.line}: {command.text} ran past "
                            f"{COMMAND_TIMEOUT} s: keep runnable commands fast")
            shared_blocks.take_over(made, work, home)
            proc = subprocess.CompletedProcess([ORCH, *command.argv], int(str(made["returncode"])),
                                               str(made["stdout"]), str(made["stderr"]))
            took = float(str(made["took"]))
        else:
            try:
                proc = subprocess.run([ORCH, *command.argv], cwd=work, env=env, capture_output=True, text=True,
                                      timeout=COMMAND_TIMEOUT, check=False)
            except subprocess.TimeoutExpired:
                pytest.fail(f"{block.page.relative_to(ROOT)}:{command.line}: {command.text} ran past "
                            f"{COMMAND_TIMEOUT} s: keep runnable commands fast")
            took = time.monotonic() - started
        assert proc.returncode == command.expect, (
            f"{block.page.relative_to(ROOT)}:{command.line}: {command.text} exited {proc.returncode}, "
            f"the docs say {command.expect} ({took:.1f} s)\nstdout:\n{proc.stdout[-3000:]}\n"
            f"stderr:\n{proc.stderr[-3000:]}")
        if command.expect != 0:
            assert "Traceback" not in proc.stderr, proc.stderr


# ---------------------------------------------------------------- prose


def _prose(page: Path) -> list[tuple[int, str]]:
    """(1-based line, text) of the lines outside fenced code blocks."""
    lines = page.read_text(encoding="utf-8").splitlines()
    code: set[int] = set()
    for block in fenced_blocks("\n".join(lines), page):
        last = block.lines[-1][0] + 1 if block.lines else block.line + 1
        code.update(range(block.line, last + 1))
    return [(n, line) for n, line in enumerate(lines, 1) if n not in code]


# ---------------------------------------------------------------- shown output


# Output that differs per run or per machine, made the same on both sides before comparing.
VOLATILE = (
    (re.compile(r"[\w.$/-]*/orch-jobs/[\w.-]+-\d{8}-\d{6}-[0-9a-f]{6}"), "~/orch-jobs/JOB"),
    (re.compile(r"^PYTHON=\S+$"), "PYTHON=..."),
)
ELLIPSIS = "..."
SHOWN_ROOT = "/home/me/orch"


def _normal(line: str) -> str:
    for pattern, replacement in VOLATILE:
        line = pattern.sub(replacement, line)
    return line.rstrip()


@dataclass(frozen=True)
class Shown:
    """One ``$ orch ...`` line of a ``console`` block and the output shown under it."""

    block: Block
    line: int
    argv: tuple[str, ...]  # without the leading "orch"
    output: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.block.page.relative_to(ROOT)}:{self.line}"


def shown_outputs(block: Block) -> list[Shown]:
    """The commands a ``console`` block shows (``$ orch ...`` lines) with the lines under each."""
    found: list[Shown] = []
    for number, text in block.lines:
        if text.startswith("$ "):
            argv = shlex.split(text[2:])
            found.append(Shown(block, number, tuple(argv[1:]) if argv[:1] == ["orch"] else (), ()))
        elif found:
            last = found[-1]
            found[-1] = Shown(block, last.line, last.argv, (*last.output, text))
    return found


def shown_dry_runs() -> list[Shown]:
    """What the pages show of commands without side effects: ``$ orch ... --dry-run`` and ``orch hosts``."""
    return [shown for page in PAGES for block in fenced_blocks(page.read_text(encoding="utf-8"), page)
            if block.words[:1] == ["console"] for shown in shown_outputs(block)
            if shown.argv and ("--dry-run" in shown.argv or shown.argv[0] == "hosts")]


def _prefix(want: list[str], got: list[str]) -> int:
    """How many of ``want``'s first lines ``got`` starts with."""
    n = 0
    while n < min(len(want), len(got)) and want[n] == got[n]:
        n += 1
    return n


def excerpt_problem(shown: list[str], printed: list[str]) -> str | None:
    """None when the shown lines appear in ``printed`` in order; else the first line of the first part
    that does not. ``...`` lines cut ``shown`` into parts: each part is a run of consecutive printed
    lines, later than the part before; the first part starts at the first printed line."""
    parts: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == ELLIPSIS:
            parts.append([])
        else:
            parts[-1].append(_normal(line))
    lines = [_normal(line) for line in printed]
    at = 0
    for number, part in enumerate(parts):
        if not part:
            continue
        starts = [at] if number == 0 else range(at, len(lines))
        matched = [(_prefix(part, lines[i:i + len(part)]), i) for i in starts] or [(0, at)]
        longest, found = max(matched, key=lambda m: (m[0], -m[1]))
        if longest < len(part):
            return part[longest]
        at = found + len(part)
    return None


def test_the_excerpt_comparison_can_fail() -> None:
    printed = ["a", "b", "c", "d"]
    assert excerpt_problem(["a", "b", "...", "d"], printed) is None
    assert excerpt_problem(["a", "c"], printed) == "c"  # no "..." between: the lines must follow
    assert excerpt_problem(["...", "d", "...", "c"], printed) == "c"  # order counts
    assert excerpt_problem(["...", "d", "c"], printed) == "c"
    assert excerpt_problem(["a", "x"], printed) == "x"
    assert excerpt_problem(["b"], printed) == "b"  # the first part starts at the first line
    assert excerpt_problem(["...", "c", "d"], printed) is None


SHOWN = shown_dry_runs()


def test_the_readme_shows_dry_run_output() -> None:
    assert [s for s in SHOWN if s.block.page == README], "the README's dry-run excerpt is no longer compared"


@pytest.mark.parametrize("shown", SHOWN, ids=[s.where for s in SHOWN])
def test_shown_output_is_what_orch_prints(shown: Shown, tmp_path: Path, pristine: Path) -> None:
    """The output a page shows (an excerpt: ``...`` marks skipped lines) is what the command prints today."""
    work, env = _workdir(tmp_path, pristine)
    env.pop("ORCH_DATA_DIR", None)  # the pages show a machine where none is set
    proc = subprocess.run([ORCH, *shown.argv], cwd=work, env=env, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT, check=False)
    # The pages show the clone (the submitting folder and the code orch runs) as /home/me/orch.
    out = (proc.stdout + proc.stderr).replace(str(work), SHOWN_ROOT).replace(str(ROOT), SHOWN_ROOT)
    printed = out.splitlines()
    problem = excerpt_problem(list(shown.output), printed)
    assert problem is None, (f"{shown.where}: orch {shlex.join(shown.argv)} no longer prints {problem!r} where "
                             f"the page shows it (exit {proc.returncode}); paste its output again:\n"
                             + "\n".join(printed))
