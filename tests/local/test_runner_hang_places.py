"""A hang in a script under ``orch run --nproc 2 --collective-timeout 5``, for real (gloo on CPU): the run ends
within the timeout + 15 s of the hang, names the rank the others waited for with its file:line (orch run's last
lines, ``logs/places.json``, ``orch status --json`` and ``orch logs``) and leaves no process behind.

The scripts (tests/scripts/hang_*.py) print ``rank R hung at <time.time()>`` when they hang. The times measured
here (hang -> end of the run, hang -> the places named) are printed; docs/benchmarks.md keeps a table of them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import sharedruns
from support import ORCH, ROOT, clean_environ

from orchestrator.records.stacks import places_path
from orchestrator.spec.runconfig import LOG_DIR

pytestmark = pytest.mark.slow

SCRIPTS = ROOT / "tests" / "scripts"
TIMEOUT_S = 5
MARGIN_S = 15  # from the hang to the run's end, on top of the timeout
CAP_S = 120  # without a bound the run would wait torch's 30 minutes: the test stops it here


def _lines(script: str, codes: str) -> str:
    lines = (SCRIPTS / script).read_text(encoding="utf-8").splitlines()
    return "(" + "|".join(str(n) for n, line in enumerate(lines, 1) if line.strip() in codes.split("|")) + ")"


def _expected(case: str) -> re.Pattern[str]:
    script, _, said, codes = CASES[case]
    return re.compile(re.escape(said).replace(r"\{0\}", "{0}").replace(r"\{1\}", "{1}").format(
        *(_lines(script, code) for code in codes)))


# script, extra options, what orch run's last lines must say (file:line from the script itself: the line of a code,
# or of either of two codes, "a|b": the signal finds an endless loop on either of its lines)
CASES = {
    "loader": ("hang_loader.py", (), "rank 1 stopped at hang_loader.py:{0} in load_batch (time.sleep) while rank 0 "
               "waited in all_reduce at hang_loader.py:{1} in <module> (loss.backward)",
               ("time.sleep(10**6)", "loss.backward()")),
    "barrier": ("hang_barrier.py", ("--no-check",), "rank 0 was in barrier at hang_barrier.py:{0} in <module> "
                "(dist.barrier) while rank 1 waited in all_reduce at hang_barrier.py:{1} in <module> (loss.backward) "
                "(mismatched collectives)", ("dist.barrier()", "loss.backward()")),
    "mismatch": ("hang_mismatch.py", (), "rank 0 was in all_reduce at hang_mismatch.py:{0} in <module> "
                 "(dist.all_reduce) while rank 1 waited in broadcast at hang_mismatch.py:{1} in <module> "
                 "(dist.broadcast) (mismatched collectives)",
                 ("dist.all_reduce(value)", "dist.broadcast(value, src=0)")),
    "native": ("hang_native.py", (), "rank 1 stopped at hang_native.py:{0} in block_in_native_code "
               "(libc.pthread_mutex_lock) while rank 0 waited in all_reduce at hang_native.py:{1} in <module> "
               "(dist.all_reduce)", ("libc.pthread_mutex_lock(mutex)", "dist.all_reduce(value)")),
    "spin": ("hang_spin.py", (), "rank 1 stopped at hang_spin.py:{0} in spin while rank 0 waited in all_reduce at "
             "hang_spin.py:{1} in <module> (dist.all_reduce)", ("while True:|count += 1", "dist.all_reduce(value)")),
    # the frameworks as their docs write them, with their own default timeouts (orch's bound applies there too)
    "lightning": ("hang_lightning.py", (), "rank 1 stopped at hang_lightning.py:{0} in training_step (time.sleep) "
                  "while rank 0 waited in all_reduce at hang_lightning.py:{1} in main (trainer.fit)",
                  ("time.sleep(10**6)", "trainer.fit(Regressor(), data)")),
    "hf-trainer": ("hang_hf_trainer.py", (), "rank 1 stopped at hang_hf_trainer.py:{0} in __getitem__ (time.sleep) "
                   "while rank 0 waited in all_reduce at hang_hf_trainer.py:{1} in main (Trainer)",
                   ("time.sleep(10**6)", "Trainer(model=Tiny(), args=training, train_dataset=Pairs()).train()")),
}


def _run(tmp_path: Path, script: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], float, Path, list[int]]:
    """The run, when it ended (time.time()), its job folder, and its ranks still alive as it ended."""
    jobs = tmp_path / "jobs"
    proc = subprocess.run([ORCH, "run", str(SCRIPTS / script), "--nproc", "2", "--job-root", str(jobs),
                           "--collective-timeout", str(TIMEOUT_S), "--max-restarts", "0", *extra],
                          cwd=tmp_path, env=clean_environ(PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                          timeout=CAP_S, check=False)
    ended = time.time()
    [job_dir] = [p for p in jobs.iterdir() if (p / "job.json").is_file()]
    return proc, ended, job_dir, _left_behind(job_dir)


def _case_run(case: str, tmp_path_factory: pytest.TempPathFactory,
              tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], float, Path, list[int]]:
    """The run of ``case``; the loader's is made once per session: test_status_and_logs_name_the_rank_and_list_every_
    ranks_place reads the same hang (a copy of its folder)."""
    script, extra, _, _ = CASES[case]
    if case != "loader":
        return _run(tmp_path, script, *extra)
    return sharedruns.once(tmp_path_factory, "hang-places-loader", lambda folder: _run(folder, script, *extra))


def _hung_at(job_dir: Path) -> float:
    """When the first rank hung (the scripts print it)."""
    times = [float(t) for r in (0, 1) for t in re.findall(r"rank \d hung at ([0-9.]+)",
                                                           (job_dir / LOG_DIR / f"local-rank{r}.out").read_text())]
    return min(times)


def _left_behind(job_dir: Path) -> list[int]:
    """The ranks' processes (their pids in the outcome records) still alive with this job's folder in argv."""
    alive = []
    for rank in (0, 1):
        pid = json.loads((job_dir / LOG_DIR / f"rank{rank}.outcome.json").read_text())["pid"]
        try:
            if str(job_dir) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                alive.append(pid)
        except OSError:
            continue
    return alive


@pytest.mark.parametrize("case", list(CASES))
def test_a_hang_ends_in_seconds_and_names_the_rank_and_its_line(case: str, tmp_path_factory: pytest.TempPathFactory,
                                                              tmp_path: Path) -> None:
    expected = _expected(case)
    proc, ended, job_dir, left = _case_run(case, tmp_path_factory, tmp_path)
    terminal = proc.stdout + proc.stderr
    assert proc.returncode != 0, terminal
    hung = _hung_at(job_dir)
    named = os.stat(places_path(job_dir)).st_mtime
    print(f"{case}: hang -> end {ended - hung:.1f} s, hang -> culprit named {named - hung:.1f} s")
    assert ended - hung <= TIMEOUT_S + MARGIN_S
    last = [line for line in proc.stderr.splitlines() if line.startswith("orch: error: ")][-1]
    named_in = json.loads(places_path(job_dir).read_text())["culprit"]
    assert expected.fullmatch(named_in), named_in
    assert last.startswith(f"orch: error: {named_in}; "), terminal
    assert not left  # the ranks' processes alive as orch run ended


def test_status_and_logs_name_the_rank_and_list_every_ranks_place(tmp_path_factory: pytest.TempPathFactory,
                                                                  tmp_path: Path) -> None:
    _, _, shared, _ = _case_run("loader", tmp_path_factory, tmp_path)
    job_dir = sharedruns.copy_job(shared, tmp_path / "jobs")  # orch status and logs may write into it
    expected = json.loads(places_path(job_dir).read_text())["culprit"]
    assert _expected("loader").fullmatch(expected), expected
    env = clean_environ(PYTHONPATH=str(ROOT))
    status = subprocess.run([ORCH, "status", str(job_dir), "--json"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=60, check=True)
    failure = json.loads(status.stdout)["failure"]  # one job: one object
    assert failure["rank"] == 1 and failure["place"] == expected, failure
    places = {p["rank"]: p for p in failure["places"]}
    assert places[0]["state"] == "collective" and places[0]["op"] == "all_reduce"
    assert places[1]["state"] == "user" and places[1]["function"] == "load_batch" and places[1]["call"] == "time.sleep"
    logs = subprocess.run([ORCH, "logs", str(job_dir)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60, check=True)
    assert f"orch: look at rank 1: {expected}" in logs.stderr, logs.stderr
    human = subprocess.run([ORCH, "status", str(job_dir)], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=60, check=True)
    assert expected in human.stdout, human.stdout
