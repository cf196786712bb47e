"""A Lightning script under ``orch run`` for real (orchestrator/spec/framework.py at local/plan.py): a literal
layout that matches ``--nproc`` trains as one world, every rank ending with the parameters torchrun gives the same
unmodified script; one that cannot match, or a spawning strategy, is refused before a process starts."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import ORCH, ROOT, assert_refused, clean_environ, once_more_on_teardown_abort

from orchestrator.local.rankenv import free_port

# find_spec, not importorskip: importing lightning at collection costs each test worker seconds; the runs import it
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("lightning") is None, reason="lightning is not installed")]

SCRIPT = ROOT / "tests" / "scripts" / "lightning_layout.py"
TIMEOUT = 240


def _env() -> dict[str, str]:
    env = clean_environ(PYTHONPATH=str(ROOT))
    env.pop("OMP_NUM_THREADS", None)
    return env


def _orch_run(cwd: Path, script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, "run", str(script), *args], cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)


def _checksums(out: Path) -> list[str]:
    return [(out / f"rank{r}.txt").read_text(encoding="utf-8").strip() for r in range(2)]


def test_a_matching_layout_trains_as_one_world_as_under_torchrun(tmp_path: Path) -> None:
    ref = once_more_on_teardown_abort(lambda: subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(free_port()),
         str(SCRIPT), "--out", str(tmp_path / "ref")], env=_env(), capture_output=True, text=True, timeout=TIMEOUT,
        check=False, cwd=tmp_path))
    assert ref.returncode == 0, ref.stderr
    proc = _orch_run(tmp_path, SCRIPT, "--nproc", "2", "--job-root", str(tmp_path / "jobs"), "--",
                     "--out", str(tmp_path / "ours"))
    assert proc.returncode == 0, proc.stderr
    ours, theirs = _checksums(tmp_path / "ours"), _checksums(tmp_path / "ref")
    assert ours[0] == ours[1] and ours[0].startswith("2 ")  # one world of 2: DDP kept the ranks equal
    assert ours == theirs  # the same world trained the same steps as torchrun's
    [job_dir] = [p for p in (tmp_path / "jobs").iterdir() if (p / "job.json").is_file()]
    [framework] = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))["script"]["frameworks"]
    assert (framework["name"], framework["environment"]) == ("lightning", "TorchElasticEnvironment")
    assert framework["layouts"][0]["devices"] == 2


def test_a_layout_that_cannot_match_nproc_is_refused(tmp_path: Path) -> None:
    proc = _orch_run(tmp_path, SCRIPT, "--nproc", "3", "--job-root", str(tmp_path / "jobs"), "--", "--out", "x")
    assert_refused(proc, "lightning_layout.py:43: trainer = L.Trainer(accelerator=\"cpu\", devices=2, num_nodes=1",
                   "asks for 1 node(s) x 2 process(es), but orch run starts 1 node(s) x 3 rank(s)",
                   "run it with --nproc 2, or change the script: Trainer(devices=3, num_nodes=1)")
    assert not (tmp_path / "jobs").exists() and not (tmp_path / "x").exists()


@pytest.mark.parametrize(("text", "said"), [
    ('strategy="ddp"', 'strategy="ddp_spawn"'),
    ("num_nodes=1", "num_nodes=2")])
def test_a_spawning_strategy_or_more_nodes_is_refused(tmp_path: Path, text: str, said: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.read_text(encoding="utf-8").replace(text, said), encoding="utf-8")
    proc = _orch_run(tmp_path, script, "--nproc", "2", "--job-root", str(tmp_path / "jobs"), "--", "--out", "x")
    fix = ('use Trainer(strategy="ddp")' if "spawn" in said else
           "orch run starts one node: submit it with orch submit --nodes 2")
    assert_refused(proc, fix)
    assert not (tmp_path / "jobs").exists()
