"""Issue 23, classes 5, 6 and 7: what orch reads that it did not write.

5. A job folder's records (``job_id``, ``result.json``, ``progress.json``, ``metrics.jsonl``, outcome records,
   ``preflight_attempts.json``, the batch and rank logs) that are a FIFO, ``/dev/zero``, a folder, JSON of the
   wrong shape or with 400-digit numbers: ``orch status``, ``list``, ``logs``, ``logs -f`` and ``plot`` finish
   (an alarm fails a hang), never a traceback, and a FIFO/device/folder is named in a warning.
6. Slurm's clients misbehaving (binary garbage, too few fields, ``|`` in every field, 200,000 lines):
   ``could not read Slurm's answer: <line>`` and the rest of the table still shows.
7. File-system errors: a read-only job folder (``orch plot``, ``orch run --resume`` with an override), a symlink
   loop as job root, names over 255 bytes, a deleted working directory: one clear error each.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import ORCH, clean_environ

from orchestrator.cli import main
from orchestrator.slurm import state
from orchestrator.spec.runconfig import RunConfig, run_config_text
from orchestrator.spec.safefile import read_json, read_text

JOB_ID = "4242"
SUBMIT = "2026-11-25T10:00:00"
HANG = 20  # seconds: anything slower is a hang


@contextlib.contextmanager
def no_hang(seconds: int = HANG) -> Iterator[None]:
    def fire(signum: int, frame: object) -> None:
        raise TimeoutError(f"hung for {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with no_hang():
        code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    assert code in (0, 1, 2), (code, err)
    return code, out, err


@pytest.fixture
def slurm(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Stand-in squeue/sacct/scontrol/scancel printing ``<dir>/<name>.out``; returns that folder."""
    answers = tmp_path / "answers"
    answers.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("squeue", "sacct", "scontrol", "scancel"):
        exe = bin_dir / name
        exe.write_text(f"#!/bin/sh\ncat {answers / name}.out 2>/dev/null\nexit 0\n")
        exe.chmod(0o755)
    clean_env.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (answers / "sacct.out").write_text(
        f"{JOB_ID}|COMPLETED|0:0|node1|00:00:10|10|billing=1,cpu=1,node=1|{SUBMIT}|smoke\n")
    return answers


def make_job(root: Path, name: str = "smoke-20261125-100000-abc123") -> Path:
    folder = root / name
    (folder / "logs").mkdir(parents=True)
    (folder / "checkpoints").mkdir()
    folder.chmod(0o750)
    config = RunConfig(mode="slurm", job_name="smoke", job_file="/jobs/smoke.py", params={"epochs": 2}, nodes=1,
                       gpus_per_node=0, tasks_per_node=1, cpus_per_task=1, job_dir=str(folder),
                       created="2026-11-25T10:00:00+00:00")
    (folder / "job.json").write_text(run_config_text(config))
    (folder / "job_id").write_text(JOB_ID + "\n")
    (folder / "logs" / f"slurm-{JOB_ID}.out").write_text(f"orch: job {JOB_ID} (restart 0) on node1: hi\n")
    (folder / "logs" / f"{JOB_ID}-rank0.out").write_text("epoch 1 loss 0.5\n")
    (folder / "metrics.jsonl").write_text(json.dumps({"epoch": 1, "train_loss": 0.5, "test_loss": 0.4}) + "\n")
    return folder


