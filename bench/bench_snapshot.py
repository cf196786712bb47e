"""What a code snapshot costs at submit: the first one (every file copied), an unchanged tree
(nothing copied: the stat cache names every file's content, the snapshot is reused) and a tree with one
file edited (one file copied, a new tree of hard links). Each is ``records.snapshots.store.take`` as
``orch submit`` calls it (git ls-files / status included), timed in this process. The dry run's answer
(``records.snapshots.preview``: the same listing, then whether an identical snapshot is stored; nothing
written) is timed with nothing stored yet, for an unchanged tree, and with every file touched (each
file hashed: the most it reads).

    .venv/bin/python bench/bench_snapshot.py [--runs 7] [--files 2000]

Trees: this repository's work tree (its git files), a generated git repository of ``--files`` Python files
of 8 KB in 40 folders (plus an ignored data/ folder of 200 MB that is linked, never read), and the same
files in a folder outside git.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.records.snapshots.collect import collect
from orchestrator.records.snapshots.preview import stored_digest
from orchestrator.records.snapshots.store import take

ROOT = Path(__file__).resolve().parents[1]
LIMIT_MB = 1000


def _make_tree(base: Path, files: int, *, git: bool) -> Path:
    base.mkdir(parents=True)
    body = ("x = 1  # filler line of a module\n" * 256)[:8192]
    for i in range(files):
        folder = base / f"pkg{i % 40}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i}.py").write_text(f"# {i}\n{body}")
    (base / "train.py").write_text("print('train')\n")
    data = base / "data"
    data.mkdir()
    with open(data / "big.bin", "wb") as fh:
        fh.truncate(200 * 2**20)  # sparse: never read, since data/ is ignored and linked
    if git:
        (base / ".gitignore").write_text("data/\n")
        git_cmd = ["git", "-c", "user.email=b@example.com", "-c", "user.name=b"]
        for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "bench"]):
            subprocess.run([*git_cmd, *args], cwd=base, check=True, capture_output=True)
    return base


def _timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def _dry_run(tree: Path, job_root: Path) -> str | None:
    """What ``orch submit --dry-run`` does for the snapshot line (records/snapshots/preview.preview)."""
    return stored_digest(collect(tree, job_root, LIMIT_MB * 2**20), job_root)


def measure(name: str, tree: Path, scratch: Path, runs: int, edit: Path | None) -> list[str]:
    rows = []
    job_root = scratch / f"jobs-{name}"
    median, fastest = _timed(lambda: _dry_run(tree, job_root), runs)
    rows.append(f"| {name} | dry run, nothing stored yet | {median:.3f} s | {fastest:.3f} s |")
    start = time.perf_counter()
    snap = take(tree, job_root, LIMIT_MB)
    first = time.perf_counter() - start
    rows.append(f"| {name} | first snapshot ({snap.files} files, {snap.bytes / 2**20:.1f} MB copied) | "
                f"{first:.3f} s | |")
    median, fastest = _timed(lambda: take(tree, job_root, LIMIT_MB), runs)
    rows.append(f"| {name} | unchanged tree (nothing copied) | {median:.3f} s | {fastest:.3f} s |")
    assert _dry_run(tree, job_root) == snap.digest
    median, fastest = _timed(lambda: _dry_run(tree, job_root), runs)
    rows.append(f"| {name} | dry run, unchanged tree (reuse found) | {median:.3f} s | {fastest:.3f} s |")
    if edit is not None:  # a generated tree: touch every file, so the dry run hashes each one
        found = collect(tree, job_root, LIMIT_MB * 2**20)
        for rel, _, _ in found.files:
            (tree / rel).touch()
        median, fastest = _timed(lambda: _dry_run(tree, job_root), runs)
        rows.append(f"| {name} | dry run, every file touched ({snap.files} hashed) | {median:.3f} s | "
                    f"{fastest:.3f} s |")
    if edit is not None:
        counter = [0]

        def one_edit() -> None:
            counter[0] += 1
            edit.write_text(f"print('edit {counter[0]}')\n")
            take(tree, job_root, LIMIT_MB)

        median, fastest = _timed(one_edit, runs)
        rows.append(f"| {name} | one file edited (1 copied, new tree of links) | {median:.3f} s | {fastest:.3f} s |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    rows = ["| tree | case | wall (median) | fastest |", "| --- | --- | --- | --- |"]
    with tempfile.TemporaryDirectory(prefix="orch-bench-snap-") as tmp:
        scratch = Path(tmp)
        rows += measure("orch's own work tree", ROOT, scratch, args.runs, None)
        repo = _make_tree(scratch / "repo", args.files, git=True)
        rows += measure(f"git repo, {args.files} files", repo, scratch, args.runs, repo / "train.py")
        plain = _make_tree(scratch / "plain", args.files, git=False)
        rows += measure(f"folder (no git), {args.files} files", plain, scratch, args.runs, plain / "train.py")
        from orchestrator.records.snapshots.store import remove_tree

        for sub in scratch.glob("jobs-*/.snapshots/*"):
            if sub.is_dir() and not sub.name.startswith("."):
                remove_tree(sub)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
