"""corpus_copy.py: the corpus's code copied out of fetched snapshots, as SOURCES.md lists it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from corpus_copy import HERE, _entries_of, entries, main
from real_corpus import truth

ROWS = """\
| script | repository | commit | folder in the repository | files (entry first) | licence |
| --- | --- | --- | --- | --- | --- |
| whole_repo | [someone/proj](https://github.com/someone/proj) | `{commit}` | . | `train.py`, `pkg/util.py`, \
`LICENSE` (the repository's `LICENSE.MIT`) | MIT |
| sub_folder | [someone/proj](https://github.com/someone/proj) (branch `dev`) | `{commit}` | src | `run.py`, \
`LICENSE` | MIT |
| from_root | [someone/proj](https://github.com/someone/proj) | `{commit}` | src | `src/run.py` | MIT |
| kept_prefix | [someone/proj](https://github.com/someone/proj) | `{commit}` | src | `run.py` | MIT |
| rooted | [someone/proj](https://github.com/someone/proj) | `{commit}` | src | `src/run.py`, `pkg/util.py` | MIT |
| above | [someone/proj](https://github.com/someone/proj) | `{commit}` | src/deeper | `run.py` (relative to src) | MIT |
| gone | [someone/proj](https://github.com/someone/proj) | `{commit}` | . | `train.py`, `absent.py` | MIT |
| no_snapshot | [other/repo](https://github.com/other/repo) | `{commit}` | . | `train.py` | MIT |
"""


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _commit_all(work: Path, message: str, *, init: bool = False) -> str:
    """Commit every file of ``work`` (a new repository with ``init``); returns the commit."""
    if init:
        _git("init", "-q", cwd=work)
    _git("add", ".", cwd=work)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message, cwd=work)
    return _git("rev-parse", "HEAD", cwd=work)


def _snapshot(tmp_path: Path) -> tuple[Path, str]:
    """A bare snapshot of a two-commit repository where /work/.mirror keeps them; returns (mirrors, first commit)."""
    work = tmp_path / "work"
    (work / "pkg").mkdir(parents=True)
    (work / "src").mkdir()
    (work / "train.py").write_text("print('v1')\n")
    (work / "pkg" / "util.py").write_text("X = 1\n")
    (work / "src" / "run.py").write_text("RUN = 1\n")
    (work / "LICENSE.MIT").write_text("MIT\n")
    first = _commit_all(work, "one", init=True)
    (work / "train.py").write_text("print('v2')\n")
    _commit_all(work, "two")
    mirrors = tmp_path / "mirrors"
    _git("clone", "-q", "--bare", str(work), str(mirrors / "someone+proj" / "repo"), cwd=tmp_path)
    return mirrors, first


def test_copies_each_row_at_its_commit_and_names_what_is_missing(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    mirrors, first = _snapshot(tmp_path)
    sources = tmp_path / "lists" / "SOURCES.md"
    sources.parent.mkdir()
    sources.write_text(ROWS.format(commit=first[:12]))
    (sources.parent / "truth.yaml").write_text("kept_prefix:\n  entry: src/run.py\nrooted:\n  entry: src/run.py\n")
    dest = tmp_path / "corpus"
    assert [e.name for e in entries(sources)] == ["whole_repo", "sub_folder", "from_root", "kept_prefix", "rooted",
                                                  "above", "gone", "no_snapshot"]
    assert entries(sources)[0].files == ("train.py", "pkg/util.py", "LICENSE")  # the note's name is not a file
    assert main([str(sources), "--mirrors", str(mirrors), "--dest", str(dest)]) == 1
    assert (dest / "whole_repo" / "train.py").read_text() == "print('v1')\n"  # the listed commit, not the newest
    assert (dest / "whole_repo" / "pkg" / "util.py").read_text() == "X = 1\n"
    assert (dest / "whole_repo" / "LICENSE").read_text() == "MIT\n"  # the repository's LICENSE.MIT
    assert (dest / "sub_folder" / "run.py").is_file()  # relative to the folder
    assert (dest / "sub_folder" / "LICENSE").read_text() == "MIT\n"  # none in the folder: the repository's own
    assert (dest / "from_root" / "run.py").is_file()  # a path from the repository's root, folder stripped
    assert (dest / "kept_prefix" / "src" / "run.py").is_file()  # where the truth's entry says
    assert (dest / "rooted" / "src" / "run.py").is_file() and (dest / "rooted" / "pkg" / "util.py").is_file()
    assert (dest / "above" / "run.py").is_file()  # listed relative to a folder above the row's
    out = capsys.readouterr().out
    assert "gone (someone/proj" in out and "missing absent.py" in out
    assert "no_snapshot (other/repo" in out and "no snapshot" in out
    assert "6 of 8 scripts copied whole" in out


def test_every_script_of_the_truth_has_one_row_that_lands_on_its_entry() -> None:
    rows = entries(HERE / "real" / "SOURCES.md")
    judged = truth()
    assert sorted(r.name for r in rows) == sorted(judged)
    entry_files = _entries_of(HERE / "real")
    for row in rows:
        folder = "" if row.folder in (".", "") else row.folder + "/"
        first = row.files[0].removeprefix(folder)
        assert entry_files[row.name].endswith(first), (row.name, row.files[0], entry_files[row.name])


def test_a_folder_between_backticks_is_taken_as_written(tmp_path: Path) -> None:
    # amazon-sagemaker-examples' folder name starts with six spaces; a note may follow the backticks
    sources = tmp_path / "SOURCES.md"
    repo = "[aws/examples](https://github.com/aws/examples) | `0123456789ab`"
    sources.write_text(f"| spaced | {repo} | `      models/mnist` (the folder name starts with six spaces) "
                       "| `code/train.py` | Apache-2.0 |\n"
                       f"| plain | {repo} | src | `run.py` | MIT |\n")
    assert [e.folder for e in entries(sources)] == ["      models/mnist", "src"]


def test_braces_in_a_listed_path_name_each_file(tmp_path: Path) -> None:
    sources = tmp_path / "SOURCES.md"
    sources.write_text("| braced | [a/b](https://github.com/a/b) | `0123456789ab` | . | `train.py`, "
                       "`configs/{trainer,callbacks}/{default,ddp}.yaml` | MIT |\n")
    assert entries(sources)[0].files == ("train.py", "configs/trainer/default.yaml", "configs/trainer/ddp.yaml",
                                         "configs/callbacks/default.yaml", "configs/callbacks/ddp.yaml")


def test_a_file_of_a_git_submodule_comes_from_the_submodule_snapshot_at_its_pinned_commit(tmp_path: Path) -> None:
    # PointNeXt keeps openpoints as a submodule: the parent's snapshot holds only the pinned commit
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "dist.py").write_text("PINNED = 1\n")
    pinned = _commit_all(lib, "one", init=True)
    (lib / "dist.py").write_text("NEWER = 1\n")
    _commit_all(lib, "two")
    work = tmp_path / "work"
    work.mkdir()
    (work / "main.py").write_text("import lib.dist\n")
    (work / ".gitmodules").write_text('[submodule "lib"]\n\tpath = lib\n\turl = https://github.com/someone/lib.git\n')
    _git("init", "-q", cwd=work)
    _git("add", ".", cwd=work)
    _git("update-index", "--add", "--cacheinfo", f"160000,{pinned},lib", cwd=work)  # the submodule's gitlink
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one", cwd=work)  # (add . would drop it)
    parent = _git("rev-parse", "HEAD", cwd=work)
    mirrors = tmp_path / "mirrors"
    _git("clone", "-q", "--bare", str(work), str(mirrors / "someone+proj" / "repo"), cwd=tmp_path)
    _git("clone", "-q", "--bare", str(lib), str(mirrors / "someone+lib" / "repo"), cwd=tmp_path)
    sources = tmp_path / "SOURCES.md"
    sources.write_text(f"| with_lib | [someone/proj](https://github.com/someone/proj) | "
                       f"`{parent[:12]}` | . | `main.py`, `lib/dist.py` | MIT |\n")
    dest = tmp_path / "corpus"
    assert main([str(sources), "--mirrors", str(mirrors), "--dest", str(dest)]) == 0
    assert (dest / "with_lib" / "lib" / "dist.py").read_text() == "PINNED = 1\n"
    assert (dest / "with_lib" / ".git").is_dir()  # the copy is its repository's root: the search stops there


def test_a_listed_folder_or_pattern_copies_the_files_it_holds(tmp_path: Path) -> None:
    # Scene-Diffuser's row lists `configs/` and `datasets/*.py`: each file at the commit, never git's tree listing
    mirrors, first = _snapshot(tmp_path)
    sources = tmp_path / "SOURCES.md"
    sources.write_text(f"| globbed | [someone/proj](https://github.com/someone/proj) | `{first[:12]}` | . | "
                       "`train.py`, `pkg/`, `src/*.py`, `*.MIT` | MIT |\n")
    dest = tmp_path / "corpus"
    assert main([str(sources), "--mirrors", str(mirrors), "--dest", str(dest)]) == 0
    copied = sorted(str(p.relative_to(dest / "globbed")) for p in (dest / "globbed").rglob("*") if p.is_file())
    assert copied == ["LICENSE.MIT", "pkg/util.py", "src/run.py", "train.py"]
