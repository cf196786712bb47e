"""sbatch templates: golden scripts, bash -n and shellcheck for every shape, the quoting filters,
refusals, --templates overrides, and the rendered script executed with stub srun/scontrol
(launch arguments, MASTER_ADDR/MASTER_PORT, requeue, signal forwarding)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support import TESTS, check_golden, load_stub_module

from orchestrator.env import masterport
from orchestrator.errors import ConfigError
from orchestrator.slurm.plan import SubmitPlan, write_job_dir
from orchestrator.slurm.quoting import sbatch_quote, shell_quote
from orchestrator.slurm.render import (
    BUILTIN_TEMPLATES,
    MULTI_NODE_TEMPLATE,
    SINGLE_NODE_TEMPLATE,
    ScriptContext,
    check_templates_dir,
    render_script,
    template_sources,
)

if TYPE_CHECKING:
    from support import Stubs

STUBS_DIR = TESTS / "stubs"
SHELLCHECK = shutil.which("shellcheck")
PORT_RANGE = masterport.DEFAULT_PORT_RANGE

MakePlan = Callable[..., SubmitPlan]


STUB = load_stub_module()

# Values that break naive quoting, for bash and for sbatch's own #SBATCH parser.
NASTY = [
    "plain", "with space", "it's", 'say "hi"', "back\\slash", "trail\\", "$(touch /tmp/orch-pwned)",
    "`id`", "a;b", "a && b", "a | b", "*", "?[a]", "~root", "-leading-dash", "--job-name=x", "#hash",
    "x #comment", "unicode ✓ ünï", "tab\there", "packjob", "HetJob-x", "cr\rin", "", " lead", "trail ",
    "%j %t %%", "$HOME", "${PATH}", "!event", "a\\\"b'c", "'", '"', "\\",
]


def test_golden_1x8(make_plan: MakePlan) -> None:
    plan = make_plan(nodes=1, gpus=8, job_name="golden")
    assert plan.context.template_name == SINGLE_NODE_TEMPLATE
    check_golden("sbatch_1x8.sh", plan.script)


def test_golden_2x8(make_plan: MakePlan) -> None:
    plan = make_plan(nodes=2, gpus=8, job_name="golden")
    assert plan.context.template_name == MULTI_NODE_TEMPLATE
    check_golden("sbatch_2x8.sh", plan.script)


# name -> (cluster.yaml sections, request)
SHAPES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "1x8": ({}, {"nodes": 1, "gpus": 8}),
    "2x8": ({}, {"nodes": 2, "gpus": 8}),
    "64x8": ({}, {"nodes": 64, "gpus": 8, "time": "2-00:00:00"}),
    "gres-typed": ({"launcher": {"gpu_flag": "gres"}}, {"nodes": 2, "gpus": 4}),
    "gres-untyped": ({"launcher": {"gpu_flag": "gres"}}, {"partition": "debug", "nodes": 4, "gpus": 4}),
    "account-qos": ({"defaults": {"account": "proj a'b", "qos": "high"}},
                    {"nodes": 2, "gpus": 8, "qos": "low $(prio)"}),
    "cpu": ({}, {"partition": "cpu", "gpus": 0, "ntasks_per_node": 4, "nodes": 3}),
    "no-requeue-usr1": ({"launcher": {"requeue": False, "preempt_signal": "USR1"}}, {"nodes": 2, "gpus": 2}),
    "setup-env": ({"launcher": {"setup": ["module load cuda/12.4", 'export PATH="/opt/cuda/bin:$PATH"']},
                   "env": {"WEIRD": "a $(b) `c` 'd' \"e\" ; f && g *", "EMPTY": ""}},
                  {"nodes": 2, "gpus": 8}),
    "hostile-name": ({}, {"nodes": 1, "gpus": 1, "job_name": "x'; rm -rf / #\"$(id)`id` packjob hetjob \\"}),
    "unlimited": ({"partitions": [{"name": "open", "nodes": "n[1-2]", "gpus_per_node": 2,
                                   "cpus_per_node": 8, "mem_per_node": 16000}],
                   "defaults": {"partition": "open", "time": "UNLIMITED"}}, {"nodes": 2, "gpus": 2}),
}


@pytest.fixture(params=sorted(SHAPES))
def shaped_plan(request: pytest.FixtureRequest, make_plan: MakePlan,
                write_cluster: Callable[..., Path]) -> SubmitPlan:
    sections, req = SHAPES[request.param]
    return make_plan(write_cluster(**sections), **req)


def test_every_shape_passes_bash_n(shaped_plan: SubmitPlan, tmp_path: Path) -> None:
    script = tmp_path / "sbatch.sh"
    script.write_text(shaped_plan.script, encoding="utf-8")
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(SHELLCHECK is None, reason="shellcheck is not installed (apt-get install -y shellcheck)")
def test_every_shape_passes_shellcheck(shaped_plan: SubmitPlan, tmp_path: Path) -> None:
    script = tmp_path / "sbatch.sh"
    script.write_text(shaped_plan.script, encoding="utf-8")
    proc = subprocess.run([str(SHELLCHECK), "--shell=bash", "--severity=style", str(script)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# What sbatch must read for each shape, worked out by hand from tests/support/environment.py's TEST_CLUSTER (not
# from the plan): partition gpu = 96 CPUs, 1000G = 1,024,000 MB, 8 a100 per node; debug = 32 CPUs, 256G,
# 4 untyped GPUs, max 02:00:00; cpu = 64 CPUs, 256G; defaults.time 04:00:00; preempt_before 180.
# CPUs per task = node CPUs / the node's GPUs x the task's GPUs (CPU jobs: node CPUs / tasks per node);
# memory per GPU = node memory / the node's GPUs (not the requested ones); CPU jobs get their CPUs' share
# of the node's memory.
_GPU = ["--open-mode=append", "--signal=B:USR2@180", "--requeue"]
EXPECTED_OPTIONS: dict[str, tuple[str, list[str]]] = {  # shape -> (job folder name, options but the logs)
    "1x8": ("tiny", ["--job-name=tiny", "--nodes=1", "--ntasks-per-node=8", "--gpus-per-node=a100:8",
                     "--cpus-per-task=12", "--mem-per-gpu=128000M", "--time=04:00:00", "--partition=gpu", *_GPU]),
    "2x8": ("tiny", ["--job-name=tiny", "--nodes=2", "--ntasks-per-node=8", "--gpus-per-node=a100:8",
                     "--cpus-per-task=12", "--mem-per-gpu=128000M", "--time=04:00:00", "--partition=gpu", *_GPU]),
    "64x8": ("tiny", ["--job-name=tiny", "--nodes=64", "--ntasks-per-node=8", "--gpus-per-node=a100:8",
                      "--cpus-per-task=12", "--mem-per-gpu=128000M", "--time=2-00:00:00", "--partition=gpu",
                      *_GPU]),
    "account-qos": ("tiny", ["--job-name=tiny", "--nodes=2", "--ntasks-per-node=8", "--gpus-per-node=a100:8",
                             "--cpus-per-task=12", "--mem-per-gpu=128000M", "--time=04:00:00", "--partition=gpu",
                             "--account=proj a'b", "--qos=low $(prio)", *_GPU]),  # --qos beats defaults.qos
    "cpu": ("tiny", ["--job-name=tiny", "--nodes=3", "--ntasks-per-node=4", "--cpus-per-task=16",
                     "--mem=262144M", "--time=04:00:00", "--partition=cpu", *_GPU]),
    "gres-typed": ("tiny", ["--job-name=tiny", "--nodes=2", "--ntasks-per-node=4", "--gres=gpu:a100:4",
                            "--cpus-per-task=12", "--mem-per-gpu=128000M", "--time=04:00:00", "--partition=gpu",
                            *_GPU]),
    "gres-untyped": ("tiny", ["--job-name=tiny", "--nodes=4", "--ntasks-per-node=4", "--gres=gpu:4",
                              "--cpus-per-task=8", "--mem-per-gpu=65536M", "--time=02:00:00",
                              "--partition=debug", *_GPU]),
    "hostile-name": ("x_rm_-rf_id_id_packjob_hetjob", [
        "--job-name=x'; rm -rf / #\"$(id)`id` packjob hetjob \\", "--nodes=1", "--ntasks-per-node=1",
        "--gpus-per-node=a100:1", "--cpus-per-task=12", "--mem-per-gpu=128000M", "--time=04:00:00",
        "--partition=gpu", *_GPU]),
    "no-requeue-usr1": ("tiny", ["--job-name=tiny", "--nodes=2", "--ntasks-per-node=2", "--gpus-per-node=a100:2",
                                 "--cpus-per-task=12", "--mem-per-gpu=128000M", "--time=04:00:00",
                                 "--partition=gpu", "--open-mode=append", "--signal=B:USR1@180"]),
    "setup-env": ("tiny", ["--job-name=tiny", "--nodes=2", "--ntasks-per-node=8", "--gpus-per-node=a100:8",
                           "--cpus-per-task=12", "--mem-per-gpu=128000M", "--time=04:00:00", "--partition=gpu",
                           *_GPU]),
    "unlimited": ("tiny", ["--job-name=tiny", "--nodes=2", "--ntasks-per-node=2", "--gpus-per-node=2",
                           "--cpus-per-task=4", "--mem-per-gpu=8000M", "--time=UNLIMITED", "--partition=open",
                           *_GPU]),
}


def test_every_shape_has_an_expectation() -> None:
    assert set(EXPECTED_OPTIONS) == set(SHAPES)


def test_every_shape_has_the_sbatch_options_slurm_reads(shaped_plan: SubmitPlan,
                                                        request: pytest.FixtureRequest) -> None:
    folder, expected = EXPECTED_OPTIONS[request.node.callspec.params["shaped_plan"]]
    options = STUB.sbatch_script_options(shaped_plan.script)
    log = f"/home/user/orch-jobs/{folder}-20240102-030405-abcdef/logs/slurm-%j.out"
    assert [o for o in options if o.startswith(("--output=", "--error="))] == [f"--output={log}", f"--error={log}"]
    assert [o for o in options if not o.startswith(("--output=", "--error="))] == expected


def test_shapes_pick_gpu_flag_and_type(make_plan: MakePlan, write_cluster: Callable[..., Path]) -> None:
    assert "#SBATCH --gpus-per-node=a100:8\n" in make_plan(nodes=1, gpus=8).script
    gres = write_cluster(launcher={"gpu_flag": "gres"})
    assert "#SBATCH --gres=gpu:a100:2\n" in make_plan(gres, nodes=1, gpus=2).script
    assert "#SBATCH --gres=gpu:4\n" in make_plan(gres, partition="debug", nodes=1, gpus=4).script
    cpu = make_plan(partition="cpu", gpus=0, ntasks_per_node=4).script
    assert "--gres" not in cpu and "--gpus" not in cpu and "#SBATCH --mem=" in cpu


def test_account_and_qos_only_when_set(make_plan: MakePlan, write_cluster: Callable[..., Path]) -> None:
    plain = make_plan(nodes=1, gpus=1).script
    assert "--account" not in plain and "--qos" not in plain
    both = make_plan(write_cluster(defaults={"account": "proj"}), nodes=1, gpus=1, qos="high").script
    assert "#SBATCH --account=proj\n" in both and "#SBATCH --qos=high\n" in both


def test_shell_quote_round_trips_through_bash() -> None:
    script = "printf '%s\\0' " + " ".join(shell_quote(v) for v in NASTY) + "\n"
    proc = subprocess.run(["bash", "-c", script], capture_output=True, check=True)
    assert proc.stdout.decode("utf-8").split("\0")[:-1] == NASTY


@pytest.mark.parametrize("value", NASTY)
def test_sbatch_quote_round_trips_through_sbatchs_parser(value: str) -> None:
    line = f"#SBATCH --job-name={sbatch_quote(value)}"
    assert STUB.sbatch_script_options(line) == [f"--job-name={value}"]


def test_stub_parser_matches_slurms_rules() -> None:
    """The stub's parser follows src/sbatch/opt.c, so the quoting test above means something."""
    options = STUB.sbatch_script_options
    assert options('#SBATCH --job-name=a b') == ["--job-name=a", "b"]
    assert options("#SBATCH --job-name='a b' # comment") == ["--job-name=a b"]
    assert options('#SBATCH --job-name=a\\ b\\#c') == ["--job-name=a", "b#c"]  # unlike bash: no escaped space
    assert options("#SBATCH --job-name='a\\'b'") == ["--job-name=a'b"]  # backslash escapes inside quotes too
    assert options("#SBATCH --comment=my-packjob") == ["--comment=my-"]  # Slurm blanks "packjob"
    assert options("#!/bin/bash\n#SBATCH -N 2\necho\n#SBATCH --late") == ["-N", "2"]  # stops at a command


