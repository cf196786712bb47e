"""Rendered scripts for the bring-your-own-script features: golden files for --gpus-per-task 2, the
site options (--constraint ... --sbatch-arg, --env, cluster.yaml defaults.sbatch), pyxis and
Apptainer; bash -n and shellcheck on each; the #SBATCH options as sbatch's parser reads them; and
the pyxis/Apptainer scripts executed with stub srun and apptainer (nothing runs a real container)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support import check_golden, load_stub_module

from orchestrator.errors import ConfigError
from orchestrator.records.cache import load_cluster
from orchestrator.slurm.plan import SubmitPlan, build_plan, make_request, write_job_dir
from orchestrator.spec.script import ScriptTarget, script_job

if TYPE_CHECKING:
    from support import Stubs

SHELLCHECK = shutil.which("shellcheck")
STUB = load_stub_module()
TARGET = ScriptTarget(kind="script", target="/home/user/work/train.py", args=["--lr", "0.1"], cwd="/home/user/work")
SITE = {"defaults": {"sbatch": {"constraint": "a100", "exclusive": True, "comment": "from defaults"}},
        "partitions": [{"name": "gpu", "nodes": "gpu[001-064]", "gpus_per_node": 8, "cpus_per_node": 96,
                        "mem_per_node": "1000G", "max_time": "2-00:00:00", "gpu_type": "a100",
                        "sbatch": {"reservation": "gpu-resv", "comment": False}}]}

# golden file -> (cluster.yaml sections, request)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "sbatch_script_k2.sh": ({}, {"nodes": 2, "gpus": 8, "gpus_per_task": 2}),
    "sbatch_extras.sh": (SITE, {"nodes": 2, "gpus": 4, "env": {"WANDB_PROJECT": "my proj", "EMPTY": ""},
                                "sbatch_extra": {"constraint": "a100&ib|h100", "mail-type": "END,FAIL",
                                                 "mail-user": "me@example.org", "dependency": "afterok:1234",
                                                 "nodelist": "gpu[001-002]", "exclude": "gpu003",
                                                 "licenses": "scratch:1", "hold": None,
                                                 "comment": "it's \"quoted\" $(x) #not-a-comment"}}),
    "sbatch_pyxis.sh": ({"launcher": {"container": {"runtime": "pyxis", "image": "nvcr.io#nvidia/pytorch:24.05-py3",
                                                    "mounts": ["/scratch", "/data:/data:ro"]}}},
                        {"nodes": 2, "gpus": 8}),
    "sbatch_apptainer.sh": ({"launcher": {"container": {"runtime": "apptainer", "image": "/images/torch 2.sif",
                                                        "python": "/opt/venv/bin/python"}}},
                            {"nodes": 1, "gpus": 2, "container_mounts": ["/scratch:/mnt/scratch"]}),
}


def _plan(write_cluster: Callable[..., Path], sections: dict[str, Any], request: dict[str, Any],
          job_root: Path = Path("/home/user/orch-jobs"), python: str = "/opt/orch/.venv/bin/python") -> SubmitPlan:
    req = make_request({"job": TARGET.target, "script": TARGET, **request})
    return build_plan(req, load_cluster(write_cluster(**sections)), script_job(TARGET), python=python,
                      now=datetime(2024, 1, 2, 3, 4, 5), token="abcdef", job_root=job_root)


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest, write_cluster: Callable[..., Path]) -> tuple[str, SubmitPlan]:
    sections, req = CASES[request.param]
    return request.param, _plan(write_cluster, sections, req)


def test_golden(case: tuple[str, SubmitPlan]) -> None:
    name, plan = case
    check_golden(name, plan.script)


def test_bash_n(case: tuple[str, SubmitPlan], tmp_path: Path) -> None:
    script = tmp_path / "sbatch.sh"
    script.write_text(case[1].script, encoding="utf-8")
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(SHELLCHECK is None, reason="shellcheck is not installed (apt-get install -y shellcheck)")
def test_shellcheck(case: tuple[str, SubmitPlan], tmp_path: Path) -> None:
    script = tmp_path / "sbatch.sh"
    script.write_text(case[1].script, encoding="utf-8")
    proc = subprocess.run([str(SHELLCHECK), "--shell=bash", "--severity=style", str(script)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_site_options_reach_sbatch_as_given(write_cluster: Callable[..., Path]) -> None:
    sections, req = CASES["sbatch_extras.sh"]
    options = STUB.sbatch_script_options(_plan(write_cluster, sections, req).script)
    extras = options[options.index("--requeue") + 1:]
    assert extras == ["--constraint=a100&ib|h100", "--exclusive", "--reservation=gpu-resv", "--mail-type=END,FAIL",
                      "--mail-user=me@example.org", "--dependency=afterok:1234", "--nodelist=gpu[001-002]",
                      "--exclude=gpu003", "--licenses=scratch:1", "--hold",
                      "--comment=it's \"quoted\" $(x) #not-a-comment"]


def test_gpus_per_task_layout_in_the_script(write_cluster: Callable[..., Path]) -> None:
    plan = _plan(write_cluster, {}, {"nodes": 2, "gpus": 8, "gpus_per_task": 2})
    options = STUB.sbatch_script_options(plan.script)
    assert {"--ntasks-per-node=4", "--gpus-per-node=a100:8", "--cpus-per-task=24"} <= set(options)
    assert "--ntasks-per-node=4 --cpus-per-task=24" in plan.script  # srun repeats the layout


@pytest.mark.parametrize(("changes", "field"), [
    ({"sbatch_extra": {"comment": "two\nlines"}}, "sbatch options"),
    ({"env": {"X": "a\rb"}}, "--env"),
    ({"container_runtime": "pyxis", "container_image": "img\nx"}, "container image"),
])
def test_values_a_script_cannot_carry_are_refused(write_cluster: Callable[..., Path], changes: dict[str, Any],
                                                  field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        _plan(write_cluster, {}, {"nodes": 1, "gpus": 1, **changes})


@pytest.mark.parametrize(("sections", "changes", "words"), [
    ({}, {"container_runtime": "apptainer"}, "needs an image"),
    ({}, {"container_image": "x.sif"}, "without a container runtime"),
    ({}, {"container_runtime": "pyxis", "container_image": "i", "container_mounts": ["rel/path"]}, "absolute SRC"),
    ({}, {"container_runtime": "pyxis", "container_image": "i", "container_mounts": ["/a,/b"]}, "no commas"),
])
def test_container_refusals(write_cluster: Callable[..., Path], sections: dict[str, Any], changes: dict[str, Any],
                            words: str) -> None:
    with pytest.raises(ConfigError) as info:
        _plan(write_cluster, sections, {"nodes": 1, "gpus": 1, **changes})
    assert words in info.value.message + " " + (info.value.hint or "")


def _execute(plan: SubmitPlan, stubs: Stubs, **env: str) -> subprocess.CompletedProcess[str]:
    job_dir = write_job_dir(plan)
    slurm = {"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "gpu[001-002]", "SLURM_JOB_NUM_NODES": "2"}
    return subprocess.run(["bash", str(job_dir / "sbatch.sh")], env=stubs.env(**{**slurm, **env}),
                          capture_output=True, text=True, timeout=120, cwd=job_dir, check=False)


def test_executed_pyxis_script_gives_srun_the_container(write_cluster: Callable[..., Path], tmp_path: Path,
                                                       stubs: Stubs) -> None:
    sections, req = CASES["sbatch_pyxis.sh"]
    plan = _plan(write_cluster, sections, req, job_root=tmp_path / "jobs", python=sys.executable)
    proc = _execute(plan, stubs)
    assert proc.returncode == 0, proc.stderr
    [srun] = stubs.records("srun")
    job_dir, snaps = str(plan.job_dir), str(plan.job_dir.parent / ".snapshots")  # the code snapshots
    tail = srun["argv"][srun["argv"].index("--open-mode=append") + 1:]
    assert tail == ["--container-image=nvcr.io#nvidia/pytorch:24.05-py3",
                    f"--container-mounts=/scratch:/scratch,/data:/data:ro,{job_dir}:{job_dir},{snaps}:{snaps},"
                    "/home/user/work:/home/user/work",
                    "python3", "-m", "orchestrator.runtime.launch", "--job-dir", job_dir]


def test_executed_apptainer_script_runs_apptainer_exec_in_every_task(write_cluster: Callable[..., Path],
                                                                     tmp_path: Path, stubs: Stubs) -> None:
    sections, req = CASES["sbatch_apptainer.sh"]
    plan = _plan(write_cluster, sections, req, job_root=tmp_path / "jobs", python=sys.executable)
    proc = _execute(plan, stubs, ORCH_STUB_SRUN_EXEC="1", ORCH_STUB_APPTAINER_RC="5")
    assert proc.returncode == 5, proc.stderr  # apptainer's (the task's) exit code is the job's
    [apptainer] = stubs.records("apptainer")
    job_dir, snaps = str(plan.job_dir), str(plan.job_dir.parent / ".snapshots")  # the code snapshots
    assert apptainer["argv"] == ["exec", "--nv", "--bind",
                                 f"/scratch:/mnt/scratch,{job_dir}:{job_dir},{snaps}:{snaps},"
                                 "/home/user/work:/home/user/work",
                                 "/images/torch 2.sif", "/opt/venv/bin/python", "-m",
                                 "orchestrator.runtime.launch",
                                 "--job-dir", job_dir]
    assert apptainer["env"]["MASTER_ADDR"] == "127.0.0.1" and apptainer["env"]["ORCH_JOB_DIR"] == job_dir


HOSTILE = ["plain", "with space", "it's", 'say "hi"', "back\\slash", "trail\\", "$(touch /tmp/orch-pwned)", "`id`",
           "a;b", "*", "~root", "-x", "--job-name=x", "#hash", "x #c", "unicode ✓", "tab\there", "packjob", "HetJob",
           "", " lead", "%j %t", "$HOME", "!event", "a\\\"b'c", "'", '"', "\\", "=start"]


def test_hostile_env_and_sbatch_values_arrive_exactly(write_cluster: Callable[..., Path], tmp_path: Path,
                                                      stubs: Stubs) -> None:
    env = {f"V{i}": value for i, value in enumerate(HOSTILE)}
    extras = {f"comment-{i}": value for i, value in enumerate(HOSTILE) if value}
    plan = _plan(write_cluster, {}, {"nodes": 2, "gpus": 2, "env": env, "sbatch_extra": extras},
                 job_root=tmp_path / "jobs", python=sys.executable)
    options = STUB.sbatch_script_options(plan.script)  # as sbatch's own parser reads the #SBATCH lines
    assert [o for o in options if o.startswith("--comment-")] == [f"--{k}={v}" for k, v in extras.items()]
    proc = _execute(plan, stubs)
    assert proc.returncode == 0, proc.stderr
    [srun] = stubs.records("srun")
    assert {k: srun["env"][k] for k in env} == env  # bash exported every value as given
    assert not Path("/tmp/orch-pwned").exists()
