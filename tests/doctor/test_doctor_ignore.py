"""The doctor's escape hatches through the real CLI: --ignore on orch doctor/submit/run, doctor.ignore in
cluster.yaml (validated), and the dry run's "would refuse" line and JSON findings."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from support import ORCH, TEST_CLUSTER, Stubs, clean_environ
from test_doctor_launch import BAD, CLEAN, TIMEOUT

from orchestrator.cli import main


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    path = tmp_path / "bad_train.py"
    path.write_text(BAD)
    return path


def _cluster(tmp_path: Path, ignore: list[str] | None = None) -> Path:
    data = json.loads(json.dumps(TEST_CLUSTER))
    data.setdefault("launcher", {})["job_root"] = str(tmp_path / "jobs")
    if ignore is not None:
        data["doctor"] = {"ignore": ignore}
    path = tmp_path / f"cluster-{len(ignore or [])}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _submit(script: Path, cluster: Path, *extra: str) -> list[str]:
    return ["submit", str(script), "--cluster", str(cluster), "--nodes", "1", "--gpus", "2", *extra]


def test_doctor_ignore_flag_and_cluster_setting(bad: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", str(bad)]) == 1
    assert "DDP003 error" in capsys.readouterr().out
    assert main(["doctor", str(bad), "--ignore", "ddp003,DDP004"]) == 0
    assert capsys.readouterr().out.strip() == "orch doctor: no findings"
    assert main(["doctor", "--json", str(bad), "--cluster", str(_cluster(tmp_path, ["DDP003"]))]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_an_unknown_code_is_refused_with_a_hint(bad: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", str(bad), "--ignore", "DDP099"]) == 2
    err = capsys.readouterr().err
    assert "orch: error: --ignore: unknown orch doctor code 'DDP099'" in err and "HINT:" in err
    assert main(_submit(bad, _cluster(tmp_path, ["DDP3"]), "--dry-run")) == 2
    err = capsys.readouterr().err
    assert "doctor.ignore" in err and "unknown orch doctor code 'DDP3'" in err and "DDP001..DDP024" in err


def test_dry_run_says_the_submit_would_refuse_and_json_carries_the_findings(
        bad: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = _cluster(tmp_path)
    assert main(_submit(bad, cluster, "--dry-run")) == 0
    err = capsys.readouterr().err
    assert "orch submit would refuse this script: orch doctor found errors (DDP003)" in err
    assert "--ignore CODE" in err
    assert main(_submit(bad, cluster, "--dry-run", "--json")) == 0
    captured = capsys.readouterr()
    findings = json.loads(captured.out)["findings"]
    assert [(f["code"], f["severity"], f["line"]) for f in findings] == [("DDP003", "error", 11)]
    assert set(findings[0]) == {"code", "severity", "confidence", "file", "line", "message", "fix", "evidence"}
    assert findings[0]["confidence"] == "certain"
    assert findings[0]["file"] == str(bad)
    clean = tmp_path / "clean_train.py"
    clean.write_text(CLEAN)
    assert main(_submit(clean, cluster, "--dry-run", "--json")) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []


def test_submit_ignore_flag_and_cluster_setting_lift_the_refusal(bad: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    cluster = _cluster(tmp_path)
    assert main(_submit(bad, cluster)) == 2
    assert "orch doctor found errors (DDP003)" in capsys.readouterr().err
    assert main(_submit(bad, cluster, "--dry-run", "--ignore", "DDP003")) == 0
    err = capsys.readouterr().err
    assert "would refuse" not in err and "DDP003" not in err
    ignoring = _cluster(tmp_path, ["DDP003", "DDP004"])
    assert main(_submit(bad, ignoring, "--dry-run", "--json")) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and json.loads(captured.out)["findings"] == []
    # a real submit is no longer refused by the doctor (it goes on to sbatch: whatever happens there)
    main(_submit(bad, cluster, "--ignore", "DDP003"))
    assert "orch doctor found errors" not in capsys.readouterr().err


@pytest.mark.slow
def test_run_ignore_flag_and_cluster_setting(bad: Path, tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        # one rank: the doctor refuses a world of 1 as it does 2 (test_doctor_launch), so it is what lifts the refusal
        return subprocess.run([ORCH, "run", str(bad), "--nproc", "1", "--job-root", str(tmp_path / "runs"), *args],
                              cwd=tmp_path, env=clean_environ(), capture_output=True, text=True, timeout=TIMEOUT,
                              check=False)

    ok = run("--ignore", "DDP003")
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert "DDP003" not in ok.stderr and "orch doctor" not in ok.stderr
    by_cluster = run("--cluster", str(_cluster(tmp_path, ["DDP003"])))
    assert by_cluster.returncode == 0, by_cluster.stderr[-3000:]
    assert "DDP003" not in by_cluster.stderr


def test_a_module_of_the_working_directory_is_checked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "train.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    cluster = _cluster(tmp_path)
    assert main(["submit", "-m", "pkg.train", "--cluster", str(cluster), "--nodes", "1", "--gpus", "2"]) == 2
    assert "orch doctor found errors (DDP003)" in capsys.readouterr().err
    assert main(["submit", "-m", "pkg.train", "--cluster", str(cluster), "--nodes", "1", "--gpus", "2", "--dry-run",
                 "--json"]) == 0
    assert [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]] == ["DDP003"]
    # an installed module (not a file of this folder) is not checked
    assert main(["submit", "-m", "json.tool", "--cluster", str(cluster), "--nodes", "1", "--gpus", "2", "--dry-run",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []


def test_the_python_api_reads_doctor_ignore_too(bad: Path, tmp_path: Path, clean_env: pytest.MonkeyPatch,
                                               stubs: Stubs) -> None:
    """orchestrator.submit refuses the script as orch submit does, and cluster.yaml's doctor.ignore lifts
    the refusal there too (not only on the CLI)."""
    import orchestrator
    from orchestrator.doctor import ScriptRefused

    with pytest.raises(ScriptRefused):
        orchestrator.submit(bad, nodes=1, gpus=2, cluster=_cluster(tmp_path), executor="slurm")
    assert stubs.argvs("sbatch") == []
    handle = orchestrator.submit(bad, nodes=1, gpus=2, cluster=_cluster(tmp_path, ["DDP002", "DDP003"]),
                                 executor="slurm")
    assert handle.job_id and len(stubs.argvs("sbatch")) == 1
