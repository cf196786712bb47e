"""orch doctor in front of a launch: ``orch submit train.py`` and ``orch run train.py`` check the script
first; errors stop them (nothing submitted, no job folder) unless ``--no-check`` (then the doctor does not run);
the dry run shows the findings without refusing."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from support import ORCH, TEST_CLUSTER, TESTS, clean_environ

from orchestrator.cli import main
from orchestrator.doctor.findings import Finding

TIMEOUT = 180
BODY = '''import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    {loader}
    model = DDP(torch.nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        {set_epoch}
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''
BAD = BODY.format(loader="loader = DataLoader(data, batch_size=16, shuffle=True)", set_epoch="pass")
CLEAN = BODY.format(loader="loader = DataLoader(data, batch_size=16, sampler=DistributedSampler(data))",
                    set_epoch="loader.sampler.set_epoch(epoch)")


@pytest.fixture
def scripts(tmp_path: Path) -> tuple[Path, Path]:
    bad, clean = tmp_path / "bad_train.py", tmp_path / "clean_train.py"
    bad.write_text(BAD)
    clean.write_text(CLEAN)
    return bad, clean


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    data = json.loads(json.dumps(TEST_CLUSTER))
    data.setdefault("launcher", {})["job_root"] = str(tmp_path / "jobs")
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_submit_refuses_a_script_with_errors(scripts: tuple[Path, Path], cluster: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    bad, _ = scripts
    assert main(["submit", str(bad), "--cluster", str(cluster), "--nodes", "1", "--gpus", "2"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:11: DDP003 error" in err
    assert "orch: error: orch doctor found errors (DDP003)" in err and "nothing was launched" in err
    assert "--no-check" in err
    assert not (tmp_path / "jobs").exists()


def test_submit_dry_run_shows_the_findings_without_refusing(scripts: tuple[Path, Path], cluster: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    bad, clean = scripts
    assert main(["submit", str(bad), "--cluster", str(cluster), "--nodes", "1", "--gpus", "2", "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "DDP003 error" in captured.err and "#SBATCH" in captured.out and "DDP003" not in captured.out
    assert main(["submit", str(clean), "--cluster", str(cluster), "--nodes", "1", "--gpus", "2", "--dry-run"]) == 0
    assert capsys.readouterr().err == ""


def _orch_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, "run", *args, "--job-root", str(tmp_path / "runs")], cwd=tmp_path,
                          env=clean_environ(), capture_output=True, text=True, timeout=TIMEOUT, check=False)


def test_no_check_runs_no_rule_and_reads_the_style_from_the_facts(cluster: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """--no-check: the launch style still comes from the script (its facts), and no rule of the doctor runs."""
    from orchestrator.doctor import check

    ran: list[str] = []

    def rule(a: object) -> Iterator[Finding]:
        ran.append("rule")
        return iter(())

    monkeypatch.setattr(check, "RULES", (rule,))
    monkeypatch.setattr(check, "HELPER_RULES", (rule,))
    script = TESTS / "scripts" / "spawn_per_node.py"
    argv = ["submit", str(script), "--cluster", str(cluster), "--nodes", "1", "--gpus", "2", "--dry-run"]
    assert main([*argv, "--no-check", "--", "--out", "o"]) == 0
    captured = capsys.readouterr()
    assert "launch: per-node (detected: spawn_per_node.py:55: mp.spawn(" in captured.out
    assert ran == [] and "orch doctor" not in captured.err
    assert main([*argv, "--", "--out", "o"]) == 0  # without it, the rules run
    assert ran and "launch: per-node" in capsys.readouterr().out


@pytest.mark.slow
def test_run_refuses_errors_unless_no_check(scripts: tuple[Path, Path], tmp_path: Path) -> None:
    bad, clean = scripts
    refused = _orch_run(tmp_path, str(bad), "--nproc", "2")
    assert refused.returncode == 2 and "DDP003 error" in refused.stderr
    assert "nothing was launched" in refused.stderr and not (tmp_path / "runs").exists()
    # what launches, launches one rank: the doctor's gate is the same for any --nproc (a world of 1 is refused too)
    assert "DDP003 error" in _orch_run(tmp_path, str(bad), "--nproc", "1").stderr
    forced = _orch_run(tmp_path, str(bad), "--nproc", "1", "--no-check")
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert "DDP003" not in forced.stderr  # --no-check: the doctor does not run
    ok = _orch_run(tmp_path, str(clean), "--nproc", "1")
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert "orch doctor" not in ok.stderr
