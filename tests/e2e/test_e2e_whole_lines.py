"""Every line a rank prints arrives whole in its log, on the local Slurm cluster: a per-node script
(tests/scripts/spawn_chatter.py, its own ``mp.spawn``) submitted with ``--nodes 2 --gpus 2``: each node's task
starts two processes that share the task's stdout and stderr (srun's per-rank log) and print many lines, each
``print`` of several parts, at the same moment. No line of one is cut by the other's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "spawn_chatter.py"
LINES = 2000  # per process
PAD = 40
WHOLE = re.compile(rb"CHATTER (out|err) rank (\d) line (\d+) x{%d}" % PAD)
TIMEOUT = 240


def test_processes_sharing_a_tasks_log_never_cut_each_others_lines(slurm_cluster: SlurmCluster) -> None:
    job_id, job_dir = slurm_cluster.submit(str(SCRIPT), "--nodes", "2", "--gpus", "2", "--", "-n", "{nnodes}",
                                           "-g", "{nproc_per_node}", "-nr", "{node_rank}", "--lines", str(LINES),
                                           "--pad", str(PAD))
    final = slurm_cluster.wait_done(job_id, timeout=TIMEOUT, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    for task, ranks in ((0, (b"0", b"1")), (1, (b"2", b"3"))):  # node 0's processes are ranks 0, 1; node 1's 2, 3
        log = (job_dir / "logs" / f"{job_id}-rank{task}.out").read_bytes()
        lines = log.split(b"\n")
        broken = [line for line in lines if b"CHATTER" in line and not WHOLE.fullmatch(line)]
        assert not broken, b"\n".join(broken[:10]).decode(errors="replace")
        seen = sorted((m.group(2), int(m.group(3))) for m in map(WHOLE.fullmatch, lines) if m is not None)
        assert seen == sorted((rank, i) for rank in ranks for i in range(LINES)), f"task {task}"
