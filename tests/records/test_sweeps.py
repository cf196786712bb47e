"""A sweep's folder as one thing (records/sweeps.py): its elements, its resubmissions (one owner of
resubmissions.json), the ids of every submission, and finding it by any of them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support import ROOT, clean_environ

from orchestrator.records.jobcreate import create_job_dir
from orchestrator.records.joblayout import element_dir
from orchestrator.records.sweeps import (
    RESUBMISSIONS_FILE,
    find_sweep,
    indices,
    is_sweep,
    read_resubmissions,
    record_resubmission,
    sweep_ids,
    sweep_of,
)


def make_sweep(root: Path, name: str, array_id: str, count: int) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "array.json").write_text("{}\n")
    (folder / "job_id").write_text(array_id + "\n")
    for index in range(count):
        create_job_dir(element_dir(folder, index))
        (element_dir(folder, index) / "job.json").write_text("{}\n")
    return folder


def test_a_sweep_its_elements_and_an_element_its_sweep(tmp_path: Path) -> None:
    folder = make_sweep(tmp_path / "jobs", "smoke-20260101-000000-aaaaaa", "40", 3)
    create_job_dir(folder / "7")  # no job.json: no element
    assert is_sweep(folder) and not is_sweep(folder / "0")
    assert indices(folder) == [0, 1, 2]
    assert sweep_of(folder / "1") == folder and sweep_of(folder) is None


def test_resubmissions_are_recorded_in_order_and_name_every_id(tmp_path: Path) -> None:
    folder = make_sweep(tmp_path / "jobs", "smoke-20260101-000000-aaaaaa", "40", 4)
    assert read_resubmissions(folder) == [] and sweep_ids(folder) == {"40"}
    record_resubmission(folder, "41", {3: "40_3", 1: "40_1"}, previous="40", submitted="2026-01-01T00:10:00+00:00")
    (folder / "job_id").write_text("41\n")
    record_resubmission(folder, "42", {1: "41_1"}, previous="41", submitted="2026-01-01T00:20:00+00:00")
    first, second = read_resubmissions(folder)
    assert (first["job_id"], first["indices"], first["replaced"]) == ("41", [1, 3], {"1": "40_1", "3": "40_3"})
    assert (second["job_id"], second["previous"]) == ("42", "41")
    assert sweep_ids(folder) == {"40", "41", "42"}
    assert oct((folder / RESUBMISSIONS_FILE).stat().st_mode & 0o777) == "0o600"


def test_find_a_sweep_by_any_of_its_array_ids(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    old = make_sweep(root, "smoke-20260101-000000-aaaaaa", "40", 2)
    new = make_sweep(root, "smoke-20260102-000000-bbbbbb", "50", 2)
    record_resubmission(old, "45", {1: "40_1"}, previous="40", submitted="2026-01-01T00:10:00+00:00")
    assert find_sweep(root, "40") == old and find_sweep(root, "45") == old and find_sweep(root, "50") == new
    assert find_sweep(root, "40_1") is None and find_sweep(root, "99") is None and find_sweep(root, "x") is None


def test_a_damaged_record_reads_as_none(tmp_path: Path) -> None:
    folder = make_sweep(tmp_path / "jobs", "smoke-20260101-000000-aaaaaa", "40", 1)
    (folder / RESUBMISSIONS_FILE).write_text('{"not": "a list"}')
    assert read_resubmissions(folder) == [] and sweep_ids(folder) == {"40"}
    (folder / RESUBMISSIONS_FILE).write_text('[1, "x", {"job_id": "41"}]')
    assert read_resubmissions(folder) == [{"job_id": "41"}] and sweep_ids(folder) == {"40", "41"}


NOBODY = 65534


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="acting as the user nobody needs root and setpriv")
def test_another_users_sweep_in_a_shared_root_is_passed_over() -> None:
    """A job root shared like /tmp: root's private sweep is newest, so ``nobody``'s search for an array id meets it
    first; it is passed over (it once ended ``orch status <id>`` with 'Permission denied'), and a sweep nobody may
    read is still found."""
    shared = Path(tempfile.mkdtemp(prefix="orch-shared-", dir="/tmp"))
    try:
        os.chmod(shared, 0o1777)
        root = shared / "jobs"
        readable = make_sweep(root, "smoke-20260101-000000-aaaaaa", "40", 1)
        private = make_sweep(root, "smoke-20260102-000000-bbbbbb", "50", 1)
        os.chmod(root, 0o1777)
        os.chmod(readable, 0o755)
        for name in ("array.json", "job_id"):  # readable whatever the umask the test process has now
            os.chmod(readable / name, 0o644)
        os.chmod(private, 0o700)
        code = ("import sys; from pathlib import Path; from orchestrator.records.sweeps import find_sweep; "
                "print(find_sweep(Path(sys.argv[1]), '40'), find_sweep(Path(sys.argv[1]), '50'))")
        proc = subprocess.run(["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups",
                               sys.executable, "-c", code, str(root)], capture_output=True, text=True, cwd=ROOT,
                              timeout=120, check=False, env=clean_environ())
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == [str(readable), "None"]
    finally:
        shutil.rmtree(shared, ignore_errors=True)
