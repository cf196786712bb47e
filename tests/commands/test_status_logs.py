"""orch status / logs / cancel / list / plot through the real CLI, against stand-in Slurm clients.

The stand-ins (squeue, sacct, scancel, scontrol) are small executables put first on PATH: they
print canned Slurm 22.05.8 output read from a JSON file the test can change at any time, and
record every call. So the verbs run their real code path (the default runner, subprocess and
all); only Slurm's answers are canned. The real cluster runs them in tests/e2e/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support import FakeSlurm

from orchestrator import api
from orchestrator.cli import main
from orchestrator.commands.plot import series
from orchestrator.errors import OrchError
from orchestrator.records.jobcreate import write_run_config
from orchestrator.records.jobdirs import find_job_dir, list_job_dirs
from orchestrator.records.training import read_metrics
from orchestrator.slurm import jobstate
from orchestrator.spec.runconfig import RunConfig

DISABLED = {"stdout": "", "stderr": "Slurm accounting storage is disabled\n", "rc": 1}
UNKNOWN_ID = {"stdout": "", "stderr": "slurm_load_jobs error: Invalid job id specified\n", "rc": 1}
DOWN = {"stdout": "", "rc": 1,
        "stderr": "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"}


@pytest.fixture
def job_root(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A cluster.yaml in the working directory whose job_root is ``tmp_path/jobs``."""
    root = tmp_path / "jobs"
    root.mkdir()
    (tmp_path / "cluster.yaml").write_text(
        "name: t\npartitions:\n  - {name: debug, nodes: 'node[1-2]', gpus_per_node: 8, cpus_per_node: 4, "
        f"mem_per_node: 4096}}\nlauncher:\n  job_root: {root}\n")
    return root


