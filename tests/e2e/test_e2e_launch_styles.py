"""Each launch style on the local Slurm cluster, as the user: a script written for
``torch.distributed.launch``, one that spawns its own ranks per node (the seed wiki's form) and one that
reads srun's variables, each submitted unmodified with ``--nodes 2 --gpus 2`` (4 gloo ranks), and each
rank's parameters compared with one reference world of 4 on this machine: four processes of the srun script with
srun's variables for 2 nodes x 2 tasks. The three scripts train the same model on the same data (tests/scripts:
``ddp_model.make_model(seed=1 + rank)``, the generator seeded ``100 + rank``, 3 SGD steps), so the same world of 4
gives each of them these parameters; that each style's own launcher (``torch.distributed.launch``, the script's
spawn started by hand per node, srun's variables) gives what ``orch run`` gives is proven style by style in the first
pass (tests/local/test_runner_launch_styles.py). One reference world instead of three: 12 -> 4 local rank starts."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support import TEARDOWN_ABORT

from orchestrator.env.taskenv import simulate_slurm_task_envs
from orchestrator.local.rankenv import free_port

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "tests" / "scripts"
WORLD = 4
TIMEOUT = 240


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads((out / f"rank{r}.json").read_text(encoding="utf-8")) for r in range(WORLD)]


def _wait_all(start: Callable[[], list[subprocess.Popen[str]]]) -> None:
    """Start the processes and wait for them; once more when one aborted in interpreter teardown after training
    (SIGABRT, "terminate called without an active exception"): torch's gloo threads do that now and then under
    load, with or without orch (tests/local/test_runner_launch_styles.py does the same)."""
    for last in (False, True):
        ended = [(proc, proc.communicate(timeout=TIMEOUT)[1]) for proc in start()]
        failed = [(proc.returncode, err) for proc, err in ended if proc.returncode != 0]
        if not failed or last or not any("SIGABRT" in err or code == -6 for code, err in failed):
            break
    for code, err in failed:
        assert code == 0, err


def _reference(tmp: Path) -> Path:
    """One world of 4 on this machine: the srun script's four processes with srun's variables (2 nodes x 2 tasks)."""
    out = tmp / "reference"
    envs = simulate_slurm_task_envs(["node1", "node2"], 2, "4242", 0, "127.0.0.1", free_port())
    _wait_all(lambda: [subprocess.Popen([sys.executable, str(SCRIPTS / "slurm_native.py"), "--out", str(out)],
                                        env={**_base(), **environ}, text=True, stderr=subprocess.PIPE)
                       for environ in envs])
    return out


def _base() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MASTER_", "RANK", "LOCAL_RANK",
                                                                     "WORLD_SIZE"))}


def test_each_style_trains_one_world_on_two_nodes(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    submitted = {}
    styles = {"local-rank-arg": ("local_rank_arg.py", []),
              "per-node": ("spawn_per_node.py", ["-n", "{nnodes}", "-g", "{nproc_per_node}", "-nr", "{node_rank}"]),
              "slurm": ("slurm_native.py", [])}

    def submit(style: str) -> tuple[str, Path, Path]:
        script, extra = styles[style]
        out = tmp_path / style
        job_id, job_dir = slurm_cluster.submit(str(SCRIPTS / script), "--nodes", "2", "--gpus", "2", "--",
                                               *extra, "--out", str(out))
        return job_id, job_dir, out

    for style in styles:
        submitted[style] = submit(style)
    reference = _records(_reference(tmp_path))
    for style in styles:
        job_id, job_dir, out = submitted[style]
        final = slurm_cluster.wait_done(job_id, timeout=TIMEOUT, job_dir=job_dir)
        if final["state"] != "COMPLETED" and TEARDOWN_ABORT in slurm_cluster.describe(job_dir):
            # gloo's threads aborted the interpreter's teardown after training (as in _wait_all): once more
            submitted[style] = job_id, job_dir, out = submit(style)
            final = slurm_cluster.wait_done(job_id, timeout=TIMEOUT, job_dir=job_dir)
        assert final["state"] == "COMPLETED", f"{style}\n{slurm_cluster.describe(job_dir)}"
        cfg = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))
        assert cfg["script"]["launch"]["style"] == style and cfg["script"]["launch"]["how"] == "detected"
        ours = _records(out)
        for rank, (mine, ref) in enumerate(zip(ours, reference, strict=True)):
            assert (mine["rank"], mine["world"]) == (rank, WORLD), style
            assert mine["params"] == ref["params"], f"{style}: rank {rank} differs from the reference world's"
        assert all(r["params"] == ours[0]["params"] for r in ours), style
    per_node = _records(submitted["per-node"][2])
    assert sorted(r["env"]["NODE_RANK"] for r in per_node) == ["0", "0", "1", "1"]
    assert {r["env"]["WORLD_SIZE"] for r in per_node} == {"4"} and {r["env"]["RANK"] for r in per_node} == {None}
    assert [r["local_rank_arg"] for r in _records(submitted["local-rank-arg"][2])] == [0, 1, 0, 1]
    slurm = _records(submitted["slurm"][2])
    assert [(r["slurm"]["SLURM_NTASKS"], r["slurm"]["SLURM_NNODES"]) for r in slurm] == [("4", "2")] * 4
