"""Code snapshots on disk (the edge): collect, store, reuse and clean ``<job_root>/.snapshots/``.

Layout (a content-addressed tree with a manifest, so a snapshot can be shipped elsewhere as is)::

    <job_root>/.snapshots/.objects/<sha[:2]>/<sha>[x]   one read-only file per content (x: executable)
    <job_root>/.snapshots/<digest>/                      the tree: folders, hard links to objects, and
                                                         symbolic links to what it leaves out
    <job_root>/.snapshots/<digest>.json                  the manifest: files (path, sha256, executable,
                                                         size), links (path, target), git commit, dirty
    <job_root>/.snapshots/.stat/<source key>.json        (size, mtime, inode, ctime) -> sha256 per file,
                                                         so an unchanged tree is not read again

What is copied (:func:`collect`): in a git work tree, ``git ls-files -co --exclude-standard`` (tracked
files and untracked files git does not ignore); in no repository, the folder's files. Never copied
(each left-out entry becomes a symbolic link to the original, so relative paths still reach it):
git-ignored entries, the folders and file kinds of :mod:`orchestrator.spec.snapshot` (environments,
caches, weights, archives; outside git also data and output folders that are no Python package) and
files over ``FILE_MAX_MB``. A snapshot's folders and files are read-only: a job cannot change the
code another job (or its own requeue) runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import ConfigError
from orchestrator.records.atomic import write_text_atomic
from orchestrator.records.trust import JOB_ROOT_MODE, make_job_root
from orchestrator.spec.job import BUILTIN_JOBS_DIR
from orchestrator.spec.runconfig import RunConfig
from orchestrator.spec.snapshot import (
    FILE_MAX_MB,
    MANIFEST_SUFFIX,
    OBJECTS_DIR,
    SNAPSHOT_DIR,
    Snapshot,
    manifest_digest,
    skip_reason,
    source_folder,
    too_large_message,
    top_skipped,
)

log = logging.getLogger(__name__)

GIT_TIMEOUT = 20.0
STAT_DIR = ".stat"
TMP_PREFIX = ".tmp-"
# Folders skipped by name outside git unless they hold a Python package (data, outputs, checkpoints)
DATA_DIRS = frozenset({"data", "datasets", "checkpoints", "ckpt", "wandb", "mlruns", "lightning_logs", "outputs",
                       "runs"})
# orch clean leaves snapshots used (created or reused) this recently: a submit may be writing job.json
CLEAN_GRACE_S = 3600.0
_CHUNK = 1 << 20


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
    found = Collected(source=root, commit=commit, dirty=commit is None or untracked or changed_rc != 0)
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


# --- the content store ------------------------------------------------------------------------

def snapshot_root(job_root: Path) -> Path:
    return job_root / SNAPSHOT_DIR


def _object(store: Path, sha: str, executable: bool) -> Path:
    return store / OBJECTS_DIR / sha[:2] / (sha + ("x" if executable else ""))


def _stat_key(info: os.stat_result) -> list[int]:
    return [info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns]


def _stat_file(store: Path, source: Path) -> Path:
    return store / STAT_DIR / (hashlib.sha256(os.fsencode(str(source))).hexdigest()[:24] + ".json")


def _load_stats(path: Path) -> dict[str, list[object]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _mkdir(path: Path) -> None:
    path.mkdir(mode=JOB_ROOT_MODE, parents=True, exist_ok=True)


def _store_object(store: Path, src: Path, executable: bool) -> str:
    """Copy ``src`` into the store (hashing what is read); its sha256. An object already there is kept."""
    tmp_dir = store / OBJECTS_DIR
    _mkdir(tmp_dir)
    digest = hashlib.sha256()
    tmp = tmp_dir / f"{TMP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
    try:
        with open(src, "rb") as fin, open(tmp, "xb") as fout:
            while chunk := fin.read(_CHUNK):
                digest.update(chunk)
                fout.write(chunk)
        sha = digest.hexdigest()
        target = _object(store, sha, executable)
        if target.exists():
            tmp.unlink()
        else:
            _mkdir(target.parent)
            tmp.chmod(0o555 if executable else 0o444)
            os.replace(tmp, target)
        return sha
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def create(found: Collected, job_root: Path) -> Snapshot:
    """Store ``found`` under ``job_root``: reuse the snapshot when the tree is unchanged (nothing copied,
    nothing read: each file's content is known from its stat in the stat cache)."""
    make_job_root(job_root)
    store = snapshot_root(job_root)
    _mkdir(store)
    stats_path = _stat_file(store, found.source)
    stats = _load_stats(stats_path)
    new_stats: dict[str, list[object]] = {}
    entries: list[tuple[str, str, bool]] = []
    misses: list[int] = []
    for index, (rel, _size, executable) in enumerate(found.files):
        key = found.stat_keys.get(rel) or []
        cached = stats.get(rel)
        sha = str(cached[4]) if isinstance(cached, list) and len(cached) == 5 and cached[:4] == key else ""
        if not sha:
            misses.append(index)
        entries.append((rel, sha, executable))
        new_stats[rel] = [*key, sha]
    if misses or not _reusable(store, manifest_digest(entries, found.links, found.dirs)):
        missing = set(misses)  # a new tree: every object it links must be there (orch clean may have run)
        for index, (rel, sha, executable) in enumerate(entries):
            if index in missing or not _object(store, sha, executable).exists():
                sha = _copy_in(store, found.source / rel, executable)
                entries[index] = (rel, sha, executable)
                new_stats[rel][4:] = [sha]
    digest = manifest_digest(entries, found.links, found.dirs)
    tree = store / digest
    manifest = store / (digest + MANIFEST_SUFFIX)
    if not _reusable(store, digest):
        _build_tree(store, tree, entries, found.links, found.dirs)
        text = json.dumps({"version": 1, "digest": digest, "source": str(found.source), "commit": found.commit,
                           "dirty": found.dirty, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                           "files": [[rel, sha, exe, size] for (rel, sha, exe), (_, size, _) in
                                     zip(entries, found.files, strict=True)],
                           "links": [list(link) for link in found.links], "dirs": found.dirs}, indent=1)
        write_text_atomic(manifest, text + "\n", mode=0o640, fsync=False)
    else:
        os.utime(manifest)  # in use again: orch clean keeps it for CLEAN_GRACE_S
    if new_stats != stats:
        with contextlib.suppress(OSError):
            _mkdir(stats_path.parent)
            write_text_atomic(stats_path, json.dumps(new_stats), mode=0o600, fsync=False)
    return Snapshot(digest=digest, path=str(tree), source=str(found.source), commit=found.commit, dirty=found.dirty,
                    files=len(entries), bytes=found.size)


def _reusable(store: Path, digest: str) -> bool:
    return (store / (digest + MANIFEST_SUFFIX)).is_file() and (store / digest).is_dir()


def _copy_in(store: Path, path: Path, executable: bool) -> str:
    try:
        return _store_object(store, path, executable)
    except OSError as exc:
        raise ConfigError(f"cannot copy {path} into the code snapshot: {exc.strerror}",
                          hint=f"check the file, the space and permissions of {store}, or pass --no-snapshot") from None


def _build_tree(store: Path, tree: Path, entries: Iterable[tuple[str, str, bool]],
                links: Iterable[tuple[str, str]], dirs: Iterable[str]) -> None:
    tmp = store / f"{TMP_PREFIX}{tree.name[:16]}-{os.getpid()}-{os.urandom(3).hex()}"
    tmp.mkdir(mode=0o700)
    try:
        folders = {tmp}
        for rel in dirs:
            (tmp / rel).mkdir(mode=0o700, parents=True, exist_ok=True)
        for rel, sha, executable in entries:
            dest = tmp / rel
            if dest.parent not in folders:
                dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                folders.add(dest.parent)
            obj = _object(store, sha, executable)
            try:
                os.link(obj, dest)
            except OSError:  # too many links to one object, or a file system without hard links
                shutil.copy2(obj, dest)
        for rel, target in links:
            dest = tmp / rel
            dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.symlink(target, dest)
        for here, dirs, _ in os.walk(tmp, topdown=False):
            for name in dirs:
                path = Path(here) / name
                if not path.is_symlink():
                    path.chmod(0o555)
        tmp.chmod(0o555)
        try:
            os.rename(tmp, tree)
        except OSError:
            if not tree.is_dir():
                raise
            remove_tree(tmp)  # another submit made the same snapshot meanwhile
    except BaseException:
        remove_tree(tmp)
        raise


def remove_tree(path: Path) -> None:
    """Remove a (read-only) snapshot tree."""
    if not path.exists() and not path.is_symlink():
        return
    for here, dirs, _ in os.walk(path):
        for name in dirs:
            with contextlib.suppress(OSError):
                sub = Path(here) / name
                if not sub.is_symlink():
                    sub.chmod(0o700)
    with contextlib.suppress(OSError):
        path.chmod(0o700)
    shutil.rmtree(path, ignore_errors=True)


def check_size(found: Collected, limit_mb: int) -> None:
    """A snapshot over ``launcher.snapshot_max_mb`` stops the submit, naming the largest files."""
    if found.size > limit_mb * 2**20:
        message, hint = too_large_message(found.size, limit_mb, found.largest(), str(found.source))
        if found.partial:
            message = message.replace(" would be ", " would be more than ", 1)
        raise ConfigError(message, hint=hint)


def take(folder: Path, job_root: Path, limit_mb: int, cwd: str | None = None) -> Snapshot:
    """Collect, check the size and store: the snapshot a job runs from (``cwd``: the submit directory,
    made in the snapshot when it lies in the tree, even without files of its own)."""
    found = collect(folder, job_root, limit_mb * 2**20)
    check_size(found, limit_mb)
    if cwd is not None:
        found.add_dir(cwd)
    return create(found, job_root)


def source_of(config: RunConfig) -> Path | None:
    """The folder whose tree a job's snapshot copies (None: a built-in job, nothing to copy)."""
    script = config.script
    return source_folder(config.job_file, script.kind if script else None, script.target if script else None,
                         script.cwd if script else None, BUILTIN_JOBS_DIR)


def snapshot_config(config: RunConfig, enabled: bool | None) -> RunConfig:
    """``config`` with the snapshot of its code taken (``enabled`` None: ``launcher.snapshot``)."""
    on = config.launcher.snapshot if enabled is None else enabled
    folder = source_of(config) if on else None
    if folder is None:
        return config
    job_root = Path(config.job_dir).parent
    snap = take(folder, job_root, config.launcher.snapshot_max_mb, config.script.cwd if config.script else None)
    return config.model_copy(update={"snapshot": snap})


__all__ = ["FILE_MAX_MB", "Collected", "check_size", "collect", "create", "git_root", "remove_tree",
           "snapshot_root", "take"]
