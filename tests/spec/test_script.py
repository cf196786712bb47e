"""Bring your own script, the pure parts as tables: which form a command line names, the refusals
(exit 2, nothing submitted), torchrun's variables, GPUs per task, CPUs per task, the GPU binding
decision, exit codes, and the SBATCH_* variables kept away from sbatch."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from support import ROOT

from orchestrator.cli import main, split_script_args
from orchestrator.env import distenv, taskenv
from orchestrator.env.devices import narrowed_visible, script_device, task_gpu_indices
from orchestrator.errors import ConfigError, DistEnvError
from orchestrator.records.cache import load_cluster
from orchestrator.slurm.client import sbatch_environment
from orchestrator.slurm.plan import SubmitPlan, build_plan, make_request
from orchestrator.slurm.resources import gpu_layout
from orchestrator.spec.runconfig import RunConfig
from orchestrator.spec.script import ScriptTarget, find_module, has_spec, resolve_target, script_job
from orchestrator.task.scriptrun import exit_code, should_bind

MakePlan = Callable[..., SubmitPlan]
DDP = ROOT / "tests" / "scripts" / "ddp_train.py"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text("import sys\nprint(sys.argv)\n", encoding="utf-8")
    (tmp_path / "job.py").write_text("SPEC = object()\n", encoding="utf-8")
    (tmp_path / "typed.py").write_text("SPEC: object = object()\n", encoding="utf-8")
    (tmp_path / "nested.py").write_text("def f():\n    SPEC = 1\n", encoding="utf-8")
    (tmp_path / "broken.py").write_text("def (:\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    (tmp_path / "a dir").mkdir()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "deepblast-train").write_text("#!/usr/bin/env python3\nimport sys\n", encoding="utf-8")
    (tmp_path / "bin" / "run-it").write_text("#!/bin/bash\npython train.py\n", encoding="utf-8")
    (tmp_path / "it's \"odd\" $(x).py").write_text("pass\n", encoding="utf-8")
    pkg = tmp_path / "pkg" / "sub"
    pkg.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("raise RuntimeError('imported')\n", encoding="utf-8")
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "train.py").write_text("", encoding="utf-8")
    (tmp_path / "runner").mkdir()
    (tmp_path / "runner" / "__main__.py").write_text("", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(("name", "expected"), [("train.py", False), ("job.py", True), ("typed.py", True),
                                                ("nested.py", False)])
def test_has_spec_reads_the_syntax_tree(files: Path, name: str, expected: bool) -> None:
    assert has_spec(files / name) is expected


def test_find_module_on_the_file_system_only(files: Path) -> None:
    assert find_module("pkg.sub.train", [files]) == files / "pkg" / "sub" / "train.py"
    assert find_module("runner", [files]) == files / "runner" / "__main__.py"
    assert find_module("pkg.nope", [files]) is None
    assert find_module("train", [files]) == files / "train.py"
    (files / "nspkg" / "deep").mkdir(parents=True)  # a namespace package: no __init__.py anywhere
    (files / "nspkg" / "deep" / "run.py").write_text("", encoding="utf-8")
    assert find_module("nspkg.deep.run", [files]) == files / "nspkg" / "deep" / "run.py"


# (job, module, args after --, overrides) -> (kind, target) or None for a job file
FORMS: list[tuple[str | None, str | None, list[str] | None, list[str], tuple[str, str] | None]] = [
    ("train.py", None, None, [], ("script", "train.py")),
    ("./train.py", None, ["--lr", "0.1"], [], ("script", "train.py")),
    ("it's \"odd\" $(x).py", None, [], [], ("script", "it's \"odd\" $(x).py")),  # any path works
    ("job.py", None, None, ["lr=0.1"], None),
    ("bin/deepblast-train", None, [], [], ("script", "bin/deepblast-train")),  # installed without .py: #!...python
    ("mnist", None, None, [], None),
    (None, "pkg.sub.train", ["x"], [], ("module", "pkg.sub.train")),
    (None, "not.here", [], [], ("module", "not.here")),
    (None, None, None, [], None),
]


@pytest.mark.parametrize(("job", "module", "args", "overrides", "expected"), FORMS)
def test_forms(files: Path, job: str | None, module: str | None, args: list[str] | None, overrides: list[str],
               expected: tuple[str, str] | None) -> None:
    target = resolve_target(job, module, args, overrides, files, [])
    if expected is None:
        assert target is None
        return
    assert target is not None
    kind, name = expected
    assert target.kind == kind and target.args == (args or []) and target.cwd == str(files)
    assert target.target == (str(files / name) if kind == "script" else name)
    assert target.found == (module != "not.here")
    assert (target.note() is not None) == (module == "not.here")


# (job, module, args, overrides) -> words the error names
REFUSED: list[tuple[str | None, str | None, list[str] | None, list[str], list[str]]] = [
    ("missing.py", None, None, [], ["does not exist", "check the path"]),
    ("sub/missing", None, None, [], ["does not exist"]),
    ("a dir", None, None, [], ["is a directory", "pass the .py file"]),
    ("notes.txt", None, None, [], ["not a .py file"]),
    ("bin/run-it", None, None, [], ["not a .py file", "python #! line"]),
    ("broken.py", None, None, [], ["not valid Python"]),
    ("train.py", None, None, ["lr=0.1"], ["is a script", "after --"]),
    ("train.py", None, ["a\0b"], [], ["NUL"]),
    ("job.py", None, ["--lr"], [], ["defines SPEC", "key=value"]),
    ("mnist", None, ["--lr"], [], ["key=value overrides, not arguments after --"]),
    ("train.py", "pkg.sub.train", None, [], ["both a JOB", "-m"]),
    (None, "pkg/sub", None, [], ["not a dotted module name"]),
    (None, "pkg.sub.train", None, ["lr=1"], ["is a script"]),
]


@pytest.mark.parametrize(("job", "module", "args", "overrides", "named"), REFUSED)
def test_refused(files: Path, job: str | None, module: str | None, args: list[str] | None, overrides: list[str],
                 named: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_target(job, module, args, overrides, files, [])
    text = info.value.message + " " + (info.value.hint or "")
    for word in named:
        assert word in text


def test_split_script_args() -> None:
    assert split_script_args(["run", "t.py", "--nproc", "2"]) == (["run", "t.py", "--nproc", "2"], None)
    assert split_script_args(["run", "t.py", "--", "--nproc", "--", "x"]) == (["run", "t.py"], ["--nproc", "--", "x"])
    assert split_script_args(["run", "t.py", "--"]) == (["run", "t.py"], [])


ENV = distenv.DistEnv(rank=5, local_rank=1, world_size=8, local_world_size=4, node_rank=1, num_nodes=2,
                      master_addr="n1", master_port=31000)


def test_script_env_is_torchruns_table() -> None:
    got = taskenv.script_env(ENV, restart_count=2, max_restarts=5, run_id="77", cpus_per_task=6, environ={})
    assert got == {
        "RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1",
        "GROUP_WORLD_SIZE": "2", "ROLE_RANK": "5", "ROLE_WORLD_SIZE": "8", "ROLE_NAME": "default",
        "MASTER_ADDR": "n1", "MASTER_PORT": "31000", "TORCHELASTIC_RESTART_COUNT": "2",
        "TORCHELASTIC_MAX_RESTARTS": "5", "TORCHELASTIC_RUN_ID": "77", "TORCHELASTIC_USE_AGENT_STORE": "False",
        "OMP_NUM_THREADS": "6", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    }
    kept = taskenv.script_env(ENV, restart_count=0, max_restarts=0, run_id="x", cpus_per_task=6,
                              environ={"OMP_NUM_THREADS": "2", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "0"})
    assert (kept["OMP_NUM_THREADS"], kept["TORCH_NCCL_ASYNC_ERROR_HANDLING"]) == ("2", "0")
    assert "NODE_RANK" not in got and set(taskenv.ORCH_ONLY_VARS) == {"NODE_RANK"}


@pytest.mark.parametrize(("environ", "run_id", "restarts"), [
    ({}, "fallback", 0),
    ({"SLURM_JOB_ID": "123", "SLURM_RESTART_COUNT": "3"}, "123", 3),
    ({"SLURM_JOB_ID": "130", "SLURM_ARRAY_JOB_ID": "123", "SLURM_ARRAY_TASK_ID": "7"}, "123_7", 0),
    ({"SLURM_JOBID": "9", "SLURM_RESTART_COUNT": ""}, "9", 0),
])
def test_run_id_and_restart_count(environ: dict[str, str], run_id: str, restarts: int) -> None:
    assert distenv.script_run_id(environ, "fallback") == run_id
    assert distenv.restart_count(environ) == restarts


def test_restart_count_falls_back_and_refuses_garbage() -> None:
    assert distenv.restart_count({}, 4) == 4
    with pytest.raises(DistEnvError, match="SLURM_RESTART_COUNT"):
        distenv.restart_count({"SLURM_RESTART_COUNT": "x"})


# (inherited CUDA_VISIBLE_DEVICES, local rank, K, GPUs per node) -> the task's CUDA_VISIBLE_DEVICES
NARROWING: list[tuple[str | None, int, int, int, str | None]] = [
    ("0,1,2,3", 1, 1, 4, None),  # K = 1: left alone (torchrun scripts use cuda:LOCAL_RANK)
    (None, 0, 2, 8, "0,1"),
    (None, 3, 2, 8, "6,7"),
    ("4,5,6,7", 1, 2, 4, "6,7"),  # Slurm gave this job the node's GPUs 4-7
    ("GPU-a,GPU-b,GPU-c,GPU-d", 0, 4, 4, "GPU-a,GPU-b,GPU-c,GPU-d"),
    ("2,3,4,5,6,7", 1, 3, 6, "5,6,7"),
    ("6,7", 3, 2, 8, "6,7"),  # Slurm bound the task to its own two GPUs already
]


@pytest.mark.parametrize(("visible", "local_rank", "k", "node_gpus", "expected"), NARROWING)
def test_each_task_sees_exactly_its_gpus(visible: str | None, local_rank: int, k: int, node_gpus: int,
                                         expected: str | None) -> None:
    assert narrowed_visible(visible, local_rank=local_rank, gpus_per_task=k, node_gpus=node_gpus) == expected


def test_too_few_visible_gpus_for_k_is_an_error() -> None:
    with pytest.raises(DistEnvError, match="needs GPUs 2-3"):
        narrowed_visible("0,1,2", local_rank=1, gpus_per_task=2, node_gpus=4)
    assert task_gpu_indices(2, 3) == [6, 7, 8]


# (cuda, device count, visible, local rank, local world, K) -> device bound before the script
BINDING: list[tuple[bool, int, str | None, int, int, int, str]] = [
    (False, 0, None, 1, 2, 1, "cpu"),
    (True, 0, "", 0, 2, 1, "cpu"),
    (True, 8, None, 3, 8, 1, "cuda:3"),  # a torchrun-style script: cuda:LOCAL_RANK is its GPU
    (True, 8, "0,1,2,3,4,5,6,7", 7, 8, 1, "cuda:7"),
    (True, 1, "5", 3, 8, 1, "cuda:0"),  # one GPU per task (srun --gpus-per-task=1)
    (True, 2, "2,3", 1, 4, 2, "cuda:0"),  # K = 2, narrowed: the first of its own two
    (True, 4, "4,5,6,7", 1, 2, 4, "cuda:0"),
]


@pytest.mark.parametrize(("cuda", "count", "visible", "local_rank", "local_world", "k", "expected"), BINDING)
def test_script_device(cuda: bool, count: int, visible: str | None, local_rank: int, local_world: int, k: int,
                       expected: str) -> None:
    choice = script_device(cuda_available=cuda, device_count=count, visible=visible, rank=local_rank,
                           local_rank=local_rank, local_world_size=local_world, gpus_per_task=k)
    assert choice.name == expected


def test_script_device_refuses_fewer_gpus_than_k() -> None:
    with pytest.raises(DistEnvError, match="sees 1 GPUs but was given 2"):
        script_device(cuda_available=True, device_count=1, visible="3", rank=0, local_rank=0, local_world_size=1,
                      gpus_per_task=2)


def _cfg(**changes: Any) -> RunConfig:
    base: dict[str, Any] = dict(mode="slurm", job_name="t", job_file="/t.py", params={}, nodes=1, gpus_per_node=2,
                                tasks_per_node=2, cpus_per_task=1, job_dir="/j", created="now")
    return RunConfig.model_validate({**base, **changes})


@pytest.mark.parametrize(("changes", "visible", "nvidia", "expected"), [
    ({}, None, False, True),  # a Slurm GPU job: bind (torch decides whether CUDA is there)
    ({"gpus_per_node": 0}, None, True, False),  # a CPU job: never import torch for it
    ({}, "", True, False),  # CUDA_VISIBLE_DEVICES="": no GPU for this task
    ({"mode": "local", "gpus_per_node": 0}, None, True, True),  # orch run on a GPU machine
    ({"mode": "local", "gpus_per_node": 0}, None, False, False),  # orch run without a driver
    ({"mode": "local", "gpus_per_node": 0}, "", True, False),  # orch run --cpu
])
def test_should_bind(changes: dict[str, Any], visible: str | None, nvidia: bool, expected: bool) -> None:
    assert should_bind(_cfg(**changes), visible, nvidia) is expected


@pytest.mark.parametrize(("code", "expected"), [(None, 0), (0, 0), (3, 3), (75, 75), (256 + 7, 7), ("bye", 1)])
def test_exit_code(code: object, expected: int) -> None:
    assert exit_code(SystemExit(code)) == expected


# (--ntasks-per-node, --gpus-per-task, --gpus, script?) -> (tasks per node, GPUs per task)
LAYOUTS: list[tuple[int | None, int | None, int, bool, tuple[int, int]]] = [
    (None, None, 8, False, (8, 1)),
    (None, None, 8, True, (8, 1)),
    (None, 2, 8, True, (4, 2)),
    (None, 8, 8, True, (1, 8)),
    (2, None, 8, True, (2, 4)),  # --gpus 8 --ntasks-per-node 2: 4 GPUs per task
    (4, 2, 8, True, (4, 2)),
    (8, None, 8, False, (8, 1)),
    (3, None, 0, False, (3, 1)),
]


@pytest.mark.parametrize(("tasks", "k", "gpus", "script", "expected"), LAYOUTS)
def test_gpu_layout(tasks: int | None, k: int | None, gpus: int, script: bool, expected: tuple[int, int]) -> None:
    assert gpu_layout(tasks, k, gpus, script=script) == expected


LAYOUT_REFUSALS: list[tuple[int | None, int | None, int, bool, list[str]]] = [
    (None, 3, 8, True, ["not a multiple of --gpus-per-task 3", "1, 2, 4, 8"]),
    (3, None, 8, True, ["cannot be shared evenly", "--ntasks-per-node 8"]),
    (2, None, 8, False, ["built-in DDP entrypoint", "orch submit train.py --gpus 8 --gpus-per-task 4"]),
    (None, 2, 8, False, ["built-in DDP entrypoint"]),
    (3, 2, 8, True, ["--ntasks-per-node 3 x --gpus-per-task 2 is not --gpus 8", "leave out --ntasks-per-node"]),
    (None, 2, 0, True, ["without GPUs"]),
    (9, None, 8, True, ["exceeds --gpus 8"]),
]


@pytest.mark.parametrize(("tasks", "k", "gpus", "script", "named"), LAYOUT_REFUSALS)
def test_gpu_layout_refusals(tasks: int | None, k: int | None, gpus: int, script: bool, named: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        gpu_layout(tasks, k, gpus, script=script)
    text = info.value.message + " HINT " + (info.value.hint or "")
    for word in named:
        assert word in text


def _script_plan(cluster: Path, **request: Any) -> SubmitPlan:
    target = ScriptTarget(kind="script", target=str(DDP), args=["--lr", "0.1"], cwd="/home/user/work")
    req = make_request({"job": str(DDP), "script": target, **request})
    return build_plan(req, load_cluster(cluster), script_job(target), python="/opt/py",
                      now=datetime(2024, 1, 2, 3, 4, 5), token="abcdef", job_root=Path("/home/user/orch-jobs"))


@pytest.mark.parametrize(("request_", "cpus"), [
    ({"gpus": 1}, 12),  # 96 CPUs / 8 GPUs x 1: not the whole node
    ({"gpus": 8}, 12),
    ({"gpus": 8, "gpus_per_task": 2}, 24),
    ({"gpus": 8, "gpus_per_task": 8}, 96),
    ({"gpus": 4, "partition": "debug"}, 8),  # 32 / 4
    ({"gpus": 0, "partition": "cpu", "ntasks_per_node": 4}, 16),  # CPU jobs: the node's CPUs / tasks
])
def test_default_cpus_follow_the_gpus_a_task_holds(write_cluster: Callable[..., Path], request_: dict[str, Any],
                                                   cpus: int) -> None:
    assert _script_plan(write_cluster(), **request_).context.cpus_per_task == cpus


def test_job_file_with_one_gpu_no_longer_takes_the_whole_node(make_plan: MakePlan) -> None:
    assert make_plan(nodes=1, gpus=1).context.cpus_per_task == 12


def test_script_plan_carries_the_script_and_devices(write_cluster: Callable[..., Path]) -> None:
    plan = _script_plan(write_cluster(), nodes=2, gpus=8, gpus_per_task=2)
    cfg = plan.run_config
    assert cfg.script is not None and cfg.script.args == ["--lr", "0.1"] and cfg.gpus_per_task == 2
    assert (cfg.tasks_per_node, cfg.params, cfg.job_name) == (4, {}, "scripts/ddp_train")
    assert [r.devices for r in plan.ranks[:4]] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert [r.device for r in plan.ranks[:2]] == ["gpus 0,1", "gpus 2,3"]
    assert "#SBATCH --ntasks-per-node=4\n" in plan.script and "#SBATCH --cpus-per-task=24\n" in plan.script
    assert json.loads(json.dumps(cfg.model_dump(mode="json")))["script"]["cwd"] == "/home/user/work"


def test_sbatch_environment_drops_sbatch_variables() -> None:
    env, dropped = sbatch_environment({"SBATCH_TIMELIMIT": "1", "SBATCH_PARTITION": "x", "PATH": "/bin",
                                       "SLURM_CONF": "/etc/slurm.conf"})
    assert env == {"PATH": "/bin", "SLURM_CONF": "/etc/slurm.conf"}
    assert dropped == ["SBATCH_PARTITION", "SBATCH_TIMELIMIT"]


# --- the CLI: exit 2, the field and the fix, nothing submitted --------------------------------------

@pytest.fixture
def cli(clean_env: pytest.MonkeyPatch, stubs: Any, write_cluster: Callable[..., Path], tmp_path: Path,
        files: Path) -> dict[str, Any]:
    clean_env.setenv("ORCH_CLUSTER", str(write_cluster()))
    return {"stubs": stubs, "dir": files}


@pytest.mark.parametrize(("argv", "named"), [
    (["submit", "missing.py", "--dry-run"], "does not exist"),
    (["submit", "a dir"], "is a directory"),
    (["submit", "train.py", "--gpus", "8", "--gpus-per-task", "3"], "--gpus-per-task 3"),
    (["submit", "mnist", "--gpus", "8", "--ntasks-per-node", "2"], "built-in DDP entrypoint"),
    (["submit", "train.py", "lr=0.1"], "is a script"),
    (["submit", "mnist", "--", "--lr", "0.1"], "not arguments after --"),
    (["submit", "--gpus", "1"], "needs a JOB"),
    (["status", "--", "x"], "neither a job id nor a job folder"),  # `--` ends every verb's options
    (["run", "a dir", "--nproc", "2"], "is a directory"),
    (["run", "-m", "not.here"], "not importable on this machine"),
    (["run", "--resume", "somewhere", "--", "--lr", "1"], "--resume takes no script"),
    (["submit", "train.py", "--sbatch-arg", "nodes=3"], "use --nodes instead"),
    (["submit", "train.py", "--sbatch-arg=--time=1"], "use --time instead"),
    (["submit", "train.py", "--sbatch-arg", "C=a100"], "one-letter form"),
    (["submit", "train.py", "--sbatch-arg", "no such"], "not an option name"),
    (["submit", "train.py", "--constraint", "a", "--sbatch-arg", "constraint=b"], "given twice"),
    (["submit", "train.py", "--env", "RANK=1"], "sets RANK for every task"),
    (["submit", "train.py", "--env", "SLURM_PROCID=1"], "sets SLURM_PROCID"),
    (["submit", "train.py", "--env", "1X=1"], "not a valid environment variable name"),
    (["submit", "train.py", "--env", "NOVALUE"], "not KEY=VALUE"),
    (["submit", "train.py", "--env", "A=1", "--env", "A=2"], "given twice"),
    (["submit", "train.py", "--container-image", "x.sif"], "without a container runtime"),
])
def test_cli_refusals(cli: dict[str, Any], capsys: pytest.CaptureFixture[str], argv: list[str], named: str) -> None:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert named in err and "HINT:" in err and "Traceback" not in err
    assert cli["stubs"].records("sbatch") == []


def test_cli_dry_run_shows_the_chosen_form(cli: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "train.py", "--gpus", "4", "--gpus-per-task", "2", "--dry-run", "--", "a b"]) == 0
    out = capsys.readouterr().out
    assert f"# runs: python {cli['dir'] / 'train.py'} 'a b'\n" in out
    assert "gpus 0,1" in out and "gpus 2,3" in out
    assert main(["submit", "-m", "not.here", "--gpus", "1", "--dry-run", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs"]["kind"] == "module" and "must exist on the compute nodes" in data["runs"]["note"]
    assert data["ranks"][0]["devices"] == [0]
    assert main(["submit", "-m", "not.here", "--gpus", "1", "--dry-run"]) == 0
    assert "# note: module not.here is not importable" in capsys.readouterr().out
    assert os.listdir(cli["dir"]).count("jobs") == 0 and cli["stubs"].records() == []


def test_sbatch_runs_without_the_users_sbatch_variables(cli: dict[str, Any], caplog: pytest.LogCaptureFixture,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SBATCH_TIMELIMIT", "1")
    monkeypatch.setenv("SBATCH_ACCOUNT", "other")
    assert main(["submit", "train.py", "--gpus", "1", "--", "x"]) == 0
    assert "ignoring SBATCH_ACCOUNT, SBATCH_TIMELIMIT" in caplog.text  # (the e2e test sees it on stderr)
    [call] = cli["stubs"].records("sbatch")
    assert not [k for k in call["env"] if k.startswith("SBATCH_")]
    assert "--time=04:00:00" in call["sbatch_options"]


def test_a_script_dry_run_imports_neither_torch_nor_the_script(tmp_path: Path,
                                                               write_cluster: Callable[..., Path]) -> None:
    (tmp_path / "train.py").write_text("raise SystemExit('the script was imported')\n", encoding="utf-8")
    code = ("import sys\nfrom orchestrator.cli import main\n"
            f"rc = main(['submit', 'train.py', '--cluster', {str(write_cluster())!r}, '--dry-run', '--', 'a'])\n"
            "bad = [m for m in ('torch', 'torchvision') if m in sys.modules]\n"
            "assert rc == 0 and not bad, (rc, bad)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(("sbatch", "where", "words"), [
    ({"defaults": {"sbatch": {"nodes": 3}}}, "defaults.sbatch", "use --nodes instead"),
    ({"defaults": {"sbatch": {"C": "a100"}}}, "defaults.sbatch", "one-letter form"),
    ({"env": {"1X": "1"}}, "env", "not a valid environment variable name"),
])
def test_cluster_yaml_refuses_what_the_command_line_refuses(write_cluster: Callable[..., Path],
                                                            sbatch: dict[str, Any], where: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_cluster(write_cluster(**sbatch))
    assert where in info.value.message and words in info.value.message


HOSTS = [f"gpu{i:03d}" for i in range(1, 9)]


@pytest.mark.parametrize(("extras", "nodes", "expected"), [
    ({}, 2, ["gpu001", "gpu002"]),
    ({"nodelist": "gpu[007-008]"}, 2, ["gpu007", "gpu008"]),
    ({"nodelist": "gpu008,gpu003"}, 3, ["gpu001", "gpu003", "gpu008"]),  # node order, as Slurm ranks them
    ({"exclude": "gpu[001-002]"}, 2, ["gpu003", "gpu004"]),
    ({"nodelist": "gpu005", "exclude": "gpu001"}, 2, ["gpu002", "gpu005"]),
    ({"nodelist": None}, 1, ["gpu001"]),  # a flag form: nothing to simulate
    ({"nodelist": "/home/me/nodes.txt"}, 1, ["gpu001"]),  # a file of names: not read by the dry run
])
def test_placement(extras: dict[str, str | None], nodes: int, expected: list[str]) -> None:
    from orchestrator.spec.extras import placement

    assert placement(HOSTS, extras, nodes, "gpu") == expected


@pytest.mark.parametrize(("extras", "nodes", "words"), [
    ({"nodelist": "cpu001"}, 1, "not a node of partition gpu"),
    ({"nodelist": "gpu[001-003]"}, 2, "--nodelist names 3 nodes but --nodes is 2"),
    ({"nodelist": "gpu001", "exclude": "gpu001"}, 1, "in both --nodelist and --exclude"),
    ({"exclude": "gpu[001-007]"}, 2, "--exclude leaves 1 node(s)"),
    ({"exclude": "gpu[1"}, 1, "never closed"),
])
def test_placement_refusals(extras: dict[str, str | None], nodes: int, words: str) -> None:
    from orchestrator.spec.extras import placement

    with pytest.raises(ConfigError, match=re.escape(words)):
        placement(HOSTS, extras, nodes, "gpu")


def test_dry_run_table_follows_nodelist(cli: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "train.py", "--nodes", "2", "--gpus", "1", "--nodelist", "gpu[010-011]", "--dry-run",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["host"] for r in data["ranks"]] == ["gpu010", "gpu011"]
    assert {r["master_addr"] for r in data["ranks"]} == {"gpu010"}
