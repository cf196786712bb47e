"""Copy the real corpus's code out of fetched repository snapshots, as SOURCES.md lists it.

Fetched code is never committed (docs/doctor.md, "Where the code lives"), so a fresh checkout has the truth and
the sources but not the scripts. This puts each listed script's files, at the listed commit, under DEST/NAME/ in
their relative layout, from bare snapshots found as MIRRORS/OWNER+NAME/repo (the layout the tool library's ``fetch``
leaves under /work/.mirror).

Run: .venv/bin/python tests/doctor/corpus_copy.py [--mirrors DIR] [--dest DIR] [SOURCES.md ...] [--only NAME ...]
Prints one line per script it could not copy whole (no snapshot, commit or file missing) and a count; exits 1 if any.
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROW = re.compile(r"^\|\s*([a-z0-9_]+)\s*\|\s*\[([^\]]+)\]\([^)]*\)[^|]*\|\s*`([0-9a-f]{7,40})`[^|]*\|\s*([^|]+?)\s*\|"
                 r"\s*(.+?)\s*\|[^|]*\|\s*$")
LICENCES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "LICENSE.MIT", "LICENCE", "License.txt", "license.txt")


@dataclass(frozen=True)
class Entry:
    name: str
    repo: str
    commit: str
    folder: str
    files: tuple[str, ...]


def _files(cell: str) -> tuple[str, ...]:
    """The backticked paths of a files cell, parenthesised notes left out; ``utils/{comm,logger}.py`` is two."""
    depth, kept = 0, []
    for char in cell:
        depth += char == "("
        if not depth:
            kept.append(char)
        depth -= char == ")" and depth > 0
    return tuple(path for listed in re.findall(r"`([^`]+)`", "".join(kept)) for path in _expanded(listed))


def _expanded(path: str) -> list[str]:
    """A path with ``{a,b}`` braces as the shell expands them (the first braces first)."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", path)
    if match is None:
        return [path]
    return [p for choice in match.group(1).split(",")
            for p in _expanded(path[:match.start()] + choice + path[match.end():])]


def entries(sources: Path) -> list[Entry]:
    found = []
    for line in sources.read_text().splitlines():
        match = ROW.match(line)
        if match:
            name, repo, commit, folder, cell = match.groups()
            quoted = re.search(r"`([^`]+)`", folder)  # as written between backticks: a name may start with spaces
            found.append(Entry(name, repo.strip(), commit, quoted.group(1) if quoted else folder.strip(), _files(cell)))
    return found


def _show(git: Path, commit: str, path: str) -> bytes | None:
    done = subprocess.run(["git", f"--git-dir={git}", "show", f"{commit}:{path}"], capture_output=True, check=False)
    return done.stdout if done.returncode == 0 else None


def _from_submodule(git: Path, commit: str, path: str, mirrors: Path) -> bytes | None:
    """A file inside a git submodule of the snapshot, read from the submodule's own snapshot at the pinned commit."""
    modules = _show(git, commit, ".gitmodules")
    if modules is None:
        return None
    for block in re.split(r"^\[submodule", modules.decode(errors="replace"), flags=re.M):
        where = re.search(r"^\s*path\s*=\s*(\S+)", block, re.M)
        url = re.search(r"^\s*url\s*=\s*\S*github\.com[/:]([^/\s]+/[^/\s]+?)(?:\.git)?/?\s*$", block, re.M)
        if not (where and url and path.startswith(where.group(1).rstrip("/") + "/")):
            continue
        pinned = subprocess.run(["git", f"--git-dir={git}", "rev-parse", f"{commit}:{where.group(1)}"],
                                capture_output=True, text=True, check=False).stdout.strip()
        module = mirrors / url.group(1).replace("/", "+") / "repo"
        if pinned and module.is_dir():
            return _show(module, pinned, path.removeprefix(where.group(1).rstrip("/") + "/"))
    return None


def _entries_of(folder: Path) -> dict[str, str]:
    """Each script's entry file as the truth files beside a SOURCES file have it (``NAME: {entry: PATH}``)."""
    import yaml
    found: dict[str, str] = {}
    for file in sorted(folder.glob("truth*.yaml")):
        for name, data in (yaml.safe_load(file.read_text(encoding="utf-8")) or {}).items():
            found[name] = data["entry"]
    return found


