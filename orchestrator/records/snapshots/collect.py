"""What a code snapshot holds (no file written): the git work tree's files (``git ls-files``) or a
folder's, what is left out and linked instead, git's commit and whether the tree is dirty.
:mod:`orchestrator.records.snapshots.store` stores it."""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import ConfigError
from orchestrator.spec.snapshot import SNAPSHOT_DIR, skip_reason, top_skipped

GIT_TIMEOUT = 20.0
# Folders skipped by name outside git unless they hold a Python package (data, outputs, checkpoints)
DATA_DIRS = frozenset({"data", "datasets", "checkpoints", "ckpt", "wandb", "mlruns", "lightning_logs", "outputs",
                       "runs"})


@dataclass
class Collected:
    """What a snapshot of ``source`` would hold (no file written yet)."""

    source: Path
    commit: str | None
    dirty: bool
    files: list[tuple[str, int, bool]] = field(default_factory=list)  # (relpath, size, executable)
    links: list[tuple[str, str]] = field(default_factory=list)  # (relpath, absolute target)
    dirs: list[str] = field(default_factory=list)  # folders made even when empty (the submit directory)
    stat_keys: dict[str, list[int]] = field(default_factory=dict)  # relpath -> (size, mtime, inode, ctime)
    partial: bool = False  # the walk stopped early: already over the size limit
    git: bool = False  # source is a git work tree (False: a folder, copied as it is)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (relpath, why)

    @property
    def size(self) -> int:
        return sum(size for _, size, _ in self.files)

    def add_dir(self, path: str) -> None:
        """Make ``path`` (absolute) a folder of the snapshot when it lies in the tree and under no link."""
        try:
            rel = Path(path).relative_to(self.source).as_posix()
        except ValueError:
            return
        if rel != "." and not any(rel == link or rel.startswith(link + "/") for link, _ in self.links):
            self.dirs.append(rel)

    def largest(self, count: int = 5) -> list[tuple[str, int]]:
        return [(rel, size) for rel, size, _ in sorted(self.files, key=lambda f: -f[1])[:count]]


_GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