def make_job(root: Path, name: str, *, job_id: str | None = None, mode: str = "slurm",
             created: str = "2026-01-02T03:04:05", submit_error: str | None = None,
             metrics: list[dict[str, Any]] | None = None, result: dict[str, Any] | None = None,
             logs: dict[str, str] | None = None) -> Path:
    folder = root / f"{name}-{created.replace(':', '').replace('-', '')}-abc123"
    (folder / "logs").mkdir(parents=True)
    write_run_config(folder, RunConfig(
        mode=mode, job_name=name, job_file="/jobs/x.py", params={}, nodes=2, gpus_per_node=2,
        tasks_per_node=2, cpus_per_task=1, job_dir=str(folder), created=created))
    if job_id is not None:
        (folder / "job_id").write_text(job_id + "\n")
    if submit_error is not None:
        (folder / "submit_error.txt").write_text(submit_error)
    if metrics is not None:
        (folder / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    if result is not None:
        (folder / "result.json").write_text(json.dumps(result))
    for file_name, text in (logs or {}).items():
        (folder / "logs" / file_name).write_text(text)
    return folder


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- status ------------------------------------------------------------------------------------

def test_status_json_of_a_finished_job(fake_slurm: FakeSlurm, job_root: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_job(job_root, "smoke", job_id="6")
    fake_slurm.set({"squeue": {"stdout": "6|COMPLETED|None|node[1-2]|0:09|0|smoke\n"}, "sacct": DISABLED,
                    "sacct --completion": {"stdout": "6|COMPLETED|0:0|node[1-2]|00:00:09|smoke\n"}})
    code, out, err = run_cli(capsys, "status", "6", "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["job_id"] == "6" and data["state"] == "COMPLETED" and data["exit_code"] == 0
    assert data["terminal"] is True and data["orch_state"] == "completed" and data["job_dir"] == str(folder)
    assert [c[0] for c in fake_slurm.calls()] == ["squeue", "sacct", "sacct"]


def test_status_by_folder_and_without_arguments(fake_slurm: FakeSlurm, job_root: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    make_job(job_root, "old", job_id="3", created="2026-01-01T00:00:00")
    new = make_job(job_root, "new", job_id="4", created="2026-01-02T00:00:00")
    make_job(job_root, "refused", submit_error="sbatch: error: invalid partition specified: gpu\n")
    fake_slurm.set({"squeue": {"stdout": "4|RUNNING|None|node[1-2]|0:12|0|new\n"}, "sacct": DISABLED,
                    "sacct --completion": {"stdout": "3|FAILED|3:0|node1|00:00:01|old\n"}})
    code, out, _ = run_cli(capsys, "status", str(new), "--json")
    assert code == 0 and json.loads(out)["state"] == "RUNNING"
    code, out, _ = run_cli(capsys, "status", "--json")
    rows = json.loads(out)
    assert [(r["job_id"], r["state"], r["exit_code"]) for r in rows] == [("4", "RUNNING", None),
                                                                        ("3", "FAILED", 3)]
    code, out, _ = run_cli(capsys, "status")
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["JOBID", "STATE", "EXIT"]
    assert lines[1].split()[:2] == ["4", "RUNNING"] and lines[2].split()[:3] == ["3", "FAILED", "3"]


def test_status_shows_epoch_step_and_loss_from_progress_json(fake_slurm: FakeSlurm, job_root: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_job(job_root, "mnist", job_id="9")
    (folder / "progress.json").write_text(json.dumps({"epoch": 2, "epochs": 3, "step": 120, "steps": 469,
                                                      "loss": 0.34125, "samples_per_s": 1000.0}))
    make_job(job_root, "queued", job_id="10", created="2026-01-01T00:00:00")  # no progress yet
    fake_slurm.set({"squeue": {"stdout": "9|RUNNING|None|node[1-2]|0:12|0|mnist\n10|PENDING|Priority||0:00|0|q\n"},
                    "sacct": DISABLED, "sacct --completion": {"stdout": ""}})
    code, out, _ = run_cli(capsys, "status")
    lines = out.splitlines()
    header = lines[0].split()
    assert header[:9] == ["JOBID", "STATE", "EXIT", "RESTARTS", "ELAPSED", "GPU_H", "EPOCH", "STEP", "LOSS"]
    row = dict(zip(header, lines[1].split(), strict=False))
    assert (row["JOBID"], row["EPOCH"], row["STEP"], row["LOSS"]) == ("9", "2/3", "120/469", "0.3412")
    assert lines[2].split()[:1] == ["10"] and lines[2].split()[6:9] == ["-", "-", "-"]
    code, out, _ = run_cli(capsys, "status", "9", "--json")
    data = json.loads(out)
    assert data["progress"]["step"] == 120 and data["epoch"] == "2/3" and data["loss"] == "0.3412"
    assert data["last_epoch"] is None and data["metrics"] is None
    (folder / "metrics.jsonl").write_text(json.dumps({"epoch": 1, "train_loss": 0.5, "test_loss": None,
                                                      "train_mae": 0.25, "test_mae": 0.125, "metrics": ["mae"]})
                                          + "\n")
    code, out, _ = run_cli(capsys, "status", "9", "--json")
    data = json.loads(out)
    assert data["last_epoch"]["test_mae"] == 0.125 and data["metrics"] == "train_loss 0.5 test_mae 0.125"
    code, out, _ = run_cli(capsys, "status")
    assert "train_loss 0.5 test_mae 0.125" in out.splitlines()[1]
    (folder / "progress.json").write_text('{"epoch": 2, "st')  # torn: shown as unknown, not an error
    code, out, _ = run_cli(capsys, "status", "9", "--json")
    assert code == 0 and json.loads(out)["progress"] is None


def test_status_shows_samples_per_s_and_eta_of_running_jobs_only(fake_slurm: FakeSlurm, job_root: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    for name, job_id in (("running", "9"), ("done", "10")):
        folder = make_job(job_root, name, job_id=job_id)
        (folder / "progress.json").write_text(json.dumps({"epoch": 2, "epochs": 3, "step": 120, "steps": 469,
                                                          "loss": 0.5, "samples_per_s": 12345.6, "eta_s": 349.0}))
    fake_slurm.set({"squeue": {"stdout": "9|RUNNING|None|node1|0:12|0|running\n"}, "sacct": DISABLED,
                    "sacct --completion": {"stdout": "10|COMPLETED|0:0|node1|00:00:09|done\n"}})
    code, out, err = run_cli(capsys, "status", "9", "10")
    lines = out.splitlines()
    header = lines[0].split()
    assert code == 0 and header[8:11] == ["LOSS", "SAMPLES/S", "ETA"], err
    rows = {line.split()[0]: dict(zip(header, line.split(), strict=False)) for line in lines[1:3]}
    assert (rows["9"]["SAMPLES/S"], rows["9"]["ETA"]) == ("12,346", "0:13:38")  # this epoch + the last one
    assert (rows["10"]["SAMPLES/S"], rows["10"]["ETA"]) == ("-", "-")
    code, out, _ = run_cli(capsys, "status", "9", "--json")
    assert (json.loads(out)["rate"], json.loads(out)["eta"]) == ("12,346", "0:13:38")


def test_status_of_a_folder_that_was_never_queued(fake_slurm: FakeSlurm, job_root: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_job(job_root, "refused", submit_error="sbatch: error: invalid partition specified: gpu\n")
    code, _, err = run_cli(capsys, "status", str(folder))
    assert code == 2 and "never queued" in err and "invalid partition specified: gpu" in err
    assert "Traceback" not in err and fake_slurm.calls() == []


@pytest.mark.parametrize(("setup", "words"), [
    ("down", "cannot reach slurmctld"),
    ("missing", "squeue not found"),
])
def test_status_when_slurm_is_unreachable(fake_slurm: FakeSlurm, job_root: Path,
                                          clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                          setup: str, words: str) -> None:
    if setup == "down":
        fake_slurm.set({"squeue": DOWN})
    else:
        clean_env.setenv("PATH", "/nonexistent")
    code, out, err = run_cli(capsys, "status", "12")
    assert code == 1 and out == ""
    assert words in err and "HINT:" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 2  # one line of error, one of hint


def test_status_unknown_job(fake_slurm: FakeSlurm, job_root: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    fake_slurm.set({"squeue": UNKNOWN_ID, "sacct": DISABLED, "sacct --completion": {"stdout": ""}})
    code, out, _ = run_cli(capsys, "status", "77", "--json")
    data = json.loads(out)
    assert code == 0 and data["state"] == "UNKNOWN" and data["job_dir"] is None


# --- logs --------------------------------------------------------------------------------------

def test_logs_batch_rank_and_missing(fake_slurm: FakeSlurm, job_root: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    logs = {"slurm-9.out": "batch line\n", "9-rank0.out": "rank 0 says\n", "9-rank1.out": ""}
    make_job(job_root, "smoke", job_id="9", logs=logs)
    assert run_cli(capsys, "logs", "9", "--batch") == (0, "batch line\n", "")
    assert run_cli(capsys, "logs", "9") == (0, "batch line\nrank 0 says\n", "")  # rank 0, with the batch lines
    assert run_cli(capsys, "logs", "9", "--rank", "0") == (0, "rank 0 says\n", "")
    code, _, err = run_cli(capsys, "logs", "9", "--rank", "5")
    assert code == 2 and "no log for rank 5" in err and "9-rank0.out, 9-rank1.out" in err
    code, _, err = run_cli(capsys, "logs", "10")
    assert code == 2 and "no job folder" in err and "job id 10" in err


def test_logs_say_where_the_run_is_while_the_log_is_empty(fake_slurm: FakeSlurm, job_root: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_job(job_root, "smoke", job_id="9", logs={"9-rank1.out": ""})
    code, out, err = run_cli(capsys, "logs", "9", "--rank", "1")
    assert (code, out) == (0, "") and "has written nothing yet" in err and "rank 0 is at" not in err
    (folder / "progress.json").write_text(json.dumps({"epoch": 1, "epochs": 2, "step": 40, "steps": 469,
                                                      "loss": 0.5}))
    code, out, err = run_cli(capsys, "logs", "9", "--rank", "1")
    assert (code, out) == (0, "") and "rank 0 is at epoch 1/2, step 40/469, loss 0.5000" in err
    code, _, err = run_cli(capsys, "logs", "9")  # the batch log does not exist yet
    assert code == 2 and "rank 0 is at epoch 1/2" in err and "does not exist yet" in err


def test_logs_of_a_local_run(fake_slurm: FakeSlurm, job_root: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    logs = {"local-rank0.out": "zero\n", "local-rank1.out": "one\n"}
    folder = make_job(job_root, "local", mode="local", logs=logs)
    assert run_cli(capsys, "logs", str(folder)) == (0, "zero\n", "")
    assert run_cli(capsys, "logs", str(folder), "--rank", "1") == (0, "one\n", "")


def test_logs_follow_until_the_job_ends(fake_slurm: FakeSlurm, job_root: Path, tmp_path: Path) -> None:
    folder = make_job(job_root, "smoke", job_id="9")
    log = folder / "logs" / "9-rank0.out"
    fake_slurm.set({"squeue": {"stdout": "9|PENDING|Priority||0:00|0|smoke\n"}})
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "logs", "9", "--rank", "0", "-f",
                             "--interval", "0.05"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=tmp_path)

    def job() -> None:  # starts (once the follower is waiting), writes two lines a moment apart, ends
        deadline = time.monotonic() + 30
        while not fake_slurm.calls() and time.monotonic() < deadline:  # its first state check
            time.sleep(0.05)
        fake_slurm.set({"squeue": {"stdout": "9|RUNNING|None|node[1-2]|0:01|0|smoke\n"}})
        log.write_text("first\n")
        time.sleep(0.5)
        with log.open("a") as fh:
            fh.write("second\n")
        fake_slurm.set({"squeue": {"stdout": "9|COMPLETED|None|node[1-2]|0:02|0|smoke\n"}})

    writer = threading.Thread(target=job)
    writer.start()
    out, err = proc.communicate(timeout=60)
    writer.join()
    assert proc.returncode == 0, err
    assert out == "first\nsecond\n"
    assert "waiting for" in err


# --- cancel ------------------------------------------------------------------------------------

def test_cancel_live_finished_and_unknown(fake_slurm: FakeSlurm, job_root: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    fake_slurm.set({"squeue": {"stdout": "5|RUNNING|None|node1|0:05|0|a\n6|COMPLETED|None|node1|0:01|0|b\n"},
                    "scancel": {"stdout": ""}})
    code, out, err = run_cli(capsys, "cancel", "5", "6", "7")
    assert code == 1
    assert "cancelled 5" in out and "6 had already ended (COMPLETED)" in out
    assert "does not know job 7" in err and "Traceback" not in err
    assert [c for c in fake_slurm.calls() if c[0] == "scancel"] == [["scancel", "5"]]


def test_cancel_by_folder_with_a_signal(fake_slurm: FakeSlurm, job_root: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_job(job_root, "smoke", job_id="8")
    fake_slurm.set({"squeue": {"stdout": "8|RUNNING|None|node1|0:05|0|smoke\n"}, "scancel": {"stdout": ""}})
    code, out, _ = run_cli(capsys, "cancel", str(folder), "--signal", "USR2", "--json")
    assert code == 0
    assert json.loads(out) == {"acted": ["8"], "action": "signal", "finished": {}, "unknown": []}
    assert ["scancel", "--signal=USR2", "--full", "8"] in fake_slurm.calls()


def test_cancel_refused_by_slurm(fake_slurm: FakeSlurm, job_root: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    fake_slurm.set({"squeue": {"stdout": "5|RUNNING|None|node1|0:05|0|a\n"},
                    "scancel": {"rc": 1, "stderr": "scancel: error: Kill job error on job id 5: "
                                                   "Access/permission denied\n"}})
    code, _, err = run_cli(capsys, "cancel", "5")
    assert code == 1 and "Access/permission denied" in err and "Traceback" not in err


# --- list --------------------------------------------------------------------------------------

def test_list_states_from_squeue_and_folders(fake_slurm: FakeSlurm, job_root: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    make_job(job_root, "running", job_id="21", created="2026-01-03T00:00:00")
    make_job(job_root, "refused", submit_error="sbatch: error: Node count specification invalid\n",
             created="2026-01-02T00:00:00")
    make_job(job_root, "local", mode="local", result={"status": "completed"}, created="2026-01-01T00:00:00")
    fake_slurm.set({"squeue": {"stdout": "21|RUNNING|None|node[1-2]|0:30|0|running\n"}})
    code, out, _ = run_cli(capsys, "list", "--json")
    rows = json.loads(out)
    assert code == 0
    assert [(r["name"], r["job_id"], r["state"]) for r in rows] == [
        ("running", "21", "RUNNING"), ("refused", None, "NOT_QUEUED"), ("local", None, "COMPLETED")]
    assert [r["orch_state"] for r in rows] == ["running", "not queued", "completed"]
    assert rows[0]["elapsed"] == "00:00:30" and rows[0]["created"].startswith("2026-01-03T00:00:00")
    assert fake_slurm.calls() == [["squeue", "--noheader", "--states=all",
                                   "--Format=JobArrayID:|,State:|,Reason:|,NodeList:|,TimeUsed:|,RestartCnt:|,SubmitTime:|,Name:",
                                   "--jobs=21"]]
    code, out, _ = run_cli(capsys, "list")
    assert out.splitlines()[0].split() == ["NAME", "JOBID", "CREATED", "STATE", "RESTARTS", "ELAPSED", "REASON",
                                           "FOLDER"]
    assert len(out.splitlines()) == 4


def test_list_without_slurm_still_lists(clean_env: pytest.MonkeyPatch, job_root: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    clean_env.setenv("PATH", "/nonexistent")
    make_job(job_root, "queued", job_id="3")
    code, out, err = run_cli(capsys, "list", "--json")
    assert code == 0 and err == ""
    assert [(r["job_id"], r["state"]) for r in json.loads(out)] == [("3", "UNKNOWN")]


def test_list_of_an_empty_or_missing_root(job_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "list", "--json") == (0, "[]\n", "")
    job_root.rmdir()
    assert run_cli(capsys, "list") == (0, "", "")


# --- job folders -------------------------------------------------------------------------------

def test_a_reused_job_id_finds_the_newest_folder(job_root: Path) -> None:
    make_job(job_root, "before-rebuild", job_id="1", created="2026-01-01T00:00:00")
    newer = make_job(job_root, "after-rebuild", job_id="1", created="2026-02-01T00:00:00")
    assert find_job_dir("1", job_root).path == newer
    assert [j.name for j in list_job_dirs(job_root)] == ["after-rebuild", "before-rebuild"]


def test_a_reused_job_id_in_the_same_second_finds_the_later_submit(job_root: Path) -> None:
    """Two folders of one id stamped in the same second (ids restart, a stub sbatch): the folder whose
    job_id was written last wins, not the one whose random name sorts first."""
    names = ("zz-first", "aa-second")
    first, second = (make_job(job_root, name, job_id="7", created="2026-03-01T00:00:00") for name in names)
    os.utime(first / "job_id", ns=(1_000_000_000, 1_000_000_000))
    os.utime(second / "job_id", ns=(1_000_000_500, 1_000_000_500))
    assert find_job_dir("7", job_root).path == second
    os.utime(first / "job_id", ns=(2_000_000_000, 2_000_000_000))
    assert find_job_dir("7", job_root).path == first
    make_job(job_root, "older", job_id="7", created="2026-02-01T00:00:00")  # an older second never wins
    assert find_job_dir("7", job_root).path == first


def test_damaged_folders_do_not_break_listing(job_root: Path) -> None:
    good = make_job(job_root, "good", job_id="2")
    bad = job_root / "bad"
    bad.mkdir()
    (bad / "job.json").write_text("{not json")
    (job_root / "stray-file").write_text("x")
    found = {j.path: j for j in list_job_dirs(job_root)}
    assert set(found) == {good, bad} and found[bad].config is None and found[bad].name == "bad"


def test_read_metrics_skips_a_torn_line(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text('{"epoch": 1, "train_loss": 2.0}\n{"epoch": 2, "train_lo')
    assert read_metrics(tmp_path) == [{"epoch": 1, "train_loss": 2.0}]


@pytest.mark.parametrize("ref", ["12x", "../nowhere", "1_"])
def test_bad_references(job_root: Path, ref: str) -> None:

    with pytest.raises(OrchError, match="neither a job id nor a job folder"):
        find_job_dir(ref, job_root)


# --- plot --------------------------------------------------------------------------------------

METRICS = [
    {"epoch": 1, "epochs": 3, "train_loss": 2.0, "train_acc": 0.3, "test_loss": 1.9, "test_acc": 0.35,
     "samples_per_s": 100.0},
    {"epoch": 2, "epochs": 3, "train_loss": 1.0, "train_acc": 0.6, "test_loss": 1.1, "test_acc": 0.55,
     "samples_per_s": 110.0},
    {"epoch": 3, "epochs": 3, "train_loss": 0.5, "train_acc": 0.8, "test_loss": None, "test_acc": None,
     "samples_per_s": 120.0},
]


def test_series_groups_loss_and_accuracy() -> None:
    epochs, panels = series([*METRICS, {**METRICS[1], "train_loss": 0.9}])  # epoch 2 again, after a resume
    assert epochs == [1.0, 2.0, 3.0]
    assert set(panels) == {"loss", "accuracy"}
    assert panels["loss"]["train_loss"] == [2.0, 0.9, 0.5]
    assert panels["accuracy"]["train_acc"] == [0.3, 0.6, 0.8]
    assert panels["accuracy"]["test_acc"][:2] == [0.35, 0.55]
    assert "samples_per_s" not in panels["loss"] and "samples_per_s" not in panels["accuracy"]


def test_series_has_one_panel_per_task_metric_and_no_accuracy_for_regression() -> None:
    records = [{"epoch": e, "train_loss": 1.0 / e, "train_mae": 0.5 / e, "test_loss": None, "test_mae": 0.4 / e,
                "train_samples": 202, "samples_per_s": 10.0, "metrics": ["mae"]} for e in (1, 2)]
    epochs, panels = series(records)
    assert epochs == [1.0, 2.0] and list(panels) == ["loss", "mae"]
    assert panels["mae"] == {"train_mae": [0.5, 0.25], "test_mae": [0.4, 0.2]}
    assert list(panels["loss"]) == ["train_loss"], "no test loss was ever measured"


def test_plot_writes_a_png(job_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_job(job_root, "smoke", job_id="31", metrics=METRICS)
    code, out, _ = run_cli(capsys, "plot", "31")
    png = folder / "metrics.png"
    assert code == 0 and out.strip() == str(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    code, out, _ = run_cli(capsys, "plot", str(folder), "-o", str(tmp_path / "x.png"), "--json")
    assert code == 0 and json.loads(out) == {"plot": str(tmp_path / "x.png"), "epochs": 3,
                                             "metrics": ["test_acc", "test_loss", "train_acc", "train_loss"]}


def test_plot_without_metrics(job_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_job(job_root, "smoke", job_id="32")
    code, _, err = run_cli(capsys, "plot", "32")
    assert code == 2 and "no records yet" in err and "Traceback" not in err


# --- imports -----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["list", "--json"], ["status", "--json"], ["logs", "1"], ["cancel", "1"]])
def test_follow_up_verbs_import_neither_torch_nor_matplotlib(job_root: Path, tmp_path: Path,
                                                             argv: list[str]) -> None:
    heavy = ("torch", "torchvision", "matplotlib", "submitit")
    code = (f"import sys\nfrom orchestrator.cli import main\nmain({argv!r})\n"
            f"print('IMPORTED', sorted(m for m in {heavy!r} if m in sys.modules))\n")
    env = {**os.environ, "PATH": "/nonexistent"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=60, check=False)
    assert "IMPORTED []" in proc.stdout, proc.stdout + proc.stderr


def test_installed_orch_status_json(fake_slurm: FakeSlurm, job_root: Path, tmp_path: Path) -> None:
    orch = Path(sys.executable).parent / "orch"
    fake_slurm.set({"squeue": {"stdout": "44|PENDING|Resources||0:00|0|smoke\n"},
                    "scontrol": {"stdout": "JobId=44 JobName=smoke\n   JobState=PENDING Reason=Resources "
                                           "Dependency=(null)\n   Requeue=1 Restarts=0 ExitCode=0:0\n"}})
    proc = subprocess.run([str(orch), "status", "44", "--json"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["state"] == "PENDING" and data["reason"] == "Resources" and data["restarts"] == 0


# --- one state for list and status; honest waits, logs and errors -------------------------------

Capsys = pytest.CaptureFixture[str]

SQUEUE = ("1|COMPLETED|None|node1|0:16|0|done\n"
          "2|CANCELLED|None|node1|0:03|0|cancelled\n"
          "3|PENDING|BeginTime||0:00|2|requeued\n")
JOBCOMP = ("4|FAILED|3:0|node1|00:00:05|failed\n"
           "77|COMPLETED|0:0|node2|00:01:00|element\n")  # the array element 9_1, under its raw id


def test_list_and_status_agree(fake_slurm: FakeSlurm, job_root: Path, capsys: Capsys) -> None:
    for job_id, name in (("1", "done"), ("2", "cancelled"), ("3", "requeued"), ("4", "failed")):
        make_job(job_root, name, job_id=job_id, created=f"2026-01-0{job_id}T00:00:00")
    element = make_job(job_root, "element", job_id="9_1", created="2026-01-05T00:00:00")
    (element / "slurm_job_id").write_text("77\n")
    fake_slurm.set({"squeue": {"stdout": SQUEUE}, "sacct": DISABLED, "sacct --completion": {"stdout": JOBCOMP}})
    code, out, err = run_cli(capsys, "list", "--json")
    assert code == 0, err
    listed = {r["job_id"]: r for r in json.loads(out)}
    code, out, err = run_cli(capsys, "status", "1", "2", "3", "4", "9_1", "--json")
    assert code == 0, err
    status = {r["job_id"]: r for r in json.loads(out)}
    expected = {"1": "COMPLETED", "2": "CANCELLED", "3": "PENDING", "4": "FAILED", "9_1": "COMPLETED"}
    assert {i: r["state"] for i, r in listed.items()} == expected
    assert {i: r["state"] for i, r in status.items()} == expected
    for job_id in expected:
        for key in ("state", "orch_state", "elapsed", "created", "job_dir", "gpu_hours", "restarts", "reason"):
            assert listed[job_id][key] == status[job_id][key], (job_id, key)
    assert status["3"]["reason"] == "BeginTime" and status["4"]["exit_code"] == 3
    assert status["3"]["restarts"] == 2 and status["1"]["restarts"] == 0  # from the one squeue call
    assert status["1"]["elapsed"] == "00:00:16" and status["9_1"]["elapsed"] == "00:01:00"
    assert status["9_1"]["gpu_hours"] == round(60 * 4 / 3600, 3)  # 2 nodes x 2 GPUs in job.json
    assert [c[0] for c in fake_slurm.calls()].count("squeue") == 2  # one batched call per verb
    code, out, _ = run_cli(capsys, "status", "1", "2", "3")
    assert out.splitlines()[0].split()[:6] == ["JOBID", "STATE", "EXIT", "RESTARTS", "ELAPSED", "GPU_H"]
    requeued = next(line.split() for line in out.splitlines() if line.startswith("3 "))
    assert requeued[1:4] == ["PENDING", "-", "0+2"] and "BeginTime" in requeued  # in-job restarts + requeues
    code, out, _ = run_cli(capsys, "list")
    requeued = next(line.split() for line in out.splitlines() if line.startswith("requeued "))
    assert requeued[3:5] == ["PENDING", "2"] and "BeginTime" in requeued


def test_forgotten_job_with_a_result_completed(fake_slurm: FakeSlurm, job_root: Path, capsys: Capsys) -> None:
    make_job(job_root, "old", job_id="5", result={"final": {}})
    fake_slurm.set({"squeue": {"stdout": ""}, "sacct": DISABLED, "sacct --completion": {"stdout": ""}})
    code, out, _ = run_cli(capsys, "status", "5", "--json")
    data = json.loads(out)
    assert code == 0 and (data["state"], data["source"]) == ("COMPLETED", "folder")


def test_created_times_have_one_format() -> None:
    aware = jobstate.format_created("2026-01-02T03:04:05+00:00")
    naive = jobstate.format_created("2026-01-02T03:04:05")
    assert aware[19:] and naive[19:]  # both carry an offset
    assert len(aware) == len(naive) == len("2026-01-02T03:04:05+00:00")


def test_logs_of_a_rank_that_wrote_nothing(fake_slurm: FakeSlurm, job_root: Path, capsys: Capsys) -> None:
    make_job(job_root, "smoke", job_id="9", logs={"9-rank0.out": "zero\n", "9-rank1.out": ""})
    code, out, err = run_cli(capsys, "logs", "9", "--rank", "1")
    assert code == 0 and out == "" and "rank 1 has written nothing yet" in err


def test_wait_ends_when_slurm_forgot_a_job_that_never_ran(fake_slurm: FakeSlurm, job_root: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    folder = make_job(job_root, "vanished", job_id="12")
    fake_slurm.set({"squeue": {"stdout": ""}, "sacct": DISABLED, "sacct --completion": {"stdout": ""}})
    monkeypatch.setattr(api, "POLL_SECONDS", 0.01)
    handle = api.JobHandle(job_id="12", job_dir=folder, executor="slurm")
    with pytest.raises(OrchError, match="no longer knows job 12, and it never ran") as info:
        handle.result()  # no timeout: it must still end
    assert info.value.hint and "cancelled while pending" in info.value.hint
    (folder / "logs" / "12-rank0.out").write_text("started\n")
    with pytest.raises(OrchError, match=r"it ran but left no result\.json"):
        handle.result()


def test_usage_errors_name_the_verbs_help(capsys: Capsys) -> None:
    code, _, err = run_cli(capsys, "submit", "smoke", "--gpu-type", "a100", "--dry-run")  # (--constraint exists)
    assert code == 2
    assert err.startswith("orch: error: unrecognized arguments: --gpu-type a100\n")
    assert "HINT: run 'orch submit --help' for usage" in err


def test_super_in_a_user_block_is_accepted(fake_slurm: FakeSlurm, job_root: Path, tmp_path: Path,
                                           capsys: Capsys) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "multi_node.sbatch.j2").write_text(
        '{% extends "base.sbatch.j2" %}\n{% block sbatch %}\n{{ super() }}\n#SBATCH --constraint=a100\n'
        "{% endblock %}\n{% block master_addr %}\nMASTER_ADDR={{ job_name | q }}\n{% endblock %}\n")
    code, out, err = run_cli(capsys, "submit", "smoke", "--nodes", "2", "--gpus", "2", "--templates", str(templates),
                             "--job-name", "a b", "--dry-run")
    assert code == 0, err
    assert "#SBATCH --job-name=\"a b\"\n" in out and "#SBATCH --requeue\n\n#SBATCH --constraint=a100\n" in out
    # a value outside a filter is still refused, with a short message
    (templates / "multi_node.sbatch.j2").write_text(
        '{% extends "base.sbatch.j2" %}\n{% block sbatch %}\n{{ super() }}\n#SBATCH --comment={{ job_name }}\n'
        "{% endblock %}\n")
    code, _, err = run_cli(capsys, "submit", "smoke", "--nodes", "2", "--gpus", "2", "--templates", str(templates),
                           "--dry-run")
    assert code == 2 and "without a quoting filter" in err and len(err) < 400, err


def test_cancel_a_whole_array_by_its_id(fake_slurm: FakeSlurm, job_root: Path, capsys: Capsys) -> None:
    queue = "40_0|RUNNING|None|node1|0:05|0|s\n40_[1-3%1]|PENDING|JobArrayTaskLimit||0:00|0|s\n"
    fake_slurm.set({"squeue": {"stdout": queue}, "scancel": {"stdout": ""}})
    code, out, err = run_cli(capsys, "cancel", "40")
    assert (code, out) == (0, "cancelled 40\n"), err
    assert [c for c in fake_slurm.calls() if c[0] == "scancel"] == [["scancel", "40"]]


def test_an_array_folder_points_at_its_elements(fake_slurm: FakeSlurm, job_root: Path, capsys: Capsys) -> None:
    folder = job_root / "sweep-20260101-000000-abcdef"
    folder.mkdir()
    (folder / "array.json").write_text("{}")
    code, _, err = run_cli(capsys, "status", str(folder))
    assert code == 2 and "folder of a job array" in err and str(folder / "0") in err


def test_gpu_hours_from_accounting_cover_every_run(fake_slurm: FakeSlurm, job_root: Path, capsys: Capsys) -> None:
    """With accounting, GPU-hours are sacct's AllocTRES x ElapsedRaw over all runs of a requeued job; squeue's
    elapsed (the current run only) is the fallback without it."""
    make_job(job_root, "requeued", job_id="15")
    runs = ("15|REQUEUED|0:15|node[1-2]|00:30:00|1800|cpu=16,gres/gpu=8,node=2|requeued\n"
            "15|COMPLETED|0:0|node[1-2]|01:00:00|3600|cpu=16,gres/gpu=8,node=2|requeued\n")
    fake_slurm.set({"squeue": UNKNOWN_ID, "sacct": {"stdout": runs}})
    code, out, err = run_cli(capsys, "status", "15", "--json")
    assert code == 0, err
    row = json.loads(out)
    assert (row["state"], row["elapsed"], row["gpu_hours"]) == ("COMPLETED", "01:00:00", 12.0)


def test_exit_is_blank_while_a_job_runs_and_slurms_code_signal_once_cancelled(fake_slurm: FakeSlurm, job_root: Path,
                                                                              capsys: Capsys) -> None:
    """scontrol and sacct say ExitCode 0:0 for a running job and 0:15 for one scancel ended: EXIT shows - and
    0:15, not 0 for both; --json has no exit_code before the job ends."""
    make_job(job_root, "running", job_id="31", created="2026-01-02T00:00:00")
    make_job(job_root, "cancelled", job_id="32", created="2026-01-01T00:00:00")
    fake_slurm.set({"squeue": {"stdout": "31|RUNNING|None|node1|0:12|0|running\n"},
                    "scontrol": {"stdout": "JobId=31 JobName=running\n   JobState=RUNNING Reason=None "
                                           "Restarts=0 ExitCode=0:0\n"},
                    "sacct": {"stdout": "31|RUNNING|0:0|node1|00:00:12|12|cpu=1|2026-01-02T00:00:00|running\n"
                                        "32|CANCELLED by 1000|0:15|node1|00:00:03|3|cpu=1|2026-01-01T00:00:00|"
                                        "cancelled\n"}})
    code, out, err = run_cli(capsys, "status", "31", "--json")
    row = json.loads(out)
    assert code == 0 and (row["state"], row["exit_code"], row["exit"]) == ("RUNNING", None, None), err
    code, out, _ = run_cli(capsys, "status", "31")
    assert out.splitlines()[1].split()[:3] == ["31", "RUNNING", "-"]
    code, out, _ = run_cli(capsys, "status", "31", "32")
    lines = {line.split()[0]: line.split()[:3] for line in out.splitlines()[1:] if not line.startswith("#")}
    assert lines == {"31": ["31", "RUNNING", "-"], "32": ["32", "CANCELLED", "0:15"]}
    code, out, _ = run_cli(capsys, "list", "--json")
    rows = {r["job_id"]: (r["exit_code"], r["signal"], r["exit"]) for r in json.loads(out)}
    assert rows == {"31": (None, None, None), "32": (0, 15, "0:15")}


@pytest.mark.parametrize("logs", [{"9-rank0.out": "zero\n", "9-rank1.out": ""}, {"9-rank0.out": "zero\n"}])
def test_logs_of_a_finished_jobs_silent_rank_say_it_wrote_nothing(fake_slurm: FakeSlurm, job_root: Path,
                                                                  capsys: Capsys, logs: dict[str, str]) -> None:
    """Rank 1's log of a job that has ended is empty or absent: no "yet" (nothing more will come)."""
    make_job(job_root, "smoke", job_id="9", logs=logs, result={"final": {}})
    fake_slurm.set({"squeue": {"stdout": "9|COMPLETED|None|node[1-2]|0:09|0|smoke\n"}})
    code, out, err = run_cli(capsys, "logs", "9", "--rank", "1")
    assert "yet" not in err, err
    if "9-rank1.out" in logs:
        assert (code, out) == (0, "") and "rank 1 wrote nothing (its log is empty)" in err
    else:
        assert code == 2 and "no log for rank 1" in err and "does not exist" in err
    # the batch log and rank 0's are absent too: the job ended without them
    for name in ("9-rank0.out", "9-rank1.out"):
        (job_root.glob("smoke-*").__next__() / "logs" / name).unlink(missing_ok=True)
    code, _, err = run_cli(capsys, "logs", "9")
    assert code == 2 and "does not exist: the job ended without it" in err and "yet" not in err, err
    code, _, err = run_cli(capsys, "logs", "9", "--all-ranks")
    assert code == 2 and "the job ended before any rank wrote one" in err, err
    # while it runs, the same logs are not there yet
    fake_slurm.set({"squeue": {"stdout": "9|RUNNING|None|node[1-2]|0:09|0|smoke\n"}})
    code, _, err = run_cli(capsys, "logs", "9", "--all-ranks")
    assert code == 2 and "no rank logs in" in err and " yet" in err, err