@functools.cache
def _listing(git: Path, commit: str) -> tuple[str, ...]:
    """Every file path of the repository at ``commit`` (read once per snapshot and commit)."""
    return tuple(subprocess.run(["git", f"--git-dir={git}", "ls-tree", "-r", "--name-only", commit],
                                capture_output=True, text=True, check=False).stdout.splitlines())


def _tree_files(git: Path, commit: str, listed: str) -> list[str] | None:
    """The files a listed folder (``configs/``) or pattern (``datasets/*.py``, ``scripts/*/train.sh``) names at
    ``commit``, as paths from the repository's root; None for a plain file's path (or nothing of that name)."""
    names = _listing(git, commit)
    if any(c in listed for c in "*?["):
        return [n for n in names if fnmatch.fnmatchcase(n, listed) and n.count("/") == listed.count("/")]
    folder = listed.rstrip("/") + "/"
    return [n for n in names if n.startswith(folder)] or None


def copy(entry: Entry, mirrors: Path, dest: Path, entry_file: str | None = None) -> list[str]:
    """Copy one script's files; returns what is missing.

    A file is looked up under the row's folder, then from the repository's root; it lands at its path relative to the
    folder, below whatever prefix makes the first file land where the truth's ``entry`` says (a few rows list paths
    relative to a sub-folder the copy kept; where the entry is the first path as listed, every path is kept as listed).
    """
    git = mirrors / entry.repo.replace("/", "+") / "repo"
    git = git / ".git" if (git / ".git").is_dir() else git  # a snapshot kept with a work tree: its .git
    if not git.is_dir():
        return [f"no snapshot {git}"]
    folder = "" if entry.folder in (".", "") else entry.folder.rstrip("/") + "/"
    kept = bool(entry.files) and entry_file == entry.files[0]  # every path lands as listed
    strip = "" if kept else folder
    first = entry.files[0].removeprefix(strip) if entry.files else ""
    prefix = entry_file[: -len(first)] if entry_file and first and entry_file.endswith(first) else ""
    missing = []
    # the copy stands for the repository: its folder is where the doctor's search for the repository's root stops
    # (an empty .git folder, which git itself passes over), never orch's own checkout around tests/doctor/real/,
    # whose other copies would lend it their modules (CodeT5's missing _utils.py found in DeBERTa's copy)
    (dest / entry.name / ".git").mkdir(parents=True, exist_ok=True)
    files: list[str] = []
    for listed in entry.files:  # a folder or a pattern stands for the files it holds at the commit
        tree = _tree_files(git, entry.commit, folder + listed) if folder else None
        expanded = [n.removeprefix(folder) for n in tree] if tree else _tree_files(git, entry.commit, listed)
        files += expanded if expanded else [listed]
    for file in files:
        # under the folder, from the root, or under a folder above it (a row's "(relative to X)" note)
        above = [str(p) + "/" for p in Path(folder).parents if str(p) != "."] if folder else []
        sources = [folder + file, file, *(a + file for a in above)] if folder else [file]
        if Path(file).name in LICENCES:
            sources += [c for c in LICENCES if c != file]
        body = next((b for b in (_show(git, entry.commit, c) for c in sources) if b is not None), None)
        if body is None:  # a file of a git submodule: from the submodule's snapshot, at the commit pinned
            body = next((b for b in (_from_submodule(git, entry.commit, c, mirrors) for c in sources) if b), None)
        if body is None:
            if Path(file).name not in LICENCES:
                missing.append(file)
            continue
        target = dest / entry.name / (prefix + file.removeprefix(strip))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
    return missing


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", type=Path, default=[HERE / "real" / "SOURCES.md"])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--dest", type=Path, default=HERE / "real")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--repos", action="store_true", help="list the repositories (owner/name) and stop")
    args = parser.parse_args(argv)
    listed = [e for s in args.sources for e in entries(s) if args.only is None or e.name in args.only]
    if args.repos:
        print("\n".join(sorted({e.repo for e in listed})))
        return 0
    entry_files = {k: v for s in args.sources for k, v in _entries_of(s.parent).items()}
    failed = 0
    for entry in listed:
        missing = copy(entry, args.mirrors, args.dest, entry_files.get(entry.name))
        if missing:
            failed += 1
            print(f"{entry.name} ({entry.repo} {entry.commit}): missing {', '.join(missing)}")
    print(f"{len(listed) - failed} of {len(listed)} scripts copied whole into {args.dest}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
