"""End to end on the local Slurm cluster, as the user, 2 nodes, under ``--collective-timeout 5``: mismatched collectives
(all_reduce on rank 0, broadcast on rank 1: every rank in a collective, the rank named is the one whose call differs),
a rank blocked in native code (it answers no signal: its place comes from its log's dump), and a Lightning script
whose rank 1 blocks (a framework's own processes and threads on both nodes) (tests/scripts/hang_*.py, the scripts
the local tests run). Each job's ranks end within the timeout + 15 s of the hang, ``orch status --json`` and ``orch
logs`` name the rank with its file:line and the others' collective, and no task process is left on any node (they
share this host's /proc). The other hangs (a data loader in ``time.sleep``, a barrier only rank 0 calls, an endless
Python loop, an HF ``Trainer``) are named and ended the same way across nodes: where the rank stops does not change
the two-node path (srun ends the step when a rank gives up), and each is proven under ``orch run`` in
tests/local/test_runner_hang_places.py.

Then orch's entrypoint with ``launcher.restart: in-process``: a rank that runs on but makes no step
(tests/jobs/faulty.py ``fault=hang``) is found by its agent's heartbeat and restarted inside the step; the job is
COMPLETED with the parameters of an uninterrupted run and ``hung_s`` recorded."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from orchestrator.spec.runconfig import LOG_DIR

if TYPE_CHECKING:
    from conftest import LocalRun, SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

TESTS = Path(__file__).resolve().parents[1]
SCRIPTS = TESTS / "scripts"
FAULTY = TESTS / "jobs" / "faulty.py"
ORCH = str(Path(sys.executable).with_name("orch"))
TIMEOUT_S = 5
MARGIN_S = 15

# script, extra options, the place named (file:line from the script itself: the line of a code, or of any of
# several codes, "a|b"), the rank named
CASES = {
    "native": ("hang_native.py", (), "rank 1 stopped at hang_native.py:{0} in block_in_native_code "
               "(libc.pthread_mutex_lock) while rank 0 waited in all_reduce at hang_native.py:{1} in <module> "
               "(dist.all_reduce)", ("libc.pthread_mutex_lock(mutex)", "dist.all_reduce(value)"), 1),
    "mismatch": ("hang_mismatch.py", (), "rank 0 was in all_reduce at hang_mismatch.py:{0} in <module> "
                 "(dist.all_reduce) while rank 1 waited in broadcast at hang_mismatch.py:{1} in <module> "
                 "(dist.broadcast) (mismatched collectives)",
                 ("dist.all_reduce(value)", "dist.broadcast(value, src=0)"), 0),
    "lightning": ("hang_lightning.py", (), "rank 1 stopped at hang_lightning.py:{0} in training_step (time.sleep) "
                  "while rank 0 waited in all_reduce at hang_lightning.py:{1} in main (trainer.fit)",
                  ("time.sleep(10**6)", "trainer.fit(Regressor(), data)"), 1),
}
NEEDS = {"lightning": "lightning"}  # the framework's case: its package


def _expected(case: str) -> re.Pattern[str]:
    script, _, said, codes, _ = CASES[case]
    lines = (SCRIPTS / script).read_text(encoding="utf-8").splitlines()
    found = ["(" + "|".join(str(n) for n, line in enumerate(lines, 1) if line.strip() in code.split("|")) + ")"
             for code in codes]
    return re.compile(re.escape(said).replace(r"\{0\}", "{0}").replace(r"\{1\}", "{1}").format(*found))


@pytest.mark.parametrize("case", list(CASES))
def test_a_hang_on_two_nodes_is_named_with_its_line(case: str, slurm_cluster: SlurmCluster) -> None:
    if case in NEEDS and importlib.util.find_spec(NEEDS[case]) is None:
        pytest.skip(f"{NEEDS[case]} is not installed (pip install -e '.[frameworks]')")
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


def _hang_in_process(data: dict[str, Any]) -> None:
    data["launcher"]["restart"] = "in-process"  # pinned: not the default's business
    data["launcher"]["collective_timeout"] = TIMEOUT_S


def test_a_rank_stuck_running_is_restarted_in_process_on_two_nodes(slurm_cluster: SlurmCluster, tmp_path: Path,
                                                                    faulty_epochs2: LocalRun) -> None:
    cluster = slurm_cluster
    if len(cluster.nodes()) < 2:
        pytest.skip("needs 2 nodes")
    cluster_yaml = cluster.derived_cluster_yaml(tmp_path / "cluster.yaml", _hang_in_process)
    job_id, job_dir = cluster.submit(str(FAULTY), "--nodes", "2", "--gpus", "1", "--cpus-per-task", "1",
                                     "--max-restarts", "1", "epochs=2", "fault=hang", "fault_rank=1",
                                     "fault_step=40", "fault_restart=0", cluster_yaml=cluster_yaml)
    status = cluster.wait_done(job_id, timeout=300, job_dir=job_dir)
    detail = f"{status}\n{cluster.describe(job_dir)}"
    assert status["state"] == "COMPLETED", detail
    first, second = json.loads((job_dir / "attempts.json").read_text())
    print(f"slurm, 2 nodes, in-process restart of a stuck rank: hung_s {first['hung_s']}, "
          f"recovery_s {first['recovery_s']}")
    assert first["in_process"] is True and first["kind"] == "stuck" and first["blamed_rank"] == 1, (first, detail)
    assert first["hung_s"] is not None and first["hung_s"] >= TIMEOUT_S - 1, first  # its last step to the failure
    assert first["pids"]["0"] == second["pids"]["0"] and first["pids"]["1"] != second["pids"]["1"], (first, second)
    assert second["attempt"] == 1 and second["kind"] == "completed" and second["resumed_step"] == 32, second
    rank1 = (job_dir / LOG_DIR / f"{job_id}-rank1.out").read_text(errors="replace")
    assert "made no training step for" in rank1 and "(hung); killing it" in rank1, rank1[-3000:]
    batch = (job_dir / LOG_DIR / f"slurm-{job_id}.out").read_text(errors="replace")
    assert batch.count("orch: attempt ") == 0, batch  # one srun step: the batch script never restarted it
    result = json.loads((job_dir / "result.json").read_text())
    # the uninterrupted run (conftest's faulty_epochs2, one for the tests that need it; it ran beside the job when
    # this test asked first)
    assert result["param_digest"] == faulty_epochs2.param_digest()
    assert cluster.job_processes(job_id) == []