def _git_all(commands: list[list[str]], cwd: Path) -> list[tuple[int, bytes, bytes]] | None:
    """Run git commands at once (their walks of the tree overlap); (rc, stdout, stderr) each.
    None: no git on this machine (the folder is then copied as it is)."""
    env = {**os.environ, **_GIT_ENV}
    try:
        procs = [subprocess.Popen(["git", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
                 for args in commands]
    except FileNotFoundError:
        return None
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=GIT_TIMEOUT)
            results.append((proc.returncode, out, err))
    except subprocess.TimeoutExpired:
        for proc in procs:
            proc.kill()
            proc.wait()
        raise ConfigError(f"git in {cwd} did not answer within {GIT_TIMEOUT:g} s",
                          hint="check the repository (a huge untracked folder?), or pass --no-snapshot") from None
    return results


def git_root(folder: Path) -> tuple[Path, str | None] | None:
    """(the git work tree ``folder`` lies in, its HEAD commit or None), else None (no repository or git)."""
    done = _git_all([["rev-parse", "--show-toplevel", "HEAD"]], folder)
    if done is None:
        return None
    [(code, out, _)] = done
    lines = out.decode("utf-8", "surrogateescape").splitlines()
    if not lines or not lines[0].startswith("/"):
        return None  # not in a work tree
    commit = lines[1] if code == 0 and len(lines) > 1 else None  # None: a repository without commits
    return Path(os.fsdecode(lines[0].encode("utf-8", "surrogateescape"))), commit


def _z(data: bytes) -> list[str]:
    return [os.fsdecode(item) for item in data.split(b"\0") if item]


def collect(folder: Path, job_root: Path | None = None, limit: int | None = None) -> Collected:
    """The files a snapshot of ``folder``'s work tree (or of ``folder``, outside git) holds; a job root
    inside it (job folders, snapshots) is left out whole."""
    where = git_root(folder)
    if where is None:
        return _collect_folder(folder, _inside(job_root, folder), limit)
    root, commit = where
    done = _git_all([["ls-files", "-z", "-t", "-co", "--exclude-standard"],
                     ["ls-files", "-z", "-oi", "--exclude-standard", "--directory"],
                     ["diff-index", "--quiet", "HEAD", "--"] if commit else ["--version"]], root)
    assert done is not None  # git answered rev-parse just now
    (listed_rc, listed, listed_err), (_, ignored, _), (changed_rc, _, _) = done
    if listed_rc != 0:
        raise ConfigError(f"git ls-files failed in {root}: {listed_err.decode(errors='replace')[:200]}",
                          hint="fix the repository, or pass --no-snapshot")
    tagged = _z(listed)  # "H path" tracked, "? path" untracked (not ignored), ...
    untracked = any(item.startswith("? ") for item in tagged)
    found = Collected(source=root, commit=commit, dirty=commit is None or untracked or changed_rc != 0, git=True)
    links: set[str] = set()
    own = _inside(job_root, root)
    for rel in dict.fromkeys(item[2:] for item in tagged):
        if not _under(rel, own):
            _add(found, root, rel, links)
    for rel in _z(ignored):
        rel = rel.rstrip("/")
        if rel and os.path.basename(rel) != "__pycache__" and not _under(rel, own):
            links.add(rel)
    _finish(found, root, links)
    return found


def _inside(job_root: Path | None, root: Path) -> str | None:
    """``job_root`` relative to ``root`` when it lies inside it (then never copied), else None."""
    if job_root is None:
        return None
    try:
        rel = Path(os.path.realpath(job_root)).relative_to(os.path.realpath(root)).as_posix()
    except ValueError:
        return None
    return rel


def _under(rel: str, prefix: str | None) -> bool:
    if prefix == ".":  # the job root is the source itself: only its snapshots are left out
        prefix = SNAPSHOT_DIR
    return prefix is not None and (rel == prefix or rel.startswith(prefix + "/"))


def _add(found: Collected, root: Path, rel: str, links: set[str]) -> None:
    try:
        info = os.lstat(os.path.join(root, rel))
    except OSError:
        return  # tracked but deleted in the work tree: not part of what runs
    if stat.S_ISLNK(info.st_mode):
        links.add(rel)  # a link of the tree stays a link to where it led
        return
    if not stat.S_ISREG(info.st_mode):
        return  # a submodule (a folder) or a special file
    why = skip_reason(rel, info.st_size)
    if why is not None:
        found.skipped.append((rel, why))
        links.add(top_skipped(rel))
        return
    found.files.append((rel, info.st_size, bool(info.st_mode & stat.S_IXUSR)))
    found.stat_keys[rel] = _stat_key(info)


def _collect_folder(folder: Path, own: str | None, limit: int | None) -> Collected:
    """Outside git: the folder's files, without hidden, data and environment folders; the walk stops
    once more than ``limit`` bytes are found (a script in a home folder must not read the whole home)."""
    found = Collected(source=folder, commit=None, dirty=False)
    links: set[str] = set()
    for here, dirs, names in os.walk(folder):
        base = Path(here)
        rel_here = base.relative_to(folder).as_posix()
        prefix = "" if rel_here == "." else rel_here + "/"
        keep = []
        for name in sorted(dirs):
            path = base / name
            if _under(prefix + name, own):
                continue
            skipped = skip_reason(f"{prefix}{name}/x", 0) is not None or name.startswith(".") or (
                name in DATA_DIRS and not (path / "__init__.py").exists())
            if skipped or path.is_symlink():
                links.add(prefix + name)
                found.skipped.append((prefix + name + "/", "a data, output or environment folder"))
            else:
                keep.append(name)
        dirs[:] = keep
        for name in sorted(names):
            if not _under(prefix + name, own):
                _add(found, folder, prefix + name, links)
        if limit is not None and found.size > limit:
            found.partial = True
            break
    _finish(found, folder, links)
    return found


def _finish(found: Collected, root: Path, links: set[str]) -> None:
    """Links: only the outermost of nested ones, never over a copied file's folder."""
    copied_dirs = {os.path.dirname(rel) for rel, _, _ in found.files}
    parents = set()
    for folder in copied_dirs:
        while folder:
            parents.add(folder)
            folder = os.path.dirname(folder)
    kept: list[str] = []
    for rel in sorted(links):
        if rel in parents or any(rel.startswith(other + "/") for other in kept):
            continue
        kept.append(rel)
    found.links = [(rel, str(root / rel)) for rel in kept]
    found.files.sort()


def _stat_key(info: os.stat_result) -> list[int]:
    return [info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns]
