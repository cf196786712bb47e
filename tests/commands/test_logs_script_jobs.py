"""orch logs / status / list / cancel for script jobs, through the real CLI:
the log views (rank 0 with the batch lines, --batch, --rank, --all-ranks, -f, tail reads), the index
of submitted jobs (no --cluster needed), hidden columns, script names, no GPU-hours for CPU jobs,
``orch run --all-ranks`` and job ids that Slurm reused for another job.

Slurm's clients are test_status_logs.py's stand-ins (canned output, every call recorded); sbatch is
the ``stubs`` fixture's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from support import ORCH, ROOT, Stubs, clean_environ
from test_status_logs import DISABLED, FakeSlurm, job_root, run_cli

from orchestrator.records import jobindex
from orchestrator.records.jobcreate import write_run_config
from orchestrator.records.logs.view import split_batch, tail_lines
from orchestrator.slurm.state import parse_sacct_runs, parse_squeue
from orchestrator.spec.runconfig import RunConfig
from orchestrator.spec.script import ScriptTarget

__all__ = ["job_root"]  # the fixture used here

START = "orch: job 9 (restart 0) on node[1-2]: MASTER_ADDR=node1 MASTER_PORT=29500\n"


def folder(root: Path, name: str, *, job_id: str | None = "9", mode: str = "slurm", gpus: int = 2,
           cluster: str | None = None, created: str = "2026-01-02T03:04:05", script: bool = True,
           logs: dict[str, str] | None = None, submitted: str | None = None) -> Path:
    """A job folder as orch submit/run leaves it (``submitted``: its submitted.json's time)."""
    path = root / f"{name.replace('/', '_')}-{created.replace(':', '').replace('-', '')}-abc123"
    (path / "logs").mkdir(parents=True)
    target = ScriptTarget(kind="script", target=f"/src/{name}.py", cwd="/src") if script else None
    write_run_config(path, RunConfig(mode=mode, job_name=name, job_file="/src/x.py", params={}, nodes=1,
                                     gpus_per_node=gpus, tasks_per_node=2, cpus_per_task=1, job_dir=str(path),
                                     created=created, cluster_name=cluster, script=target))
    if job_id is not None:
        (path / "job_id").write_text(job_id + "\n")
    if submitted is not None:
        jobindex.record_submit(path, jobindex.Submitted(job_id=job_id or "", job_dir=str(path), submitted=submitted,
                                                        job_name=name, cluster=cluster))
    for file_name, text in (logs or {}).items():
        (path / "logs" / file_name).write_text(text)
    return path


def squeue_line(job_id: str, state: str, name: str, submit: str = "2026-01-02T03:04:06") -> str:
    return f"{job_id}|{state}|None|node[1-2]|0:30|0|{submit}|{name}\n"


# --- the log views ---------------------------------------------------------------------------------

def test_default_view_is_rank_0_inside_the_batch_lines_in_order(fake_slurm: FakeSlurm, job_root: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    batch = "setup says hi\n" + START + "orch: preflight: every check passed; starting the job\nsrun: done\n"
    folder(job_root, "dino/main_dino", logs={"slurm-9.out": batch, "9-rank0.out": "epoch 1\nepoch 2\n",
                                             "9-rank1.out": "rank one\n"})
    code, out, err = run_cli(capsys, "logs", "9")
    assert (code, err) == (0, "")
    assert out == ("setup says hi\n" + START + "orch: preflight: every check passed; starting the job\n"
                   "epoch 1\nepoch 2\nsrun: done\n")
    assert run_cli(capsys, "logs", "9", "--batch")[1] == batch
    assert run_cli(capsys, "logs", "9", "--rank", "1")[1] == "rank one\n"
    code, out, _ = run_cli(capsys, "logs", "9", "--all-ranks")
    assert out == "[rank 0] epoch 1\n[rank 0] epoch 2\n[rank 1] rank one\n"
    code, _, err = run_cli(capsys, "logs", "9", "--batch", "--rank", "1")
    assert code == 2 and "not allowed with argument" in err


def test_default_view_before_the_ranks_start_and_of_a_refused_job(fake_slurm: FakeSlurm, job_root: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    folder(job_root, "train", logs={"slurm-9.out": "module load failed\n"})
    code, out, err = run_cli(capsys, "logs", "9")
    assert (code, out) == (0, "module load failed\n") and "rank 0's log" in err and "does not exist yet" in err
    refused = folder(job_root, "refused", job_id=None, created="2026-01-01T00:00:00")
    (refused / "submit_error.txt").write_text("sbatch: error: invalid partition\n")
    code, _, err = run_cli(capsys, "logs", str(refused))
    assert code == 2 and "never queued" in err and "invalid partition" in err


def test_views_read_only_the_tail_of_a_big_log(fake_slurm: FakeSlurm, job_root: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    big = "".join(f"line {i}\n" for i in range(200_000))  # about 2 MB
    folder(job_root, "train", logs={"9-rank0.out": big})
    code, out, err = run_cli(capsys, "logs", "9", "--rank", "0", "--lines", "3")
    assert (code, out) == (0, "line 199997\nline 199998\nline 199999\n")
    assert "first lines of" in err and "--lines N" in err
    path = job_root.glob("*/logs/9-rank0.out").__next__()
    lines, size, left_out = tail_lines(path, 5, max_bytes=30)  # the bound wins over the line count
    assert size == len(big) and left_out and lines == [b"line 199998\n", b"line 199999\n"]
    assert tail_lines(tmp_path / "missing", 5) == ([], 0, False)
    short = tmp_path / "short"
    short.write_bytes(b"a\nb")  # a last line still being written
    assert tail_lines(short, 10) == ([b"a\n", b"b"], 3, False)


def test_split_batch_keeps_lines_without_a_start_before() -> None:
    assert split_batch([b"x\n", b"y\n"]) == ([b"x\n", b"y\n"], [])
    two = [b"a\n", START.encode(), b"orch: the tasks checkpointed after preemption; requeueing job 9\n",
           START.replace("restart 0", "restart 1").encode(), b"end\n"]
    assert split_batch(two) == (two[:4], [b"end\n"])


@pytest.mark.parametrize("mode", ["default", "all"])
def test_follow_prints_new_lines_until_the_job_ends(fake_slurm: FakeSlurm, job_root: Path, tmp_path: Path,
                                                    mode: str) -> None:
    path = folder(job_root, "train", logs={"slurm-9.out": START, "9-rank0.out": "step 1\n"})
    fake_slurm.set({"squeue": {"stdout": squeue_line("9", "RUNNING", "train", "2026-01-02T03:04:04")}})
    args = [ORCH, "logs", "9", "-f", "--interval", "0.05"] + (["--all-ranks"] if mode == "all" else [])
    env = clean_environ(PATH=os.environ["PATH"], FAKE_SLURM_SPEC=str(fake_slurm.spec),
                        FAKE_SLURM_LOG=str(fake_slurm.log), ORCH_STATE_DIR=os.environ["ORCH_STATE_DIR"])
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.0)
    with (path / "logs" / "9-rank0.out").open("a") as fh:
        fh.write("step 2\nstep 3 (half")  # a line still being written is shown once whole
    (path / "logs" / "9-rank1.out").write_text("one appears late\n")
    time.sleep(0.5)
    with (path / "logs" / "9-rank0.out").open("a") as fh:
        fh.write(" done)\n")
    fake_slurm.set({"squeue": {"stdout": squeue_line("9", "COMPLETED", "train", "2026-01-02T03:04:04")}})
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    if mode == "default":
        assert out.decode() == START + "step 1\nstep 2\nstep 3 (half done)\n"
    else:
        lines = out.decode().splitlines()
        assert lines[:1] == ["[rank 0] step 1"] and "[rank 1] one appears late" in lines
        assert [ln for ln in lines if ln.startswith("[rank 0]")] == [
            "[rank 0] step 1", "[rank 0] step 2", "[rank 0] step 3 (half done)"]


def test_follow_of_a_local_run_ends_with_its_result(fake_slurm: FakeSlurm, job_root: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.commands import logs

    monkeypatch.setattr(logs, "STATE_EVERY", 0.05)
    path = folder(job_root, "train", job_id=None, mode="local", logs={"local-rank0.out": "a\n"})

    def finish() -> None:
        time.sleep(0.3)
        with (path / "logs" / "local-rank0.out").open("a") as fh:
            fh.write("b\n")
        (path / "result.json").write_text("{}")

    thread = threading.Thread(target=finish)
    thread.start()
    code, out, _ = run_cli(capsys, "logs", str(path), "-f", "--interval", "0.02")
    thread.join()
    assert (code, out) == (0, "a\nb\n")
    assert fake_slurm.calls() == []  # a local run asks no Slurm


# --- the index of submitted jobs ---------------------------------------------------------------------

def test_submit_records_the_job_and_logs_find_it_without_cluster(
        clean_env: pytest.MonkeyPatch, stubs: Stubs, write_cluster: Callable[..., Path], tmp_path: Path,
        state_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write_cluster(launcher={"job_root": str(tmp_path / "elsewhere-jobs")})
    script = tmp_path / "dino" / "main_dino.py"
    script.parent.mkdir()
    script.write_text("print('hello')\n")
    before = datetime.now().astimezone() - timedelta(seconds=1)
    code, out, err = run_cli(capsys, "submit", str(script), "--cluster", str(cluster), "--gpus", "1")
    assert code == 0, err
    [job_dir] = [p for p in (tmp_path / "elsewhere-jobs").iterdir() if not p.name.startswith(".")]  # not .snapshots
    assert out == f"submitted job 4242\njob folder: {job_dir}\n"
    assert job_dir.name.startswith("dino_main_dino-")
    [call] = stubs.records("sbatch")
    assert "--job-name=dino/main_dino" in call["sbatch_options"]  # the folder and the file
    [line] = (state_dir / "jobs.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["job_id"] == "4242" and record["job_dir"] == str(job_dir) and record["cluster"] == "testcluster"
    assert record["job_name"] == "dino/main_dino"
    submitted = datetime.fromisoformat(record["submitted"])
    assert before <= submitted <= datetime.now().astimezone() + timedelta(seconds=1)
    assert json.loads((job_dir / "submitted.json").read_text()) == record
    (job_dir / "logs" / "4242-rank0.out").write_text("rank 0 trains\n")
    other = tmp_path / "other"  # no cluster.yaml here, no --cluster: the index finds the folder
    other.mkdir()
    clean_env.chdir(other)
    assert run_cli(capsys, "logs", "4242") == (0, "rank 0 trains\n", "")


def test_index_lines_that_are_damaged_are_skipped(state_dir: Path, tmp_path: Path) -> None:
    good = jobindex.Submitted(job_id="5", job_dir=str(tmp_path / "a"), submitted="2026-01-02T03:04:05+00:00",
                              job_name="a")
    newer = jobindex.Submitted(job_id="5", job_dir=str(tmp_path / "b"), submitted="2026-01-03T03:04:05+00:00",
                               job_name="b", cluster="c2")
    jobindex.append_index(good)
    index = state_dir / "jobs.jsonl"
    with index.open("ab") as fh:
        fh.write(b'{"job_id": "5", "job_dir": \n[1, 2]\n"text"\n{"job_id": 5}\n\xff\xfe\n' + b"x" * 20000 + b"\n")
    jobindex.append_index(newer)
    with index.open("ab") as fh:
        fh.write(b'{"job_id": "5", "job_dir": "/tor')  # torn by a crash: no newline
    assert jobindex.lookup("5") == [newer, good]
    assert jobindex.lookup("6") == []
    assert list(jobindex.read_index(limit=300)) == [newer]  # bounded: only the newest bytes are read
    index.unlink()
    assert jobindex.lookup("5") == []


def test_state_dir_follows_the_variables(tmp_path: Path) -> None:
    assert jobindex.index_path({"ORCH_STATE_DIR": str(tmp_path)}) == tmp_path / "jobs.jsonl"
    assert jobindex.index_path({"XDG_STATE_HOME": "/x", "HOME": "/h"}) == Path("/x/orch/jobs.jsonl")
    assert jobindex.index_path({"HOME": "/h"}) == Path("/h/.local/state/orch/jobs.jsonl")


def test_tests_never_write_the_real_index(state_dir: Path) -> None:
    assert os.environ["ORCH_STATE_DIR"] == str(state_dir)
    assert not str(jobindex.index_path()).startswith(str(Path.home() / ".local"))


def test_status_and_cancel_find_the_job_through_the_index(fake_slurm: FakeSlurm, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "somewhere"
    path = folder(root, "train", job_id="31", submitted="2026-01-02T03:04:07")
    fake_slurm.set({"squeue": {"stdout": squeue_line("31", "RUNNING", "train")}, "scancel": {"stdout": ""}})
    code, out, err = run_cli(capsys, "status", "31", "--json")
    assert code == 0, err
    assert json.loads(out)["job_dir"] == str(path) and json.loads(out)["state"] == "RUNNING"
    code, out, err = run_cli(capsys, "cancel", "31")
    assert (code, out) == (0, "cancelled 31\n"), err


# --- status and list of scripts -------------------------------------------------------------------

def test_status_hides_the_training_columns_a_script_cannot_fill(fake_slurm: FakeSlurm, job_root: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    folder(job_root, "dino/main_dino")
    fake_slurm.set({"squeue": {"stdout": squeue_line("9", "RUNNING", "dino/main_dino")}})
    code, out, _ = run_cli(capsys, "status")
    header = out.splitlines()[0].split()
    assert code == 0 and header == ["JOBID", "STATE", "EXIT", "RESTARTS", "ELAPSED", "GPU_H", "NODES", "REASON",
                                    "NAME", "FOLDER"]
    assert "dino/main_dino" in out.splitlines()[1]
    code, out, _ = run_cli(capsys, "status", "9", "--json")
    assert json.loads(out)["epoch"] is None  # --json keeps every key


def test_cpu_jobs_have_no_gpu_hours(fake_slurm: FakeSlurm, job_root: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    folder(job_root, "cpu", gpus=0)
    fake_slurm.set({"squeue": {"stdout": squeue_line("9", "RUNNING", "cpu")}})
    code, out, _ = run_cli(capsys, "status", "9", "--json")
    assert code == 0 and json.loads(out)["gpu_hours"] is None
    code, out, _ = run_cli(capsys, "status")
    assert "GPU_H" not in out.splitlines()[0]
    # accounting that gave a job no GPUs is no GPU-hours either (not CPU time counted as GPU time)
    runs = parse_sacct_runs("9|COMPLETED|0:0|n1|00:10:00|600|billing=4,cpu=4,mem=1G,node=1|"
                            "2026-01-02T03:04:06|cpu\n", ["9"])
    assert runs["9"].gpu_hours == 0.0 and runs["9"].submit_time == "2026-01-02T03:04:06"


@pytest.mark.parametrize(("kind", "target", "name"), [
    ("script", "/home/u/dino/main_dino.py", "dino/main_dino"),
    ("script", "/train.py", "train"),
    ("module", "pkg.sub.mod", "pkg.sub.mod"),
])
def test_script_job_names(kind: str, target: str, name: str) -> None:
    assert ScriptTarget(kind=kind, target=target, cwd="/").name == name  # type: ignore[arg-type]


def test_job_name_option_wins_for_scripts(clean_env: pytest.MonkeyPatch, write_cluster: Callable[..., Path],
                                          tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "proj" / "train.py"
    script.parent.mkdir()
    script.write_text("print(1)\n")
    cluster = str(write_cluster())
    code, out, err = run_cli(capsys, "submit", str(script), "--cluster", cluster, "--gpus", "1", "--dry-run")
    assert code == 0, err
    assert "#SBATCH --job-name=proj/train" in out
    code, out, err = run_cli(capsys, "submit", str(script), "--cluster", cluster, "--gpus", "1", "--dry-run",
                             "--job-name", "mine")
    assert code == 0 and "#SBATCH --job-name=mine" in out and "--job-name=proj/train" not in out


# --- orch run --all-ranks ------------------------------------------------------------------------

GLOO_SCRIPT = """\
import os
import shutil
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
total = torch.tensor([rank + 1.0])
dist.all_reduce(total)
print(f"rank says {rank}: sum {total.item():g}", flush=True)
dist.destroy_process_group()
"""


def test_orch_run_all_ranks_streams_every_rank_with_a_prefix(tmp_path: Path) -> None:
    script, jobs = tmp_path / "proj" / "hello.py", tmp_path / "jobs"
    script.parent.mkdir()
    script.write_text(GLOO_SCRIPT)
    env = clean_environ(PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="")

    def orch_run(*extra: str) -> str:
        proc = subprocess.run([ORCH, "run", str(script), "--nproc", "2", "--job-root", str(jobs), *extra],
                              cwd=tmp_path, env=env, capture_output=True, timeout=180, check=False)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        return proc.stdout.decode(errors="replace")

    lines = orch_run("--all-ranks").splitlines()
    assert "[rank 0] rank says 0: sum 3" in lines and "[rank 1] rank says 1: sum 3" in lines
    job_dir = max(p for p in jobs.iterdir() if (p / "job.json").is_file())
    assert job_dir.name.startswith("proj_hello-")
    assert (job_dir / "logs" / "local-rank1.out").read_text() == "rank says 1: sum 3\n"  # the rank's own lines
    plain = orch_run().splitlines()  # without --all-ranks: rank 0 only, no prefix
    assert "rank says 0: sum 3" in plain and not [line for line in plain if "rank says 1" in line or "[rank" in line]


# --- job ids that Slurm reused ---------------------------------------------------------------------

def test_parsers_read_submit_time_and_older_formats() -> None:
    new = parse_squeue("7|RUNNING|None|n1|0:05|0|2026-11-25T13:04:05|a|b\n")
    assert new["7"].submit_time == "2026-11-25T13:04:05" and new["7"].name == "a|b"
    old = parse_squeue("7|RUNNING|None|n1|0:05|0|x|y\n")  # no SubmitTime: the name keeps its '|'
    assert old["7"].submit_time is None and old["7"].name == "x|y"
    assert parse_squeue("7|PENDING|None||0:00|0|N/A|q\n")["7"].submit_time is None


@pytest.mark.parametrize(("slurm", "ours", "same"), [
    ("2026-11-25T13:04:05", "2026-11-25T13:04:06", True),
    ("2026-11-25T13:04:05", "2026-11-25T13:04:02", True),  # clocks a little apart
    ("2026-11-25T13:04:05", "2026-11-25T13:03:00", False),  # Slurm's job came after ours
    ("2026-11-25T13:04:05", "2026-11-26T13:04:05", False),  # ours came a day later
    ("Unknown", "2026-11-25T13:04:05", None),
    ("2026-11-25 13:04:05", "garbage", None),
])
def test_same_submit(slurm: str, ours: str, same: bool | None) -> None:
    assert jobindex.same_submit(slurm, ours) is same


def test_a_requeue_moves_slurms_submit_time_and_is_no_reuse() -> None:
    # Slurm resets SubmitTime when it requeues a job: a later time fits when Slurm counts restarts
    assert jobindex.same_submit("2026-11-25T15:00:00", "2026-11-25T13:04:06", requeued=True) is True
    assert jobindex.same_submit("2026-11-25T15:00:00", "2026-11-25T13:04:06") is False
    assert jobindex.same_submit("2026-11-24T15:00:00", "2026-11-25T13:04:06", requeued=True) is False
    # accounting: the submission is the first run of the last chain of runs (earlier runs end REQUEUED);
    # an older job with the same id (a rebuilt cluster) came before it
    text = ("5|COMPLETED|0:0|n1|00:01:00|60||2026-01-01T00:00:00|old\n"
            "5|REQUEUED|0:0|n1|00:01:00|60||2026-11-25T13:04:05|new\n"
            "5|RUNNING|0:0|n1|00:01:00|60||2026-11-25T15:00:00|new\n")
    assert parse_sacct_runs(text, ["5"])["5"].submit_time == "2026-11-25T13:04:05"


def test_a_requeued_job_keeps_its_slurm_state(fake_slurm: FakeSlurm, job_root: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    folder(job_root, "train", job_id="12", submitted="2026-01-02T03:04:07")
    fake_slurm.set({"squeue": {"stdout": "12|RUNNING|None|node1|0:30|1|2026-01-02T05:00:00|train\n"},
                    "scontrol": {"stdout": "JobId=12 JobName=train\n   JobState=RUNNING Reason=None Restarts=1\n"
                                           "   SubmitTime=2026-01-02T05:00:00 ExitCode=0:0\n"}})
    code, out, _ = run_cli(capsys, "status", "12", "--json")
    data = json.loads(out)
    assert code == 0 and data["state"] == "RUNNING" and data["reused"] is None and data["restarts"] == 1
    assert data["source"] == "scontrol" and data["submit_time"] == "2026-01-02T05:00:00"


def reused_setup(root: Path) -> tuple[Path, Path]:
    """Two folders whose job id is 1 (ids restarted): the old one's job is not Slurm's job 1."""
    old = folder(root, "mnist", job_id="1", created="2026-01-01T00:00:00", submitted="2026-01-01T00:00:01",
                 logs={"slurm-1.out": START.replace("job 9", "job 1"), "1-rank0.out": "old run\n"})
    new = folder(root, "dino/main_dino", job_id="1", created="2026-01-05T00:00:00", submitted="2026-01-05T00:00:02")
    return old, new


def test_list_and_status_show_a_reused_id_from_the_folder(fake_slurm: FakeSlurm, job_root: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    old, new = reused_setup(job_root)
    (old / "result.json").write_text("{}")
    fake_slurm.set({"squeue": {"stdout": squeue_line("1", "RUNNING", "dino/main_dino", "2026-01-05T00:00:01")},
                    "sacct": DISABLED, "sacct --completion": {"stdout": ""}})
    code, out, _ = run_cli(capsys, "list", "--json")
    rows = {r["job_dir"]: r for r in json.loads(out)}
    assert code == 0 and rows[str(new)]["state"] == "RUNNING" and rows[str(new)]["reused"] is None
    assert rows[str(old)]["state"] == "COMPLETED" and rows[str(old)]["reason"] == "job id reused"
    assert "dino/main_dino" in rows[str(old)]["reused"] and rows[str(old)]["source"] == "folder"
    code, out, _ = run_cli(capsys, "list")
    old_line = next(line for line in out.splitlines() if str(old) in line)
    assert "COMPLETED" in old_line and "job id reused" in old_line
    code, out, _ = run_cli(capsys, "status", str(old))
    assert code == 0 and "job id reused" in out and "RUNNING" not in out
    # the same name but another submit time: the id was reused by a resubmission of the same job
    fake_slurm.set({"squeue": {"stdout": squeue_line("1", "RUNNING", "mnist", "2026-01-09T00:00:00")},
                    "sacct": DISABLED, "sacct --completion": {"stdout": ""}})
    code, out, _ = run_cli(capsys, "status", str(old), "--json")
    assert json.loads(out)["reason"] == "job id reused" and "submitted at" in json.loads(out)["reused"]


def test_another_clusters_folder_is_not_given_this_clusters_state(fake_slurm: FakeSlurm, job_root: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    folder(job_root, "train", job_id="4", cluster="other", submitted="2026-01-02T03:04:07")
    fake_slurm.set({"squeue": {"stdout": squeue_line("4", "RUNNING", "train")}, "sacct": DISABLED,
                    "sacct --completion": {"stdout": ""}})
    code, out, _ = run_cli(capsys, "list", "--json")  # ./cluster.yaml is cluster "t"
    [row] = json.loads(out)
    assert code == 0
    assert row["state"] == "UNKNOWN" and row["reason"] == "job id reused" and "cluster other" in row["reused"]


def test_cancel_refuses_a_reused_id(fake_slurm: FakeSlurm, job_root: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    old, _ = reused_setup(job_root)
    fake_slurm.set({"squeue": {"stdout": squeue_line("1", "RUNNING", "dino/main_dino", "2026-01-05T00:00:01")},
                    "scancel": {"stdout": ""}})
    code, out, err = run_cli(capsys, "cancel", str(old))
    assert code == 2 and out == "" and "job id 1 was reused" in err and "nothing was cancelled" in err
    assert "HINT:" in err and not [c for c in fake_slurm.calls() if c[0] == "scancel"]
    code, out, err = run_cli(capsys, "cancel", "1")  # the id: the newest folder, whose job it is
    assert (code, out) == (0, "cancelled 1\n"), err
    assert [c for c in fake_slurm.calls() if c[0] == "scancel"] == [["scancel", "1"]]


def test_logs_follow_stops_when_the_id_was_reused(fake_slurm: FakeSlurm, job_root: Path,
                                                  capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.commands import logs

    monkeypatch.setattr(logs, "STATE_EVERY", 0.05)
    old, _ = reused_setup(job_root)
    fake_slurm.set({"squeue": {"stdout": squeue_line("1", "RUNNING", "dino/main_dino", "2026-01-05T00:00:01")}})
    code, out, err = run_cli(capsys, "logs", str(old), "-f", "--interval", "0.02")
    assert code == 0 and "old run\n" in out and "job id 1 was reused" in err



def test_the_index_prefers_the_folder_of_the_cluster_in_use(fake_slurm: FakeSlurm, job_root: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    ours = folder(tmp_path / "root-t", "train", job_id="8", cluster="t", submitted="2026-01-02T03:04:07",
                  logs={"8-rank0.out": "cluster t\n"})
    folder(tmp_path / "root-other", "train", job_id="8", cluster="other", created="2026-01-03T00:00:00",
           submitted="2026-01-03T00:00:02", logs={"8-rank0.out": "cluster other\n"})  # newer, another cluster
    assert run_cli(capsys, "logs", "8") == (0, "cluster t\n", "")  # ./cluster.yaml is cluster "t"
    (tmp_path / "cluster.yaml").unlink()
    assert run_cli(capsys, "logs", "8") == (0, "cluster other\n", "")  # no cluster in use: the newest
    shutil.rmtree(tmp_path / "root-other")  # a folder that is gone: the next record
    assert run_cli(capsys, "logs", "8")[1] == "cluster t\n" and ours.is_dir()