def cluster_for(tmp_path: Path, root: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text("name: t\npartitions:\n  - {name: debug, nodes: 'node[1-2]', gpus_per_node: 0, cpus_per_node: 4, "
                    f"mem_per_node: 4096}}\nlauncher:\n  job_root: {root}\n")
    return path


# -- class 5: files that are not what they claim ------------------------------------------------------

RECORDS = ["job_id", "result.json", "progress.json", "metrics.jsonl", "logs/rank0.outcome.json",
           "preflight_attempts.json", f"logs/slurm-{JOB_ID}.out", f"logs/{JOB_ID}-rank0.out"]
NOT_FILES = ["fifo", "devzero", "folder"]
WRONG_JSON = {
    "result.json": ["[1, 2]", '"done"', '{"final": [1], "startup": {"total": ' + "9" * 400 + "}}", "null", "[" * 5000],
    "progress.json": ["[]", '{"epoch": "x", "loss": ' + "9" * 400 + "}", '{"epoch": ' + "9" * 400 + ', "epochs": 2}'],
    "metrics.jsonl": ['{"epoch": ' + "9" * 400 + ', "train_loss": 1}\n', "[1]\n", '{"train_loss": "x"}\n'],
    "logs/rank0.outcome.json": ['{"rank": "zero"}', "[]", '{"rank": 0, "exit_code": ' + "9" * 400 + "}"],
    "preflight_attempts.json": ['{"attempts": 5}', '{"attempts": [1, 2], "excluded": "n1"}', "7"],
    "job_id": ["١٢٣", "12|34", "9" * 500, "x\x00y"],
}


def plant(path: Path, kind: str) -> None:
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "devzero":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    else:
        path.write_text(kind)


def commands(folder: Path, cluster: Path) -> list[list[str]]:
    return [["status", str(folder)], ["status", "--json", str(folder)], ["list", "--cluster", str(cluster)],
            ["logs", str(folder)], ["logs", "--all-ranks", str(folder)], ["logs", "--batch", str(folder)]]


@pytest.mark.parametrize("kind", NOT_FILES)
@pytest.mark.parametrize("record", RECORDS)
def test_a_record_that_is_no_file_is_named_never_read(record: str, kind: str, slurm: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    folder = make_job(tmp_path / "jobs")
    plant(folder / record, kind)
    cluster = cluster_for(tmp_path, tmp_path / "jobs")
    named = False
    for argv in commands(folder, cluster):
        _, _, err = run_cli(argv, capsys)
        named = named or Path(record).name in err + caplog.text  # the warning (logging, or stderr)
    if record == "metrics.jsonl":
        code, _, err = run_cli(["plot", str(folder), "-o", str(tmp_path / "m.png")], capsys)
        assert code == 2 and "no records" in err
        named = True
    if record in ("preflight_attempts.json", "logs/rank0.outcome.json"):
        named = True  # read only after a preflight exclusion / a failure: test_outcomes_that_are_no_files
    assert named, f"no warning names {record}"


@pytest.mark.parametrize("kind", NOT_FILES)
def test_outcomes_and_preflight_records_that_are_no_files(kind: str, tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    from orchestrator.slurm.preflight import read_record, read_verdict
    from orchestrator.task.outcome import read_outcomes

    folder = make_job(tmp_path / "jobs")
    for name in ("logs/rank0.outcome.json", "preflight_attempts.json", "preflight.json"):
        plant(folder / name, kind)
    with no_hang(5):
        records, notes = read_outcomes(folder)
        assert records == [] and len(notes) == 1 and "rank0.outcome.json" in notes[0]
        assert read_record(folder) is None and read_verdict(folder) is None
    assert "preflight_attempts.json" in caplog.text and "preflight.json" in caplog.text


@pytest.mark.parametrize(("record", "text"), [(r, t) for r, texts in WRONG_JSON.items() for t in texts])
def test_records_of_the_wrong_shape_or_with_huge_numbers(record: str, text: str, slurm: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_job(tmp_path / "jobs")
    plant(folder / record, text)
    for argv in commands(folder, cluster_for(tmp_path, tmp_path / "jobs")):
        run_cli(argv, capsys)
    if record == "metrics.jsonl":
        run_cli(["plot", str(folder), "-o", str(tmp_path / "m.png")], capsys)


@pytest.mark.parametrize("record", [f"logs/slurm-{JOB_ID}.out", f"logs/{JOB_ID}-rank0.out"])
@pytest.mark.parametrize("kind", ["fifo", "devzero"])
def test_logs_follow_ends_when_a_log_is_no_file(record: str, kind: str, slurm: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                caplog: pytest.LogCaptureFixture) -> None:
    folder = make_job(tmp_path / "jobs")
    plant(folder / record, kind)
    code, _, err = run_cli(["logs", "-f", "--interval", "0.05", str(folder)], capsys)
    assert code == 0 and Path(record).name in err + caplog.text


def test_the_reader_refuses_what_is_not_a_regular_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    (tmp_path / "d").mkdir()
    (tmp_path / "z").symlink_to("/dev/zero")
    (tmp_path / "big").write_bytes(b"x" * 2048)
    (tmp_path / "list.json").write_text("[1]")
    start = time.monotonic()
    with no_hang(5):
        assert read_text(fifo) is None and read_text(tmp_path / "d") is None and read_text(tmp_path / "z") is None
        assert read_text(tmp_path / "big", limit=1024) is None and read_text(tmp_path / "missing") is None
        assert read_json(tmp_path / "list.json", dict) is None and read_json(tmp_path / "list.json", list) == [1]
    assert time.monotonic() - start < 2
    said = caplog.text
    for what in ("a FIFO", "a folder", "a character device", "larger than", "a JSON list, not a JSON object"):
        assert what in said, (what, said)


# -- class 6: Slurm's answers -------------------------------------------------------------------------

GOOD_SQUEUE = f"{JOB_ID}|RUNNING|None|node1|0:10|0|{SUBMIT}|smoke"
BAD_LINES = {
    "binary": "\x00\x01\xff\xfe\x7f garbage \x1b[31m",
    "too few fields": "4243|RUNNING",
    "pipes everywhere": "|".join(["4|2|4|4"] * 12),
    "superscript restarts": f"4244|RUNNING|None|node1|0:10|²|{SUBMIT}|x",
    "huge numbers": f"4245|RUNNING|None|node1|0:10|{'9' * 5000}|{SUBMIT}|x",
    "arabic id": f"٤٢٤٦|RUNNING|None|node1|0:10|0|{SUBMIT}|x",
}


@pytest.mark.parametrize("bad", list(BAD_LINES))
def test_an_unreadable_squeue_line_is_reported_and_the_rest_shows(bad: str, slurm: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    folder = make_job(tmp_path / "jobs")
    (slurm / "squeue.out").write_text(f"{BAD_LINES[bad]}\n{GOOD_SQUEUE}\n", errors="surrogateescape")
    code, out, err = run_cli(["status", str(folder)], capsys)
    assert code == 0 and "RUNNING" in out, (out, err)
    if bad not in ("superscript restarts", "huge numbers"):  # those lines are read: only the number is left out
        assert "could not read Slurm's answer" in err + caplog.text


def test_200000_lines_of_squeue_garbage(slurm: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       caplog: pytest.LogCaptureFixture) -> None:
    folder = make_job(tmp_path / "jobs")
    garbage = "".join(f"junk {i} | | |\n" for i in range(200_000))
    (slurm / "squeue.out").write_text(garbage + GOOD_SQUEUE + "\n")
    start = time.monotonic()
    code, out, err = run_cli(["status", str(folder)], capsys)
    assert code == 0 and "RUNNING" in out
    said = err + caplog.text
    assert "could not read Slurm's answer" in said and "more lines like these" in said
    assert said.count("could not read") <= state.SHOWN_UNREAD + 1  # a few quoted, the rest counted
    assert time.monotonic() - start < 15


@pytest.mark.parametrize("answer", ["\x00\x00\x00", "4242|COMPLETED", "|||||||||||||||", "x" * 100_000,
                                    f"{JOB_ID}|COMPLETED|{'9' * 5000}:0|n|00:00:01|{'9' * 5000}|gres/gpu=²|{SUBMIT}|s"])
def test_sacct_garbage_leaves_the_folder_state(answer: str, slurm: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_job(tmp_path / "jobs")
    (slurm / "sacct.out").write_text(answer + "\n")
    (slurm / "scontrol.out").write_text(f"JobId={JOB_ID} JobState=RUNNING Restarts={'9' * 5000} ExitCode=²:0\n")
    run_cli(["status", str(folder)], capsys)
    run_cli(["status", "--json", str(folder)], capsys)


@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80), max_size=20))
@settings(max_examples=200, deadline=None)
def test_the_parsers_never_raise_and_keep_the_good_line(lines: list[str]) -> None:
    text = "\n".join([*lines, GOOD_SQUEUE])
    assert JOB_ID in state.parse_squeue(text)
    state.parse_sacct(text, "sacct", [JOB_ID])
    state.parse_sacct_runs(text, [JOB_ID])
    state.parse_show_job(JOB_ID, text)


# -- class 7: file-system errors -------------------------------------------------------------------------

@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A read-only file system (a tmpfs remounted ro); skipped where this test may not mount."""
    mount = tmp_path / "ro"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_plot_of_a_read_only_job_folder_is_a_clear_error(read_only: Path, slurm: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_job(read_only / "jobs")
    subprocess.run(["mount", "-o", "remount,ro", str(read_only)], check=True)
    code, _, err = run_cli(["plot", str(folder)], capsys)
    assert code == 2 and "cannot write the plot" in err and "-o PNG" in err
    code, _, err = run_cli(["plot", str(folder), "-o", str(tmp_path / "ok.png")], capsys)
    assert code == 0 and (tmp_path / "ok.png").exists()


def test_resume_with_an_override_in_a_read_only_folder(read_only: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str], clean_env: Any) -> None:
    folder = read_only / "run"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "logs").mkdir()
    config = RunConfig(mode="local", job_name="smoke", job_file=str(Path(__file__).parents[1] / "jobs" / "smoke.py"),
                       params={}, nodes=1, gpus_per_node=0, tasks_per_node=1, cpus_per_task=1, job_dir=str(folder),
                       created="2026-11-25T10:00:00+00:00")
    (folder / "job.json").write_text(run_config_text(config))
    for path in (read_only, folder, folder / "checkpoints", folder / "logs"):
        path.chmod(0o700)
    subprocess.run(["mount", "-o", "remount,ro", str(read_only)], check=True)
    code, _, err = run_cli(["run", "--resume", str(folder), "epochs=3"], capsys)
    assert code == 2 and err.count("orch: error:") == 1 and "read-only" in err.lower(), err


@pytest.mark.parametrize("how", ["loop", "long name", "long path"])
def test_a_job_root_orch_cannot_use_is_a_clear_error(how: str, tmp_path: Path, clean_env: Any,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    if how == "loop":
        root = tmp_path / "loop"
        root.symlink_to(root)
    elif how == "long name":
        root = tmp_path / ("n" * 300)
    else:
        root = tmp_path.joinpath(*(["d" * 200] * 25))
    cluster = cluster_for(tmp_path, root)
    for argv in (["list", "--cluster", str(cluster)], ["status", "--cluster", str(cluster)],
                 ["run", "smoke", "--cluster", str(cluster)], ["status", "123", "--cluster", str(cluster)]):
        code, _, err = run_cli(argv, capsys)
        if argv[0] == "run":
            assert code == 2 and err.count("orch: error:") == 1, err


@pytest.mark.parametrize("argv", [["list"], ["status"], ["submit", "smoke", "--dry-run"], ["run", "smoke"],
                                  ["doctor", "x.py"], ["logs", "1"]])
def test_a_deleted_working_directory_is_named(argv: list[str], tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = subprocess.Popen([ORCH, *argv], cwd=gone, env=clean_environ(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.rmdir(gone))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "current folder no longer exists" in err and "Traceback" not in err, err
