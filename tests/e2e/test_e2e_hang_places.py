"""End to end on the local Slurm cluster, as the user, 2 nodes, under ``--collective-timeout 5``: a data loader
blocked in ``time.sleep``, a barrier only rank 0 calls (``--no-check``) and a rank blocked in native code
(tests/scripts/hang_*.py). Each job's ranks end within the timeout + 15 s of the hang, ``orch status --json``
and ``orch logs`` name the rank with its file:line and the others' collective, and no task process is left on
any node (they share this host's /proc)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from orchestrator.spec.runconfig import LOG_DIR

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
TIMEOUT_S = 5
MARGIN_S = 15

# script, extra options, the place named (file:line from the script itself: the line of a code, or of any of
# several codes, "a|b"), the rank named
CASES = {
    "loader": ("hang_loader.py", (), "rank 1 stopped at hang_loader.py:{0} in load_batch (time.sleep) while rank 0 "
               "waited in all_reduce at hang_loader.py:{1} in <module> (loss.backward)",
               ("time.sleep(10**6)", "loss.backward()"), 1),
    "barrier": ("hang_barrier.py", ("--no-check",), "rank 0 was in barrier at hang_barrier.py:{0} in <module> "
                "(dist.barrier) while rank 1 waited in all_reduce at hang_barrier.py:{1} in <module> (loss.backward) "
                "(mismatched collectives)", ("dist.barrier()", "loss.backward()"), 0),
    "native": ("hang_native.py", (), "rank 1 stopped at hang_native.py:{0} in block_in_native_code "
               "(libc.pthread_mutex_lock) while rank 0 waited in all_reduce at hang_native.py:{1} in <module> "
               "(dist.all_reduce)", ("libc.pthread_mutex_lock(mutex)", "dist.all_reduce(value)"), 1),
}


def _expected(case: str) -> re.Pattern[str]:
    script, _, said, codes, _ = CASES[case]
    lines = (SCRIPTS / script).read_text(encoding="utf-8").splitlines()
    found = ["(" + "|".join(str(n) for n, line in enumerate(lines, 1) if line.strip() in code.split("|")) + ")"
             for code in codes]
    return re.compile(re.escape(said).replace(r"\{0\}", "{0}").replace(r"\{1\}", "{1}").format(*found))


@pytest.mark.parametrize("case", list(CASES))
def test_a_hang_on_two_nodes_is_named_with_its_line(case: str, slurm_cluster: SlurmCluster) -> None:
    cluster = slurm_cluster
    script, extra, _, _, named = CASES[case]
    job_id, job_dir = cluster.submit(str(SCRIPTS / script), "--nodes", "2", "--gpus", "1", "--cpus-per-task", "1",
                                     "--collective-timeout", str(TIMEOUT_S), "--max-restarts", "0", *extra)
    status = cluster.wait_done(job_id, timeout=300, job_dir=job_dir)
    detail = f"{status}\n{cluster.describe(job_dir)}"
    assert status["state"] == "FAILED", detail
    failure = status["failure"]
    assert failure["rank"] == named and _expected(case).fullmatch(failure["place"] or ""), detail
    assert {p["state"] for p in failure["places"]} <= {"collective", "user"}, detail
    logs = cluster.orch("logs", job_id, "--cluster", str(cluster.cluster_yaml), check=True)
    assert f"orch: look at rank {named}: {failure['place']}" in logs.stderr, logs.stderr
    rank_logs = [job_dir / LOG_DIR / f"{job_id}-rank{r}.out" for r in (0, 1)]
    hung = min(float(t) for log in rank_logs for t in re.findall(r"rank \d hung at ([0-9.]+)", log.read_text()))
    ends = [json.loads((job_dir / LOG_DIR / f"rank{r}.outcome.json").read_text()).get("ended") for r in (0, 1)]
    ended = max([e for e in ends if e is not None] + [log.stat().st_mtime for log in rank_logs])
    print(f"slurm, 2 nodes, {case}: hang -> last rank ended {ended - hung:.1f} s")
    assert ended - hung <= TIMEOUT_S + MARGIN_S, detail
    assert cluster.job_processes(job_id) == []
