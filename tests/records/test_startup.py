"""The CLI's start-up savings stay correct: the template and cluster.yaml caches never serve a stale
or planted entry, the CLI skips pydantic's plugin scan without touching the environment its
children inherit, and the task's start-up clock records its phases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import ROOT

from orchestrator.errors import ConfigError
from orchestrator.records import cache
from orchestrator.records.cache import load_cluster
from orchestrator.records.startup import PHASES, StartupClock, format_startup, process_start_time
from orchestrator.runtime.imports import prefetch_dynamo

CLUSTER = """\
name: c
partitions:
  - name: p
    nodes: n[1-4]
    gpus_per_node: 8
    cpus_per_node: 32
    mem_per_node: 100G
launcher:
  job_root: {root}
"""


def _orch(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, check=False, timeout=120)


@pytest.fixture
def cache_env(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    clean_env.setenv(cache.CACHE_ENV_VAR, str(tmp_path / "cache"))
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_cache_root_follows_xdg_and_can_be_turned_off(tmp_path: Path) -> None:
    assert cache.cache_root({"XDG_CACHE_HOME": str(tmp_path), "HOME": "/h"}) == tmp_path / "orch"
    assert cache.cache_root({"XDG_CACHE_HOME": "relative", "HOME": "/h"}) == Path("/h/.cache/orch")
    assert cache.cache_root({"HOME": "/h"}) == Path("/h/.cache/orch")
    assert cache.cache_root({cache.CACHE_ENV_VAR: "off", "HOME": "/h"}) is None
    assert cache.cache_root({cache.CACHE_ENV_VAR: str(tmp_path / "x")}) == tmp_path / "x"


def test_a_cache_folder_that_others_may_write_or_a_link_is_never_used(tmp_path: Path) -> None:
    made = cache.private_dir(tmp_path / "new" / "orch")
    assert made is not None and (made.stat().st_mode & 0o777) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert cache.private_dir(shared) is None
    shared.chmod(0o770)
    assert cache.private_dir(shared) is None  # group-writable too
    link = tmp_path / "link"
    link.symlink_to(made)
    assert cache.private_dir(link) is None
    assert cache.template_bytecode_cache({}, {cache.CACHE_ENV_VAR: str(shared)}) is None


def test_template_cache_serves_the_same_script_and_sees_edited_user_templates(
        cache_env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(CLUSTER.format(root=tmp_path / "jobs"))
    args = ["submit", "smoke", "--nodes", "2", "--gpus", "8", "--dry-run"]
    no_cache = _orch(args, {**cache_env, cache.CACHE_ENV_VAR: "off"}, tmp_path)
    first = _orch(args, cache_env, tmp_path)
    second = _orch(args, cache_env, tmp_path)
    assert no_cache.returncode == first.returncode == second.returncode == 0, no_cache.stderr + first.stderr

    def script(text: str) -> str:  # the job folder's name is new each time
        return "\n".join(line for line in text.splitlines() if "smoke-" not in line)

    assert script(first.stdout) == script(second.stdout) == script(no_cache.stdout)
    entries = list((tmp_path / "cache").glob("templates-*/*.jinja"))
    assert entries and all((p.stat().st_mode & 0o077) == 0 for p in entries)

    user = tmp_path / "tpl"
    user.mkdir()
    template = user / "multi_node.sbatch.j2"
    for marker in ("first-version", "second-version"):  # same file, new content: compiled again
        template.write_text('{% extends "base.sbatch.j2" %}\n{% block master_addr %}\n# ' + marker
                            + '\nMASTER_ADDR=127.0.0.1\n{% endblock %}\n')
        out = _orch([*args, "--templates", str(user)], cache_env, tmp_path)
        assert out.returncode == 0, out.stderr
        assert f"# {marker}" in out.stdout


def test_cluster_parse_cache_sees_edits_and_keeps_every_message(cache_env: dict[str, str],
                                                                 tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER.format(root=tmp_path / "jobs"))
    assert load_cluster(path).partitions[0].gpus_per_node == 8
    assert list((tmp_path / "cache" / "parsed").glob("*.json"))  # cached
    assert load_cluster(path).partitions[0].gpus_per_node == 8  # from the cache
    path.write_text(CLUSTER.format(root=tmp_path / "jobs").replace("gpus_per_node: 8", "gpus_per_node: 4"))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert load_cluster(path).partitions[0].gpus_per_node == 4
    # validation runs on every load: a cached parse with a bad value still fails with the same message
    path.write_text(CLUSTER.format(root=tmp_path / "jobs").replace("gpus_per_node: 8", "gpus_per_node: 99"))
    messages = []
    for _ in range(2):
        with pytest.raises(ConfigError) as err:
            load_cluster(path)
        messages.append(err.value.message)
    assert messages[0] == messages[1] and "gpus_per_node" in messages[0]
    # YAML values JSON cannot carry exactly (a date) are not cached: the error stays the string_type one
    path.write_text(CLUSTER.format(root=tmp_path / "jobs").replace("name: c", "name: 2024-01-01"))
    for _ in range(2):
        with pytest.raises(ConfigError, match="name"):
            load_cluster(path)


def test_cluster_parse_cache_never_reads_a_planted_folder(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    clean_env.setenv(cache.CACHE_ENV_VAR, str(shared))
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER.format(root=tmp_path / "jobs"))
    assert load_cluster(path).name == "c"
    assert not list(shared.rglob("*.json"))


def test_cli_skips_pydantic_plugins_without_changing_the_environment(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(CLUSTER.format(root=tmp_path / "jobs"))
    code = (
        "import os, sys\n"
        "from orchestrator.cli import main\n"
        "assert main(['submit', 'smoke', '--nodes', '2', '--gpus', '8', '--dry-run']) == 0\n"
        "print(repr(sys.modules['pydantic.plugin._loader'].__doc__), 'importlib.metadata' in sys.modules,"
        " 'PYDANTIC_DISABLE_PLUGINS' in os.environ, 'torch' in sys.modules, file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORCH_", "PYDANTIC_"))}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("False False False"), proc.stderr
    assert "(orchestrator.cli)" in proc.stderr
    kept = subprocess.run([sys.executable, "-c", code], env={**env, "ORCH_PYDANTIC_PLUGINS": "1"}, cwd=tmp_path,
                          capture_output=True, text=True, check=False, timeout=120)
    assert kept.returncode == 0, kept.stderr
    assert "(orchestrator.cli)" not in kept.stderr  # pydantic's own loader


def test_startup_clock_phases_from_the_batch_script_and_laps(tmp_path: Path) -> None:
    (tmp_path / "job.json").write_text("{}")
    submitted = time.time() - 100
    os.utime(tmp_path / "job.json", (submitted, submitted))
    started = process_start_time()
    assert started is not None and started <= time.time()
    environ = {"ORCH_BATCH_START": f"{submitted + 160:.6f}".replace(".", ","),  # a locale's decimal comma
               "ORCH_SRUN_START": f"{submitted + 161.5:.6f}"}  # after this process started
    clock = StartupClock()
    clock.start(environ, tmp_path)
    assert clock.phases["queued"] == pytest.approx(160, abs=0.01)
    assert clock.phases["batch"] == pytest.approx(1.5, abs=0.01)
    assert "to_task" not in clock.phases  # this process started before that "srun": no negative phase
    clock.start({"ORCH_SRUN_START": f"{started - 0.5:.6f}"})
    assert clock.phases["to_task"] == pytest.approx(0.5, abs=0.05)
    clock.lap("imports", now=started + 2)
    clock.record("import_torch", 1.5)
    clock.lap("process_group", now=started + 2.25)
    clock.lap("imports", now=started + 2.5)  # laps add up
    phases = clock.as_dict()
    assert phases["imports"] == pytest.approx(2.25, abs=0.05) and phases["process_group"] == pytest.approx(0.25)
    assert list(phases) == [p for p in PHASES if p in phases]
    text = format_startup(phases)
    assert text.splitlines()[0] == "startup (rank 0):"
    assert "  of which import torch" in text and "  total" in text
    requeued = StartupClock()
    requeued.start({**environ, "SLURM_RESTART_COUNT": "1"}, tmp_path)
    assert "queued" not in requeued.phases  # job.json predates the requeue


def test_prefetch_is_off_by_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH_PREFETCH_DYNAMO", "0")
    assert prefetch_dynamo() is None


def test_status_shows_a_recorded_startup(tmp_path: Path, clean_env: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.cli import main

    job = tmp_path / "jobs" / "smoke-20260101-000000-abcdef"
    job.mkdir(parents=True)
    (job / "job.json").write_text(json.dumps({"job_name": "smoke"}))
    (job / "job_id").write_text("77\n")
    (job / "result.json").write_text(json.dumps({"status": "completed", "startup": {
        "queued": 1.0, "imports": 3.0, "import_torch": 2.0, "process_group": 0.5, "first_step": 0.5}}))
    (tmp_path / "cluster.yaml").write_text(CLUSTER.format(root=tmp_path / "jobs"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("squeue", "sacct", "scontrol"):
        (bin_dir / tool).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / tool).chmod(0o755)
    clean_env.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    clean_env.setenv("SLURM_CONF", str(tmp_path / "slurm.conf"))
    (tmp_path / "slurm.conf").write_text("")
    code = main(["status", str(job)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "startup (rank 0):" in out and "  of which import torch" in out
    assert "  total" in out and "5.000s" in out  # queued + imports + process_group + first_step