def test_finalize_refuses_an_unquoted_value(tmp_path: Path, make_plan: MakePlan) -> None:
    user = tmp_path / "tpl"
    user.mkdir()
    (user / SINGLE_NODE_TEMPLATE).write_text(
        '{% extends "base.sbatch.j2" %}\n{% block master_addr %}\nMASTER_ADDR={{ master_addr }}\n'
        "{% endblock %}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="without a quoting filter") as info:
        make_plan(nodes=1, gpus=1, templates=str(user))
    assert "| q" in (info.value.hint or "")


def _context(**changes: Any) -> ScriptContext:
    base: dict[str, Any] = dict(job_name="t", nodes=2, ntasks_per_node=2, gpus_per_node=2, cpus_per_task=4,
                                time="01:00:00", partition="gpu", job_dir="/jobs/t-1", python="/usr/bin/py",
                                gpu_spec="2", mem_per_gpu_mb=1000, env={"A": "1"}, setup=("true",))
    base.update(changes)
    return ScriptContext(**base)


@pytest.mark.parametrize(("changes", "field"), [
    ({"job_name": "two\nlines"}, "--job-name"),
    ({"job_name": "nul\0"}, "--job-name"),
    ({"job_name": "carriage\rreturn"}, "--job-name"),
    ({"job_name": "bad \udc80 surrogate"}, "--job-name"),
    ({"account": "acct\n"}, "--account"),
    ({"qos": "q\nx"}, "--qos"),
    ({"partition": "p\n"}, "--partition"),
    ({"python": "/usr/bin/py\nthon"}, "launcher.python"),
    ({"env": {"A": "x\ny"}}, "env of cluster.yaml: A"),
    ({"env": {"A": "x\0y"}}, "env of cluster.yaml: A"),
    ({"setup": ("ok", "dos line\r")}, "launcher.setup[1]"),
    ({"setup": ("nul\0",)}, "launcher.setup[0]"),
    ({"job_dir": "/jobs/100%"}, "launcher.job_root"),
    ({"job_dir": "/jobs/back\\slash"}, "launcher.job_root"),
    ({"job_dir": "relative/dir"}, "absolute"),
])
def test_values_bash_or_slurm_cannot_carry_are_refused(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        render_script(_context(**changes))
    assert field in str(info.value) + (info.value.hint or "")


def test_multiline_setup_entries_are_the_users_code(tmp_path: Path) -> None:
    """A setup entry may span lines (a YAML block): it is shell code, inserted verbatim."""
    text = render_script(_context(setup=("if true; then\n  export X=1\nfi",)))
    assert "\nif true; then\n  export X=1\nfi\n" in text


def test_user_templates_override_and_fall_back(tmp_path: Path, make_plan: MakePlan) -> None:
    user = tmp_path / "tpl"
    user.mkdir()
    (user / MULTI_NODE_TEMPLATE).write_text(
        '{% extends "base.sbatch.j2" %}\n{% block master_addr %}\n# site rule\n'
        "MASTER_ADDR={{ master_addr_override | q }}\n{% endblock %}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="master_addr_override") as info:  # StrictUndefined names it
        make_plan(nodes=2, gpus=1, templates=str(user))
    assert "job_name" in (info.value.hint or "")
    (user / MULTI_NODE_TEMPLATE).write_text(
        '{% extends "base.sbatch.j2" %}\n{% block master_addr %}\n# site rule\n'
        'MASTER_ADDR="$(hostname -f)"\n{% endblock %}\n', encoding="utf-8")
    multi = make_plan(nodes=2, gpus=1, templates=str(user)).script
    assert '# site rule\nMASTER_ADDR="$(hostname -f)"\n' in multi and "scontrol show node" not in multi
    assert "#SBATCH --nodes=2\n" in multi  # the built-in base still renders the rest
    single = make_plan(nodes=1, gpus=1, templates=str(user)).script
    assert "MASTER_ADDR=127.0.0.1\n" in single  # single_node.sbatch.j2 falls back to the built-in
    sources = template_sources(user)
    assert sources[MULTI_NODE_TEMPLATE] == user / MULTI_NODE_TEMPLATE
    assert sources[SINGLE_NODE_TEMPLATE] == BUILTIN_TEMPLATES / SINGLE_NODE_TEMPLATE


def test_templates_dir_must_hold_templates(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        check_templates_dir(tmp_path / "missing")
    with pytest.raises(ConfigError, match="none of the template files"):
        check_templates_dir(tmp_path)


def test_template_syntax_error_names_file_and_line(tmp_path: Path, make_plan: MakePlan) -> None:
    (tmp_path / SINGLE_NODE_TEMPLATE).write_text('{% extends "base.sbatch.j2" %}\n{% block x %}\n',
                                                 encoding="utf-8")
    with pytest.raises(ConfigError, match=r"single_node.sbatch.j2, line \d"):
        make_plan(nodes=1, gpus=1, templates=str(tmp_path))


# --- the rendered script, executed with stub srun / scontrol on PATH ---------------------------

def _job(make_plan: MakePlan, tmp_path: Path, cluster: Path | None = None, **request: Any) -> Path:
    plan = make_plan(cluster, python=sys.executable, job_root=tmp_path / "jobs", **request)
    return write_job_dir(plan)


def _run(job_dir: Path, stubs: Stubs, **env: str) -> subprocess.CompletedProcess[str]:
    slurm = {"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "gpu[001-002]", "SLURM_JOB_NUM_NODES": "2"}
    return subprocess.run(["bash", str(job_dir / "sbatch.sh")], env=stubs.env(**{**slurm, **env}),
                          capture_output=True, text=True, timeout=120, cwd=job_dir, check=False)


def _expected_srun(job_dir: Path, nodes: int, tasks: int, cpus: int) -> list[str]:
    log = f"{job_dir}/logs/%j-rank%t.out"
    return ["--kill-on-bad-exit=1", "--wait=60", "--export=ALL", f"--nodes={nodes}",
            f"--ntasks-per-node={tasks}", f"--cpus-per-task={cpus}", f"--output={log}", f"--error={log}",
            "--open-mode=append", sys.executable, "-m", "orchestrator.runtime.launch",
            "--job-dir", str(job_dir)]


def test_executed_multi_node_script_launches_srun_with_master(make_plan: MakePlan, tmp_path: Path,
                                                              stubs: Stubs) -> None:
    job_dir = _job(make_plan, tmp_path, nodes=2, gpus=8)
    proc = _run(job_dir, stubs, ORCH_STUB_NODEADDR="10.1.2.3")
    assert proc.returncode == 0, proc.stderr
    assert stubs.argvs("scontrol") == [["show", "hostnames", "gpu[001-002]"], ["show", "node", "gpu001"]]
    [srun] = stubs.records("srun")
    assert srun["argv"] == _expected_srun(job_dir, 2, 8, 12)
    port = masterport.master_port("77", 0, PORT_RANGE)
    assert srun["env"]["MASTER_ADDR"] == "10.1.2.3"
    assert srun["env"]["MASTER_PORT"] == str(port)
    assert srun["env"]["ORCH_JOB_DIR"] == str(job_dir)
    assert srun["env"]["NCCL_SOCKET_IFNAME"] == "ib0"
    assert f"MASTER_ADDR=10.1.2.3 MASTER_PORT={port}" in proc.stderr


def test_executed_script_start_line_numbers_attempt_and_requeue_as_attempts_json(make_plan: MakePlan, tmp_path: Path,
                                                                                 stubs: Stubs) -> None:
    """A job submitted again without a blamed node gets its attempt number as the script's argument: its start
    line says attempt 1 (as attempts.json and ORCH_ATTEMPT do), and the requeue count apart, not "restart 0"."""
    job_dir = _job(make_plan, tmp_path, nodes=2, gpus=2)
    slurm = {"SLURM_JOB_ID": "39", "SLURM_JOB_NODELIST": "gpu[001-002]", "SLURM_JOB_NUM_NODES": "2"}
    proc = subprocess.run(["bash", str(job_dir / "sbatch.sh"), "1"], env=stubs.env(**slurm), capture_output=True,
                          text=True, timeout=120, cwd=job_dir, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "orch: job 39 (attempt 1, requeue 0) on gpu[001-002]: MASTER_ADDR=" in proc.stderr, proc.stderr
    [srun] = stubs.records("srun")
    assert srun["env"]["ORCH_ATTEMPT"] == "1"
    assert "orch: job 77 (attempt 0, requeue 2) on " in _run(job_dir, stubs, SLURM_RESTART_COUNT="2").stderr


def test_executed_script_drops_torchrun_rank_variables(make_plan: MakePlan, tmp_path: Path,
                                                       stubs: Stubs) -> None:
    # Inherited from a submitting shell, they would win over Slurm's in derive(): one rank for all.
    job_dir = _job(make_plan, tmp_path, nodes=2, gpus=2)
    leftovers = {"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1",
                 "NODE_RANK": "1", "GROUP_WORLD_SIZE": "2"}
    assert _run(job_dir, stubs, **leftovers).returncode == 0
    [srun] = stubs.records("srun")
    assert not set(leftovers) & set(srun["env"])


def test_executed_script_restart_count_moves_the_port(make_plan: MakePlan, tmp_path: Path,
                                                      stubs: Stubs) -> None:
    job_dir = _job(make_plan, tmp_path, nodes=2, gpus=2)
    assert _run(job_dir, stubs, SLURM_RESTART_COUNT="2").returncode == 0
    [srun] = stubs.records("srun")
    assert srun["env"]["MASTER_PORT"] == str(masterport.master_port("77", 2, PORT_RANGE))
    assert srun["env"]["MASTER_PORT"] != str(masterport.master_port("77", 0, PORT_RANGE))


def test_executed_script_falls_back_to_the_node_name(make_plan: MakePlan, tmp_path: Path,
                                                     stubs: Stubs) -> None:
    job_dir = _job(make_plan, tmp_path, nodes=2, gpus=2)
    assert _run(job_dir, stubs, ORCH_STUB_SHOW_NODE_RC="1").returncode == 0
    assert stubs.records("srun")[0]["env"]["MASTER_ADDR"] == "gpu001"


def test_executed_single_node_script_uses_loopback(make_plan: MakePlan, tmp_path: Path, stubs: Stubs) -> None:
    job_dir = _job(make_plan, tmp_path, nodes=1, gpus=4)
    proc = _run(job_dir, stubs, SLURM_JOB_NODELIST="gpu001", SLURM_JOB_NUM_NODES="1")
    assert proc.returncode == 0, proc.stderr
    assert stubs.records("scontrol") == []
    [srun] = stubs.records("srun")
    assert srun["argv"] == _expected_srun(job_dir, 1, 4, 12)  # 96 CPUs / 8 GPUs x 1 GPU per task
    assert srun["env"]["MASTER_ADDR"] == "127.0.0.1"


def test_executed_script_exits_with_sruns_code(make_plan: MakePlan, tmp_path: Path, stubs: Stubs) -> None:
    job_dir = _job(make_plan, tmp_path, nodes=2, gpus=2)
    assert _run(job_dir, stubs, ORCH_STUB_SRUN_RC="3").returncode == 3
    assert [a[0] for a in stubs.argvs("scontrol")] == ["show", "show"]  # no requeue


@pytest.mark.parametrize(("array", "expected_id"), [({}, "77"),
                                                    ({"SLURM_ARRAY_JOB_ID": "70", "SLURM_ARRAY_TASK_ID": "3"},
                                                     "70_3")])
def test_executed_script_requeues_when_the_runtime_asks(make_plan: MakePlan, tmp_path: Path, stubs: Stubs,
                                                        array: dict[str, str], expected_id: str) -> None:
    job_dir = _job(make_plan, tmp_path, nodes=2, gpus=2)
    proc = _run(job_dir, stubs, ORCH_STUB_SRUN_TOUCH_AT_EXIT=str(job_dir / "requeue"), ORCH_STUB_SRUN_RC="0",
                **array)
    assert proc.returncode == 0, proc.stderr
    assert stubs.argvs("scontrol")[-1] == ["requeue", expected_id]
    assert not (job_dir / "requeue").exists()
    assert f"requeueing job {expected_id}" in proc.stderr


def test_executed_script_reports_a_failed_requeue(make_plan: MakePlan, tmp_path: Path, stubs: Stubs) -> None:
    job_dir = _job(make_plan, tmp_path, nodes=2, gpus=2)
    proc = _run(job_dir, stubs, ORCH_STUB_SRUN_TOUCH_AT_EXIT=str(job_dir / "requeue"),
                ORCH_STUB_SCONTROL_RC="1")
    assert proc.returncode == 1
    assert "scontrol requeue 77 failed" in proc.stderr


def test_executed_script_without_requeue_leaves_the_file(make_plan: MakePlan, tmp_path: Path, stubs: Stubs,
                                                         write_cluster: Callable[..., Path]) -> None:
    job_dir = _job(make_plan, tmp_path, write_cluster(launcher={"requeue": False}), nodes=2, gpus=2)
    proc = _run(job_dir, stubs, ORCH_STUB_SRUN_TOUCH_AT_EXIT=str(job_dir / "requeue"), ORCH_STUB_SRUN_RC="4")
    assert proc.returncode == 4
    assert (job_dir / "requeue").exists()
    assert all(a[0] != "requeue" for a in stubs.argvs("scontrol"))


def _start_and_signal(job_dir: Path, stubs: Stubs, sig: signal.Signals, **env: str) -> subprocess.Popen[str]:
    slurm = {"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "gpu[001-002]", "ORCH_STUB_SRUN_SLEEP": "60"}
    proc = subprocess.Popen(["bash", str(job_dir / "sbatch.sh")], env=stubs.env(**{**slurm, **env}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=job_dir)
    deadline = time.monotonic() + 60
    while not stubs.records("srun"):  # the stub records its call after installing its handlers
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise AssertionError(f"srun was not started: {proc.communicate()}")
        time.sleep(0.05)
    proc.send_signal(sig)
    return proc


def test_preemption_signal_is_forwarded_to_srun_then_requeued(make_plan: MakePlan, tmp_path: Path,
                                                              stubs: Stubs) -> None:
    job_dir = _job(make_plan, tmp_path, nodes=2, gpus=2)
    proc = _start_and_signal(job_dir, stubs, signal.SIGUSR2, ORCH_STUB_SRUN_TOUCH=str(job_dir / "requeue"))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert [r["signal"] for r in stubs.records("srun", event="signal")] == ["USR2"]
    assert stubs.argvs("scontrol")[-1] == ["requeue", "77"]
    assert "got SIGUSR2; forwarding it to the tasks" in err


def test_script_waits_for_srun_after_the_signal(make_plan: MakePlan, tmp_path: Path, stubs: Stubs) -> None:
    """`wait` returns early on a trapped signal; the script must wait again and exit with srun's code."""
    job_dir = _job(make_plan, tmp_path, nodes=2, gpus=2)
    proc = _start_and_signal(job_dir, stubs, signal.SIGUSR2, ORCH_STUB_SRUN_AFTER_SIGNAL="1",
                             ORCH_STUB_SRUN_RC="5")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 5, err  # not 140 (128 + SIGUSR2) from the interrupted wait
    assert [r["rc"] for r in stubs.records("srun", event="exit")] == [5]


def test_configured_signal_is_the_one_trapped(make_plan: MakePlan, tmp_path: Path, stubs: Stubs,
                                              write_cluster: Callable[..., Path]) -> None:
    job_dir = _job(make_plan, tmp_path, write_cluster(launcher={"preempt_signal": "USR1"}), nodes=2, gpus=2)
    assert "#SBATCH --signal=B:USR1@180\n" in (job_dir / "sbatch.sh").read_text(encoding="utf-8")
    proc = _start_and_signal(job_dir, stubs, signal.SIGUSR1)
    proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert [r["signal"] for r in stubs.records("srun", event="signal")] == ["USR1"]
