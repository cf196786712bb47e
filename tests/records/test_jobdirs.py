"""Listing job folders newest first, lazily: ``orch status`` (and ``orch list --limit``) read only the
folders they show, in the same order a full read gives; and ``orch --help`` imports no verb module."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from support import ROOT

from orchestrator.cli import VERBS, main
from orchestrator.records import jobdirs
from orchestrator.records.jobcreate import write_run_config
from orchestrator.records.jobdirs import iter_job_dirs, list_job_dirs
from orchestrator.records.joblayout import ARRAY_FILE, job_dir_path
from orchestrator.spec.runconfig import RunConfig

T0 = datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone(timedelta(hours=1)))


def make(root: Path, name: str, now: datetime, token: str, *, job_id: str | None = None) -> Path:
    folder = job_dir_path(root, name, now, token)
    folder.mkdir(parents=True)
    write_run_config(folder, RunConfig(
        mode="slurm", job_name=name, job_file="/jobs/x.py", params={}, nodes=1, gpus_per_node=1,
        tasks_per_node=1, cpus_per_task=1, job_dir=str(folder), created=now.isoformat(timespec="seconds")))
    if job_id is not None:
        (folder / "job_id").write_text(job_id + "\n")
    return folder


def full_order(root: Path) -> list[Path]:
    """The order by job.json's ``created``, then folder name (the documented order), read in full."""
    folders = [p for p in root.iterdir() if (p / "job.json").is_file()]
    return sorted(folders, key=lambda p: (json.loads((p / "job.json").read_text())["created"], p.name),
                  reverse=True)


def test_newest_first_matches_a_full_read_with_ties_and_shuffled_names(tmp_path: Path) -> None:
    rng = random.Random(7)
    root = tmp_path / "jobs"
    for i in range(60):  # many in the same second (ties broken by name), names that sort against time
        now = T0 + timedelta(seconds=rng.choice([0, 0, 1, 59, 3600, 86400 * 40]))
        make(root, rng.choice(["zeta", "alpha", "mid-name", "a-b-20990101-000000-ff"]), now, f"{i:06x}")
    assert [j.path for j in list_job_dirs(root)] == full_order(root)


def test_status_reads_only_the_folders_it_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "jobs"
    for i in range(50):
        make(root, "job", T0 + timedelta(seconds=i), f"{i:06x}", job_id=str(1000 + i))
    make(root, "never-queued", T0 + timedelta(hours=1), "abcdef")  # newest, but no job id: skipped
    (tmp_path / "cluster.yaml").write_text(
        "name: t\npartitions:\n  - {name: p, nodes: 'n[1-2]', gpus_per_node: 1, cpus_per_node: 2, "
        f"mem_per_node: 1000}}\nlauncher:\n  job_root: {root}\n")
    monkeypatch.chdir(tmp_path)
    stubs = tmp_path / "bin"  # Slurm's clients answer nothing: every state is UNKNOWN
    stubs.mkdir()
    for client in ("squeue", "sacct", "scontrol"):
        (stubs / client).write_text("#!/bin/sh\nexit 0\n")
        (stubs / client).chmod(0o755)
    monkeypatch.setenv("PATH", f"{stubs}{os.pathsep}{os.environ['PATH']}")
    reads: list[Path] = []
    real = jobdirs.read_job_dir

    def counted(path: Path) -> jobdirs.JobDir:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(jobdirs, "read_job_dir", counted)
    assert main(["status", "--limit", "3", "--json"]) == 0
    shown = [row["job_id"] for row in json.loads(capsys.readouterr().out)]
    assert shown == ["1049", "1048", "1047"]
    assert len(reads) == 4  # the never-queued folder and the three shown, not all 51

    reads.clear()
    assert main(["list", "--limit", "2", "--json"]) == 0
    listed = [row["name"] for row in json.loads(capsys.readouterr().out)]
    assert listed == ["never-queued", "job"] and len(reads) == 2


def test_a_renamed_folder_is_placed_by_its_job_json(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    old = make(root, "old", T0, "000001")
    new = make(root, "new", T0 + timedelta(days=2), "000002")
    renamed = make(root, "mine", T0 + timedelta(days=1), "000003").rename(root / "my-favourite-run")
    broken = make(root, "broken", T0 + timedelta(days=3), "000004").rename(root / "broken-run")
    (broken / "job.json").write_text("{not json")
    assert [j.path for j in iter_job_dirs(root)] == [new, renamed, old, broken]  # unreadable: oldest


def test_array_elements_follow_their_folder_in_index_order(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    single = make(root, "single", T0 + timedelta(seconds=5), "00000a")
    array = job_dir_path(root, "sweep", T0 + timedelta(seconds=9), "00000b")
    array.mkdir(parents=True)
    (array / ARRAY_FILE).write_text("{}")
    for index in (10, 2, 0, 1):
        element = array / str(index)
        element.mkdir()
        write_run_config(element, RunConfig(
            mode="slurm", job_name="sweep", job_file="/jobs/x.py", params={}, nodes=1, gpus_per_node=1,
            tasks_per_node=1, cpus_per_task=1, job_dir=str(element), created=T0.isoformat()))
    assert [j.path for j in iter_job_dirs(root)] == [array / "0", array / "1", array / "2", array / "10", single]


def test_orch_help_imports_no_verb_module() -> None:
    code = ("import sys\nWANTED = {'pydantic', 'jinja2', 'yaml', 'torch'}\nfrom orchestrator.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('orchestrator.commands.') or m in WANTED))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "COLUMNS": "1000",
                              "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip().splitlines()[-1] == "[]"
    for verb, (_, help_text) in VERBS.items():
        assert help_text and help_text in " ".join(out.stdout.split()), verb


def test_every_verb_still_parses_with_its_own_help(capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps at the terminal width
    for verb, (_, help_text) in VERBS.items():
        with pytest.raises(SystemExit) as exc:
            main([verb, "--help"])
        assert exc.value.code == 0
        assert " ".join(help_text.split()) in " ".join(capsys.readouterr().out.split()), verb
