"""``orch submit`` through ``cli.main`` and the installed ``orch``: dry run (text and JSON), real
submission with a stub sbatch, Slurm refusing, bad input (exit 2, field + fix, sbatch never called),
and no torch on the CLI path."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support import ROOT

from orchestrator.cli import main
from orchestrator.slurm.plan import DRY_RUN_JOB_ID

if TYPE_CHECKING:
    from support import Stubs

ORCH = str(Path(sys.executable).parent / "orch")
Capsys = pytest.CaptureFixture[str]
RANK_KEYS = ["rank", "local_rank", "node_rank", "host", "world_size", "local_world_size", "master_addr",
             "master_port", "devices"]


@pytest.fixture
def env(clean_env: pytest.MonkeyPatch, stubs: Stubs, write_cluster: Callable[..., Path],
        write_job: Callable[..., Path], tmp_path: Path) -> dict[str, Any]:
    """A clean environment, stubs on PATH, ORCH_CLUSTER set, a job file; returns the pieces."""
    cluster = write_cluster()
    clean_env.setenv("ORCH_CLUSTER", str(cluster))
    return {"cluster": cluster, "job": str(write_job()), "jobs": tmp_path / "jobs", "stubs": stubs}


def run_main(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def folders(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.exists() else []  # .snapshots


def test_dry_run_prints_script_and_every_rank(env: dict[str, Any], capsys: Capsys) -> None:
    code, out, err = run_main(capsys, "submit", env["job"], "--nodes", "2", "--gpus", "8", "--dry-run")
    assert code == 0, err
    script, _, table = out.partition("\n# 16 ranks: 2 node(s) x 8 task(s)")
    assert script.startswith("#!/bin/bash\n") and "#SBATCH --nodes=2\n" in script
    lines = table.strip().splitlines()
    assert "MASTER_ADDR is the NodeAddr of gpu001" in lines[1]
    assert lines[2].split() == ["HOST", "RANK", "LOCAL_RANK", "NODE_RANK", "DEVICE", "MASTER"]
    rows = [line.split() for line in lines[3:]]
    assert len(rows) == 16
    assert rows[0][:5] == ["gpu001", "0", "0", "0", "cuda:0"]
    assert rows[15][:5] == ["gpu002", "15", "7", "1", "cuda:7"]
    assert {r[5] for r in rows} == {rows[0][5]} and rows[0][5].startswith("gpu001:")
    assert folders(env["jobs"]) == []  # a dry run writes nothing
    assert env["stubs"].records() == []  # and runs nothing


def test_dry_run_json(env: dict[str, Any], capsys: Capsys) -> None:
    code, out, _ = run_main(capsys, "submit", env["job"], "--nodes", "2", "--gpus", "8", "--dry-run",
                            "--json")
    assert code == 0
    data = json.loads(out)
    assert data["script"].startswith("#!/bin/bash\n")
    assert data["assumed_job_id"] == DRY_RUN_JOB_ID
    assert [list(r) for r in data["ranks"]] == [RANK_KEYS] * 16
    assert data["ranks"][9] == {"rank": 9, "local_rank": 1, "node_rank": 1, "host": "gpu002",
                                "world_size": 16, "local_world_size": 8, "master_addr": "gpu001",
                                "master_port": data["ranks"][0]["master_port"], "devices": [1]}
    assert folders(env["jobs"]) == []


def test_dry_run_never_starts_a_subprocess(env: dict[str, Any], capsys: Capsys,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the dry run started a subprocess")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    code, _, err = run_main(capsys, "submit", env["job"], "--nodes", "2", "--gpus", "8", "--dry-run", "--no-snapshot")
    assert code == 0, err


def test_dry_run_starts_only_the_snapshots_git_listing(env: dict[str, Any], capsys: Capsys,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """With a code snapshot, the dry run asks git what the submit would copy (docs/snapshots.md), read-only."""
    started: list[list[str]] = []
    real = subprocess.Popen.__init__

    def only_git(self: subprocess.Popen[bytes], args: list[str], *rest: Any, **kwargs: Any) -> None:
        if args[:1] != ["git"] or args[1] not in ("rev-parse", "ls-files", "diff-index", "--version"):
            raise AssertionError(f"the dry run started {args}")
        started.append(args)
        real(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", only_git)
    code, out, err = run_main(capsys, "submit", env["job"], "--nodes", "2", "--gpus", "8", "--dry-run")
    assert code == 0, err
    assert started and "# code snapshot: " in out


def test_overrides_may_follow_options(env: dict[str, Any], capsys: Capsys) -> None:
    code, out, err = run_main(capsys, "submit", env["job"], "--nodes", "1", "lr=0.5", "--gpus", "2",
                              "width=3", "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["ranks"][1]["world_size"] == 2
    code, _, err = run_main(capsys, "submit", env["job"], "--dry-run", "--bogus")
    assert code == 2 and "unrecognized arguments: --bogus" in err


def test_submit_writes_the_folder_and_queues(env: dict[str, Any], capsys: Capsys) -> None:
    code, out, err = run_main(capsys, "submit", env["job"], "--nodes", "2", "--gpus", "4",
                              "--job-name", "my run", "lr=0.25")
    assert code == 0, err
    [job_dir] = folders(env["jobs"])
    assert out == f"submitted job 4242\njob folder: {job_dir}\n"
    assert (job_dir / "job_id").read_text(encoding="utf-8") == "4242\n"
    assert json.loads((job_dir / "job.json").read_text(encoding="utf-8"))["params"]["lr"] == 0.25
    [call] = env["stubs"].records("sbatch")
    assert call["argv"] == ["--parsable", f"--comment=orch:{job_dir.name}", str(job_dir / "sbatch.sh")]
    assert call["script"] == (job_dir / "sbatch.sh").read_text(encoding="utf-8")
    assert "--job-name=my run" in call["sbatch_options"]
    assert (job_dir / "logs").is_dir()


@pytest.mark.parametrize(("flags", "expected"), [
    ([], "warn"), (["--strict-world"], "strict"), (["--independent-ranks"], "independent")])
def test_the_world_check_flags_land_in_job_json(env: dict[str, Any], capsys: Capsys, flags: list[str],
                                                expected: str) -> None:
    code, _, err = run_main(capsys, "submit", env["job"], *flags)
    assert code == 0, err
    [job_dir] = folders(env["jobs"])
    assert json.loads((job_dir / "job.json").read_text(encoding="utf-8"))["launcher"]["world_check"] == expected


@pytest.mark.parametrize(("flags", "expected"), [([], 30), (["--collective-timeout", "7"], 7)])
def test_the_collective_timeout_lands_in_job_json(env: dict[str, Any], capsys: Capsys, flags: list[str],
                                                  expected: int) -> None:
    code, _, err = run_main(capsys, "submit", env["job"], *flags)
    assert code == 0, err
    [job_dir] = folders(env["jobs"])
    assert json.loads((job_dir / "job.json").read_text(encoding="utf-8"))["launcher"]["collective_timeout"] == expected


def test_a_collective_timeout_below_its_bound_is_refused_by_its_flag(env: dict[str, Any], capsys: Capsys) -> None:
    code, _, err = run_main(capsys, "submit", env["job"], "--collective-timeout", "1", "--dry-run")
    assert code == 2 and "--collective-timeout" in err and "HINT" in err


def test_the_world_check_flags_exclude_each_other(env: dict[str, Any], capsys: Capsys) -> None:
    code, _, err = run_main(capsys, "submit", env["job"], "--strict-world", "--independent-ranks", "--dry-run")
    assert code == 2 and "not allowed with argument" in err


def test_submit_json(env: dict[str, Any], capsys: Capsys,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH_STUB_SBATCH_STDOUT", "99;othercluster")
    code, out, _ = run_main(capsys, "submit", env["job"], "--json")
    assert code == 0
    [job_dir] = folders(env["jobs"])
    assert json.loads(out) == {"job_id": "99", "job_dir": str(job_dir)}


def test_sbatch_refusal_is_shown_and_recorded(env: dict[str, Any], capsys: Capsys,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    slurm_says = ("sbatch: error: Batch job submission failed: "
                  "Invalid account or account/partition combination specified")
    monkeypatch.setenv("ORCH_STUB_SBATCH_RC", "1")
    monkeypatch.setenv("ORCH_STUB_SBATCH_STDOUT", "")
    monkeypatch.setenv("ORCH_STUB_SBATCH_STDERR", slurm_says)
    code, out, err = run_main(capsys, "submit", env["job"], "--account", "nope")
    assert code == 1 and out == ""
    assert slurm_says in err and "Traceback" not in err
    [job_dir] = folders(env["jobs"])
    assert "not queued" in err and str(job_dir) in err
    assert slurm_says in (job_dir / "submit_error.txt").read_text(encoding="utf-8")
    assert not (job_dir / "job_id").exists()


def test_sbatch_missing_is_one_line_with_the_fix(env: dict[str, Any], capsys: Capsys,
                                                 monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, _, err = run_main(capsys, "submit", env["job"])
    assert code == 1
    assert "orch: error: sbatch not found" in err and "HINT: run orch on a Slurm login node" in err
    [job_dir] = folders(env["jobs"])
    assert "sbatch not found" in (job_dir / "submit_error.txt").read_text(encoding="utf-8")


def test_a_job_that_needs_data_needs_a_data_dir(env: dict[str, Any], capsys: Capsys,
                                                tmp_path: Path) -> None:
    job = Path(env["job"])
    job.write_text(job.read_text(encoding="utf-8").replace("build=build,", "build=build, needs_data=True,"),
                   encoding="utf-8")
    code, out, _ = run_main(capsys, "submit", str(job), "--dry-run")
    assert code == 0 and "needs a data directory" in out  # the dry run says so
    code, _, err = run_main(capsys, "submit", str(job))
    assert code == 2 and "needs a data directory" in err and "--data-dir" in err
    code, _, err = run_main(capsys, "submit", str(job), "--data-dir", str(tmp_path / "missing"))
    assert code == 2 and "does not exist" in err
    assert env["stubs"].records() == [] and folders(env["jobs"]) == []
    code, _, err = run_main(capsys, "submit", str(job), "--data-dir", str(tmp_path))
    assert code == 0, err
    [job_dir] = folders(env["jobs"])
    assert json.loads((job_dir / "job.json").read_text(encoding="utf-8"))["data_dir"] == str(tmp_path)


BAD_CLUSTER_UNKNOWN_KEY = {"launcher": {"job_root": "/tmp/x", "colour": "blue"}}
BAD_CLUSTER_HOSTLIST = {"partitions": [{"name": "gpu", "nodes": "gpu[001-", "gpus_per_node": 8,
                                        "cpus_per_node": 8, "mem_per_node": "1G"}]}


@pytest.mark.parametrize(("argv", "cluster", "expected"), [
    (["--nodes", "65"], None, "--nodes 65 exceeds the 64 node(s) of partition gpu"),
    (["--gpus", "9"], None, "--gpus 9 exceeds gpus_per_node=8"),
    (["--time", "1:2:3:4"], None, "--time: invalid time"),
    (["--time", "3-00:00:00"], None, "exceeds max_time=2-00:00:00"),
    (["--partition", "nope"], None, "unknown partition 'nope'"),
    (["--partition", "cpu", "--gpus", "0"], None, "use --ntasks-per-node"),
    (["nope=1"], None, "unknown override 'nope'"),
    (["lr=fast"], None, "override lr=fast"),
    (["lr"], None, "override 'lr' is not key=value"),
    (["--job-name", "two\nlines"], None, "contains a newline"),
    (["--nodes", "two"], None, "invalid int value: 'two'"),
    (["--nodes", "0"], None, "--nodes 0"),
    ([], BAD_CLUSTER_UNKNOWN_KEY, "launcher.colour"),
    ([], BAD_CLUSTER_HOSTLIST, "gpu[001-"),
    ([], {"env": {"BAD NAME": "x"}}, "not a valid environment variable name"),
])
def test_bad_input_exits_2_and_never_calls_sbatch(env: dict[str, Any], capsys: Capsys,
                                                  write_cluster: Callable[..., Path], argv: list[str],
                                                  cluster: dict[str, Any] | None, expected: str) -> None:
    cluster_args = ["--cluster", str(write_cluster(name="bad.yaml", **cluster))] if cluster else []
    for dry in ([], ["--dry-run"]):
        code, out, err = run_main(capsys, "submit", env["job"], *argv, *cluster_args, *dry)
        assert code == 2, (out, err)
        assert expected in err and "HINT: " in err and "Traceback" not in err
    assert env["stubs"].records() == []
    assert folders(env["jobs"]) == []


def test_unknown_job_names_the_known_ones(env: dict[str, Any], capsys: Capsys) -> None:
    code, _, err = run_main(capsys, "submit", "no-such-job", "--dry-run")
    assert code == 2 and "unknown job 'no-such-job'" in err and "HINT: use one of:" in err
    assert env["stubs"].records() == []


def test_templates_flag(env: dict[str, Any], capsys: Capsys, tmp_path: Path) -> None:
    user = tmp_path / "tpl"
    user.mkdir()
    (user / "single_node.sbatch.j2").write_text(
        '{% extends "base.sbatch.j2" %}\n{% block master_addr %}\nMASTER_ADDR=localhost\n{% endblock %}\n',
        encoding="utf-8")
    code, out, err = run_main(capsys, "submit", env["job"], "--nodes", "1", "--templates", str(user),
                              "--dry-run")
    assert code == 0, err
    assert "\nMASTER_ADDR=localhost\n" in out
    assert f"# template single_node.sbatch.j2: {user / 'single_node.sbatch.j2'}" in out
    code, _, err = run_main(capsys, "submit", env["job"], "--templates", str(tmp_path / "none"), "--dry-run")
    assert code == 2 and "is not a directory" in err


# --- the installed console script, in fresh interpreters -------------------------------------

def run_orch(*argv: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
                          check=False)


def test_installed_orch_dry_run_and_submit(stubs: Stubs, write_cluster: Callable[..., Path],
                                           write_job: Callable[..., Path], tmp_path: Path) -> None:
    environ = stubs.env(ORCH_CLUSTER=str(write_cluster()))
    job = str(write_job())
    proc = run_orch("submit", job, "--nodes", "2", "--gpus", "8", "--dry-run", "--json", env=environ,
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["ranks"]) == 16
    proc = run_orch("submit", job, "--nodes", "2", "--gpus", "8", "--json", env=environ, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["job_id"] == "4242"
    proc = run_orch("submit", job, "--gpus", "9", env=environ, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("orch: error: --gpus 9 exceeds gpus_per_node=8 of partition gpu\nHINT: ")
    assert len(stubs.records("sbatch")) == 1


NO_TORCH_PROBE = """
import sys
from orchestrator.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "torchvision", "numpy"))
print("HEAVY:" + ",".join(heavy), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize("job", ["mnist", "smoke"])
def test_cli_path_never_imports_torch(job: str, write_cluster: Callable[..., Path], tmp_path: Path,
                                      stubs: Stubs) -> None:
    if not (ROOT / "jobs" / f"{job}.py").exists():
        pytest.fail(f"jobs/{job}.py is missing (the entrypoint issue adds it)")
    environ = stubs.env(ORCH_CLUSTER=str(write_cluster()))
    for extra in (["--dry-run"], []):
        argv = ["submit", job, "--nodes", "2", "--gpus", "8", "--data-dir", str(tmp_path), *extra]
        proc = subprocess.run([sys.executable, "-c", NO_TORCH_PROBE, *argv], capture_output=True, text=True,
                              env=environ, cwd=tmp_path, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        assert "HEAVY:\n" in proc.stderr, proc.stderr


@pytest.mark.parametrize("job", ["mnist", "smoke"])
def test_shipped_jobs_dry_run_2x8_with_the_shipped_cluster(job: str, capsys: Capsys,
                                                           clean_env: pytest.MonkeyPatch) -> None:
    code, out, err = run_main(capsys, "submit", job, "--nodes", "2", "--gpus", "8", "--dry-run", "--json",
                              "--cluster", str(ROOT / "cluster.yaml"))
    assert code == 0, err
    data = json.loads(out)
    assert len(data["ranks"]) == 16 and f"#SBATCH --job-name={job}\n" in data["script"]
