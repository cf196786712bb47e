"""Framework scripts form one world under ``orch run --nproc 2`` on CPUs (orchestrator/task/scriptenv.py):
an Accelerate script (``Accelerator()`` + ``prepare``) and an HF ``Trainer`` script, unmodified, end with
the same parameters on every rank, and the same as under ``torchrun`` with what ``accelerate launch --cpu``
sets (its multi-process CPU runs go through mpirun; torchrun is the launcher that starts 2 processes here).
Each rank's record says the world it was in (the framework's own world size: 1 where a rank trains alone)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, ROOT, aborted_in_teardown, clean_environ, once_more_on_teardown_abort

from orchestrator.local.rankenv import free_port

pytestmark = pytest.mark.slow

SCRIPTS = ROOT / "tests" / "scripts"
TIMEOUT = 240
# what `accelerate launch --cpu` exports (accelerate/utils/launch.py), written out here, not taken from orch
ACCELERATE_CPU = {"ACCELERATE_USE_CPU": "True", "KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"}
FRAMEWORKS = [("accelerate_train.py", "accelerate"), ("hf_trainer_train.py", "transformers")]


def _env(**extra: str) -> dict[str, str]:
    env = clean_environ(PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="", **extra)
    env.pop("OMP_NUM_THREADS", None)
    return env


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads((out / f"rank{r}.json").read_text(encoding="utf-8")) for r in range(2)]


def _torchrun(script: Path, out: Path, cwd: Path, **extra: str) -> list[dict[str, Any]]:
    # plain torchrun aborts now and then in gloo's teardown under load (the shared rule: again); an abort
    # after every rank wrote its record (the script's last act before end_training) still gave the result
    proc = once_more_on_teardown_abort(lambda: subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
         "--master-port", str(free_port()), str(script), "--out", str(out)], cwd=cwd, env=_env(**extra),
        capture_output=True, text=True, errors="replace", timeout=TIMEOUT, check=False))
    records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(out.glob("rank*.json"))]
    assert proc.returncode == 0 or (aborted_in_teardown(proc) and records), proc.stderr[-3000:]
    return records


@pytest.mark.parametrize(("script", "package"), FRAMEWORKS)
def test_framework_script_is_one_world_under_orch_run_cpu(tmp_path: Path, script: str, package: str) -> None:
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed (pip install -e '.[frameworks]')")
    path = SCRIPTS / script
    reference = _torchrun(path, tmp_path / "reference", tmp_path, **ACCELERATE_CPU)
    assert [r["world_size"] for r in reference] == [2, 2]
    proc = subprocess.run([ORCH, "run", str(path), "--nproc", "2", "--cpu", "--job-root", str(tmp_path / "jobs"),
                           "--", "--out", str(tmp_path / "orch")], cwd=tmp_path, env=_env(), capture_output=True,
                          timeout=TIMEOUT, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    assert b"never formed" not in proc.stderr  # the world check saw one world of 2
    ours = _records(tmp_path / "orch")
    assert [(r["rank"], r["world_size"]) for r in ours] == [(0, 2), (1, 2)]
    assert ours[0]["checksum"] == ours[1]["checksum"] == reference[0]["checksum"] == reference[1]["checksum"]
