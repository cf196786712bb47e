"""orch submit --preflight[=exclude]: the rendered preflight step (golden, bash -n, shellcheck), the
verdict's blamed nodes, the decision after a failed preflight (stop, exclude, give up) and its CLI.
The real run on the local Slurm cluster: tests/e2e/test_e2e_preflight.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import ROOT, check_golden

from orchestrator.records.jobcreate import write_run_config
from orchestrator.slurm.plan import SubmitPlan
from orchestrator.slurm.preflight import Decision, decide, main, status_note
from orchestrator.spec.runconfig import Preflight, RunConfig
from orchestrator.task.selftest import AllreducePoint, RankReport, evaluate, failed_nodes, selftest_params

MakePlan = Callable[..., SubmitPlan]
SHELLCHECK = shutil.which("shellcheck")

SHAPES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "stop-1x8": ({}, {"nodes": 1, "gpus": 8, "preflight": "stop"}),
    "exclude-2x8": ({}, {"nodes": 2, "gpus": 8, "preflight": "exclude"}),
    "exclude-pyxis": ({}, {"nodes": 2, "gpus": 8, "preflight": "exclude", "container_runtime": "pyxis",
                           "container_image": "nvcr.io/x/pt:24.05 $(id)"}),
    "stop-apptainer": ({}, {"nodes": 2, "gpus": 2, "preflight": "stop", "container_runtime": "apptainer",
                            "container_image": "/img/it's.sif"}),
    "cluster-default": ({"launcher": {"preflight": "exclude"}}, {"nodes": 2, "gpus": 2}),
    "hostile-name": ({}, {"nodes": 1, "gpus": 1, "preflight": "exclude",
                          "job_name": "x'; rm -rf / #\"$(id)`id` packjob \\"}),
}


@pytest.fixture(params=sorted(SHAPES))
def preflight_plan(request: pytest.FixtureRequest, make_plan: MakePlan,
                   write_cluster: Callable[..., Path]) -> SubmitPlan:
    sections, req = SHAPES[request.param]
    return make_plan(write_cluster(**sections), **req)


def test_golden_preflight_exclude_2x8(make_plan: MakePlan) -> None:
    plan = make_plan(nodes=2, gpus=8, job_name="golden", preflight="exclude")
    check_golden("sbatch_preflight_2x8.sh", plan.script)


def test_preflight_scripts_pass_bash_n(preflight_plan: SubmitPlan, tmp_path: Path) -> None:
    script = tmp_path / "sbatch.sh"
    script.write_text(preflight_plan.script, encoding="utf-8")
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(SHELLCHECK is None, reason="shellcheck is not installed (apt-get install -y shellcheck)")
def test_preflight_scripts_pass_shellcheck(preflight_plan: SubmitPlan, tmp_path: Path) -> None:
    script = tmp_path / "sbatch.sh"
    script.write_text(preflight_plan.script, encoding="utf-8")
    proc = subprocess.run([str(SHELLCHECK), "--shell=bash", "--severity=style", str(script)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_preflight_step_runs_before_the_job_in_the_same_shape(preflight_plan: SubmitPlan) -> None:
    script = preflight_plan.script
    pre = script.index("orchestrator.runtime.launch --job-dir \"$JOB_DIR\" --preflight")
    main_step = script.index("orchestrator.runtime.launch --job-dir \"$JOB_DIR\" &")
    assert pre < main_step
    ctx = preflight_plan.context
    shape = f"--nodes={ctx.nodes} --ntasks-per-node={ctx.ntasks_per_node} --cpus-per-task={ctx.cpus_per_task}"
    assert script.count(shape) == 2  # the preflight step and the job's step
    if ctx.container_runtime == "pyxis":
        assert script.count("--container-image=") == 2
    assert ("sbatch --parsable \"${preflight_args[@]}\"" in script) == (ctx.preflight == "exclude")


def test_no_preflight_no_step(make_plan: MakePlan, write_cluster: Callable[..., Path]) -> None:
    assert "--preflight" not in make_plan(nodes=2, gpus=8).script
    plan = make_plan(write_cluster(launcher={"preflight": "exclude"}), nodes=2, gpus=8, preflight="off")
    assert "--preflight" not in plan.script and plan.run_config.preflight is None


def test_run_config_records_the_submit_time_node_lists(make_plan: MakePlan) -> None:
    plan = make_plan(nodes=1, gpus=8, preflight="exclude", sbatch_extra={"exclude": "gpu[001-002]",
                                                                         "nodelist": "gpu003"})
    pf = plan.run_config.preflight
    assert pf is not None and pf.mode == "exclude"
    assert pf.exclude == ["gpu001", "gpu002"] and pf.nodelist == ["gpu003"]
    assert len(pf.partition_nodes) > 2


# -- the verdict: which nodes a failed check blames ---------------------------------------------------
def _report(rank: int, host: str, **changes: Any) -> RankReport:
    values: dict[str, Any] = {"rank": rank, "host": host, "device": None, "world_size": 2, "master": "m:1",
                              "startup_s": 1.0, "master_error": None, "gemm_gflops": 10.0}
    values.update(changes)
    return RankReport(**values)


def test_the_test_hook_fails_its_own_check_naming_the_node() -> None:
    reports = [_report(0, "node1"), _report(1, "node2", forced_failure=True)]
    outcome = evaluate(reports, [AllreducePoint(1024, 0.001, 2)], [], expect={}, on_gpu=False, outlier_ratio=0.5)
    assert not outcome.ok
    assert [c.name for c in outcome.checks if not c.ok] == ["test_hook"]
    assert failed_nodes(outcome) == [{"host": "node2", "check": "test_hook"}]
    assert outcome.as_dict()["failed_nodes"] == [{"host": "node2", "check": "test_hook"}]


def test_failed_nodes_names_master_and_device_culprits() -> None:
    reports = [_report(0, "a", device="0"), _report(1, "a", device="0"), _report(2, "b", master_error="refused")]
    outcome = evaluate(reports, [], [], expect={}, on_gpu=True, outlier_ratio=0.5)
    assert failed_nodes(outcome) == [{"host": "b", "check": "master_addr"}, {"host": "a", "check": "devices"}]


def test_healthy_and_unblamed_failures_name_no_node() -> None:
    healthy = evaluate([_report(0, "a"), _report(1, "b")], [], [], expect={}, on_gpu=False, outlier_ratio=0.5)
    assert healthy.ok and failed_nodes(healthy) == []
    split = evaluate([_report(0, "a"), _report(1, "b", master="other:2")], [], [], expect={}, on_gpu=False,
                     outlier_ratio=0.5)
    assert not split.ok and failed_nodes(split) == []  # rendezvous: no single node to blame


def test_selftest_params_carry_the_hook_only_when_set() -> None:
    assert "fail_on_node" not in selftest_params({})
    params = selftest_params({"ORCH_PREFLIGHT_FAIL_NODE": "node2"})
    assert params["fail_on_node"] == "node2" and params["result_file"] == "preflight.json"
    from jobs.selftest import SelftestParams

    SelftestParams.model_validate(params)  # the launcher validates them the same way
    with pytest.raises(ValueError):
        SelftestParams.model_validate({"result_file": "../x.json"})


# -- the decision ----------------------------------------------------------------------------------------
def _cfg(mode: str, nodes: int = 1, **pf: Any) -> RunConfig:
    preflight = Preflight(mode=mode, partition_nodes=["node1", "node2"], **pf)  # type: ignore[arg-type]
    return RunConfig(mode="slurm", job_name="j", job_file="/j.py", params={}, nodes=nodes, gpus_per_node=1,
                     tasks_per_node=1, cpus_per_task=1, job_dir="/tmp/j", created="now", preflight=preflight)


VERDICT = {"checks": [{"name": "test_hook", "ok": False, "detail": "rank 1 on node2: failed on purpose"}],
           "failed_nodes": [{"host": "node2", "check": "test_hook"}]}


def test_stop_names_node_and_check_and_stops() -> None:
    decision = decide(_cfg("stop"), VERDICT, None, job_id="7", step_rc=1)
    assert decision.sbatch_args == () and decision.record is None
    assert "node node2 failed the check test_hook" in decision.message
    assert "--exclude node2" in decision.message


def test_exclude_submits_again_without_the_node() -> None:
    decision = decide(_cfg("exclude", nodelist=["node2"]), VERDICT, None, job_id="7", step_rc=1)
    assert decision.sbatch_args == ("--exclude=node2", "--nodelist=")
    assert decision.record is not None and decision.record["excluded"] == ["node2"]
    assert decision.record["attempts"][0]["job_id"] == "7"


def test_exclude_keeps_the_submit_time_exclusions() -> None:
    cfg = _cfg("exclude", exclude=["node9"])
    cfg = cfg.model_copy(update={"preflight": cfg.preflight.model_copy(  # type: ignore[union-attr]
        update={"partition_nodes": ["node1", "node2", "node9"]})})
    decision = decide(cfg, VERDICT, None, job_id="7", step_rc=1)
    assert decision.sbatch_args[0] == "--exclude=node[2,9]"


def test_exclude_gives_up_when_too_few_nodes_remain() -> None:
    decision = decide(_cfg("exclude", nodes=2), VERDICT, None, job_id="7", step_rc=1)
    assert decision.sbatch_args == ()
    assert "only 1 node(s) remain, the job needs 2" in decision.message


def test_exclude_gives_up_after_max_attempts() -> None:
    record = {"excluded": ["node3"], "attempts": [{"job_id": "5"}, {"job_id": "6"}]}
    decision = decide(_cfg("exclude"), VERDICT, record, job_id="7", step_rc=1)
    assert decision.sbatch_args == () and "giving up after 3 attempt(s)" in decision.message


def test_no_verdict_stops_without_naming_a_node() -> None:
    decision = decide(_cfg("exclude"), None, None, job_id="7", step_rc=137)
    assert decision == Decision(decision.message) and "no node was named" in decision.message


def test_main_records_the_attempt_and_the_next_job_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run_config(tmp_path, _cfg("exclude"))
    (tmp_path / "preflight.json").write_text(json.dumps(VERDICT), encoding="utf-8")
    assert main(["--job-dir", str(tmp_path), "--job-id", "7", "--step-rc", "1"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["--exclude=node2", "--nodelist="]
    assert "node node2 failed the check test_hook" in err
    assert main(["--job-dir", str(tmp_path), "--resubmitted", "8"]) == 0
    assert (tmp_path / "job_id").read_text() == "8\n"
    assert status_note(tmp_path) == "preflight excluded node2 (attempt 2 of 3, after job 7)"


def test_main_stops_with_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run_config(tmp_path, _cfg("stop"))
    (tmp_path / "preflight.json").write_text(json.dumps(VERDICT), encoding="utf-8")
    assert main(["--job-dir", str(tmp_path), "--job-id", "7"]) == 1
    assert capsys.readouterr().out == ""
    assert status_note(tmp_path) is None


# -- the CLI ------------------------------------------------------------------------------------------------
def _orch(*args: str, cluster: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args, "--cluster", str(cluster)],
                          capture_output=True, text=True, check=False, cwd=ROOT)


def test_dry_run_shows_the_preflight_step(write_cluster: Callable[..., Path]) -> None:
    proc = _orch("submit", "smoke", "--nodes", "2", "--gpus", "2", "--preflight=exclude", "--dry-run",
                 cluster=write_cluster())
    assert proc.returncode == 0, proc.stderr
    assert "--preflight || preflight_rc=$?" in proc.stdout
    assert "# preflight: the selftest checks run first" in proc.stdout


def test_preflight_with_a_sweep_is_refused(write_cluster: Callable[..., Path]) -> None:
    proc = _orch("submit", "smoke", "--preflight", "--sweep", "lr=0.1,0.2", "--dry-run", cluster=write_cluster())
    assert proc.returncode == 2, proc.stderr
    assert "--preflight is not supported with --sweep" in proc.stderr and "Traceback" not in proc.stderr
