"""The GPU checks' harness, on any machine (no ``gpu`` marker: these run in the CPU CI): the report rows and
table of scripts/gpu-check.sh, nvidia-smi's listing and the CUDA-context verdict, the process tree, the CPU
path of the suite (every ``gpu`` test skipped with its reason, each reported), and shellcheck on the script."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gpu_report import FAIL, OK, SKIPPED, add_phase, check_name, exit_status, format_table, main, new_row, read_rows
from gpu_support import GPU_DIR, context_problems, descendants, normalize_uuid, parse_compute_apps
from support import ROOT, clean_environ

GPU0 = "GPU-11111111-2222-3333-4444-555555555555"
GPU1 = "GPU-66666666-7777-8888-9999-000000000000"


def row(check: str, result: str, figure: str = "", seconds: float = 1.0, note: str = "") -> dict[str, object]:
    return {"check": check, "result": result, "figure": figure, "seconds": seconds, "note": note}


def test_phases_fold_into_one_row() -> None:
    r = new_row("tests/gpu/test_gpu_scripts.py::test_amp_script[bf16]")
    assert r["check"] == "amp_script[bf16]" and r["result"] == OK
    r = add_phase(r, when="setup", outcome="passed", duration=0.5)
    r = add_phase(r, when="call", outcome="passed", duration=2.25, figures=["bf16, 1 rank(s)"])
    r = add_phase(r, when="teardown", outcome="passed", duration=0.01)
    assert (r["result"], r["figure"], r["seconds"], r["note"]) == (OK, "bf16, 1 rank(s)", 2.76, "")
    skipped = add_phase(new_row("x::test_y"), when="setup", outcome="skipped", duration=0, message="no CUDA device")
    assert (skipped["result"], skipped["note"]) == (SKIPPED, "no CUDA device")
    failed = add_phase(new_row("x::test_y"), when="call", outcome="failed", duration=3,
                       message="def test():\n>       assert 1 == 2\nE       assert 1 == 2\n\nx.py:3: AssertionError")
    assert (failed["result"], failed["note"]) == (FAIL, "assert 1 == 2")
    # a teardown error after a failure keeps the first reason; after a skip, it fails the check
    assert add_phase(failed, when="teardown", outcome="failed", duration=0, message="E boom")["note"] == "assert 1 == 2"
    assert add_phase(skipped, when="teardown", outcome="failed", duration=0, message="E boom")["result"] == FAIL
    assert check_name("a.py::plain") == "plain"


def test_table_is_markdown_in_check_order_with_the_reasons() -> None:
    rows = [row("framework_lightning", SKIPPED, note="Lightning is not installed"),
            row("mnist_cuda_nccl", OK, "51,234 samples/s | 1 rank", 9.04),
            row("selftest_nccl_allreduce", FAIL, note="assert 'failed' == 'passed'")]
    text = format_table(rows)
    lines = text.splitlines()
    assert lines[:2] == ["| check | result | figure | seconds |", "| --- | --- | --- | ---: |"]
    assert lines[2].startswith("| selftest_nccl_allreduce | FAIL | - |")
    assert lines[3] == "| mnist_cuda_nccl | ok | 51,234 samples/s / 1 rank | 9.0 |"  # no | inside a cell
    assert "- framework_lightning (skipped): Lightning is not installed" in lines
    assert lines[-1] == "1 ok, 1 failed, 1 skipped"
    assert exit_status(rows) == 1 and exit_status(rows[:2]) == 0 and exit_status([]) == 1


def test_report_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "report.jsonl"
    assert main([str(path)]) == 1 and "no GPU check reported anything" in capsys.readouterr().out
    path.write_text('{"check": "amp_script[fp16]", "result": "ok", "figure": "fp16", "seconds": 2, "note": ""}\n')
    assert main([str(path)]) == 0 and "| amp_script[fp16] | ok | fp16 | 2.0 |" in capsys.readouterr().out
    assert main([]) == 2


def test_nvidia_smi_listing() -> None:
    text = f"1234, {GPU0}\n5678, {GPU1}\n\nNo running processes found\n"
    assert parse_compute_apps(text) == [(1234, normalize_uuid(GPU0)), (5678, normalize_uuid(GPU1))]
    assert normalize_uuid(GPU0) == normalize_uuid(GPU0[len("GPU-"):]) == GPU0[len("GPU-"):].lower()


def test_context_verdict_catches_the_classic_bug() -> None:
    """Every rank also holding a context on GPU 0 (torch.cuda touched before set_device) is named; so are the
    launcher holding one, and a rank holding none on its own GPU."""
    own = {10: GPU0, 11: GPU1}
    ours = {9, 10, 11}
    assert context_problems([(10, GPU0), (11, GPU1), (99, GPU0)], ours, own) == []  # 99: someone else's
    classic = context_problems([(10, GPU0), (11, GPU0), (11, GPU1)], ours, own)
    assert classic == [f"rank process 11 (GPU {normalize_uuid(GPU1)}) also holds a CUDA context on GPU "
                       f"{normalize_uuid(GPU0)}"]
    launcher = context_problems([(9, GPU0), (10, GPU0), (11, GPU1)], ours, own)
    assert launcher == [f"process 9 of the run is no rank but holds a CUDA context on GPU {normalize_uuid(GPU0)}"]
    missing = context_problems([(10, GPU0)], ours, own)
    assert missing == [f"rank process 11 holds no CUDA context on its GPU {normalize_uuid(GPU1)}"]


def test_process_tree() -> None:
    with subprocess.Popen([sys.executable, "-c", "import subprocess, sys; "
                           "subprocess.run([sys.executable, '-c', 'import time; time.sleep(30)'])"]) as proc:
        try:
            for _ in range(100):
                tree = descendants(proc.pid)
                if len(tree) >= 2:
                    break
                subprocess.run(["sleep", "0.1"], check=True)
            assert proc.pid in tree and len(tree) >= 2, tree
            assert descendants(1) >= tree
        finally:
            for pid in sorted(tree - {proc.pid}):
                subprocess.run(["kill", str(pid)], check=False)
            proc.kill()


@pytest.mark.slow
def test_without_cuda_every_gpu_test_skips_with_its_reason(tmp_path: Path) -> None:
    """The CPU CI's path: ``pytest tests/gpu -m gpu`` exits 0, every test skipped, every row in the report
    with its reason (the GPU machine's path differs only in what the tests find)."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the gpu tests would run, not skip")
    report = tmp_path / "report.jsonl"
    proc = subprocess.run([sys.executable, "-m", "pytest", str(GPU_DIR), "-m", "gpu", "-q", "-rs",
                           "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=clean_environ(ORCH_GPU_REPORT=str(report)), check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = read_rows(report)
    assert len(rows) >= 9 and all(r["result"] == SKIPPED and r["note"] for r in rows), rows
    assert any("no CUDA device" in r["note"] for r in rows)
    assert exit_status(rows) == 0 and "0 ok, 0 failed" in format_table(rows)


@pytest.mark.skipif(shutil.which("shellcheck") is None,
                    reason="shellcheck is not installed (apt-get install shellcheck)")
@pytest.mark.parametrize("script", ["gpu-check.sh", "offline-venv.sh"])
def test_gpu_scripts_are_shellcheck_clean(script: str) -> None:
    proc = subprocess.run(["shellcheck", str(ROOT / "scripts" / script)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout


def test_offline_venv_builds_an_environment_over_a_python_that_has_torch(tmp_path: Path) -> None:
    """scripts/offline-venv.sh with this interpreter as the machine's Python (it has torch) and no package index: the
    new environment sees torch through its .pth file, gets orch from the checkout, runs ``orch --version``, and is
    marked so that gpu-check.sh skips scripts/setup.sh. A folder with no wheel is refused, with the reason."""
    venv = tmp_path / "venv"
    env = clean_environ(ORCH_VENV=str(venv), PYTHON=sys.executable, PIP_NO_INDEX="1")
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "offline-venv.sh")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "orch offline-venv: ready" in proc.stdout and (venv / ".orch-offline").is_file()
    probe = "import orchestrator, torch; print(orchestrator.__file__)"
    check = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, timeout=120,
                           check=False)
    assert check.returncode == 0 and check.stdout.startswith(str(ROOT)), check.stderr[-2000:]
    (tmp_path / "empty").mkdir()
    refused = subprocess.run(["bash", str(ROOT / "scripts" / "offline-venv.sh"), str(tmp_path / "empty")],
                             cwd=tmp_path, env=clean_environ(ORCH_VENV=str(tmp_path / "v2"), PYTHON=sys.executable),
                             capture_output=True, text=True, timeout=240, check=False)
    assert refused.returncode == 2 and "no .whl file in" in refused.stderr, refused.stderr[-2000:]
