"""The malformed input matrix: broken cluster.yaml files, job overrides and command-line flags.

Every case goes through the real CLI (``orchestrator.cli.main``; a sample also through the
installed ``orch``) as a real submission, with stub ``sbatch``/``srun``/``scontrol`` first on PATH.
Each must exit 2 with ``orch: error:`` naming the field, a ``HINT:`` line with the fix, no
traceback, no job folder, and no call to any Slurm command (the stub log is never created).
``orch run`` cases must also start no process and create no job folder.
(tests/commands/test_submit.py and tests/local/test_runner.py hold a few more; these do not repeat them.)
"""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from support import ORCH, TEST_CLUSTER, TESTS

from orchestrator.cli import main

if TYPE_CHECKING:
    from support import Stubs

VALUES_JOB = str(TESTS / "jobs" / "hardening_values.py")  # params: TrainParams + tag, note (str)


def cluster_text(change: Callable[[dict[str, Any]], None] | None = None) -> str:
    data = copy.deepcopy(TEST_CLUSTER)
    data["launcher"] = {**data["launcher"], "job_root": "@JOBS@"}
    if change is not None:
        change(data)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A change that sets ``a.b.0.c`` (list indexes as numbers) in the cluster dict."""

    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return change


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        del node[last]

    return change


# (id, cluster.yaml text, what the message or hint must name)
CLUSTER_CASES: list[tuple[str, str, list[str]]] = [
    ("yaml-syntax", "name: x\npartitions: [\n", ["is not valid YAML", "line"]),
    ("yaml-tab-indent", "name: x\npartitions:\n\t- name: gpu\n", ["is not valid YAML"]),
    ("yaml-empty-file", "", ["must be a mapping at the top level"]),
    ("yaml-list-at-top", "- name: x\n", ["must be a mapping at the top level"]),
    (
        "unknown-top-key",
        cluster_text(_set("partitons", [])),
        ["partitons", "remove it or check its spelling"],
    ),
    (
        "unknown-partition-key",
        cluster_text(_set("partitions.0.gpu_per_node", 8)),
        ["partitions.0.gpu_per_node", "remove it"],
    ),
    ("missing-name", cluster_text(_drop("name")), ["name", "add it"]),
    ("missing-partitions", cluster_text(_drop("partitions")), ["partitions", "add it"]),
    ("empty-partitions", cluster_text(_set("partitions", [])), ["partitions", "add at least one entry"]),
    (
        "gpus-wrong-type",
        cluster_text(_set("partitions.0.gpus_per_node", "eight")),
        ["partitions.0.gpus_per_node", "use a whole number"],
    ),
    (
        "gpus-negative",
        cluster_text(_set("partitions.0.gpus_per_node", -1)),
        ["partitions.0.gpus_per_node", "use a larger value"],
    ),
    ("cpus-zero", cluster_text(_set("partitions.1.cpus_per_node", 0)), ["partitions.1.cpus_per_node"]),
    ("hostlist-reversed", cluster_text(_set("partitions.0.nodes", "gpu[064-001]")), ["partitions.0.nodes"]),
    ("hostlist-unclosed", cluster_text(_set("partitions.2.nodes", "cpu[1-4,")), ["partitions.2.nodes"]),
    ("hostlist-empty", cluster_text(_set("partitions.0.nodes", "")), ["partitions.0.nodes"]),
    ("max-time-bad", cluster_text(_set("partitions.0.max_time", "2 days")), ["partitions.0.max_time"]),
    ("memory-bad", cluster_text(_set("partitions.0.mem_per_node", "lots")), ["partitions.0.mem_per_node"]),
    ("partition-name-space", cluster_text(_set("partitions.0.name", "my gpus")), ["partitions.0.name"]),
    ("partition-duplicate", cluster_text(_set("partitions.1.name", "gpu")), ["repeated: gpu"]),
    ("default-partition-unknown", cluster_text(_set("defaults.partition", "nope")), ["defaults.partition"]),
    ("default-time-bad", cluster_text(_set("defaults.time", "forever")), ["defaults.time"]),
    ("default-cpus-negative", cluster_text(_set("defaults.cpus_per_task", -4)), ["defaults.cpus_per_task"]),
    (
        "port-range-reversed",
        cluster_text(_set("launcher.port_range", [40000, 30000])),
        ["launcher.port_range"],
    ),
    ("port-range-privileged", cluster_text(_set("launcher.port_range", [80, 90])), ["launcher.port_range"]),
    (
        "port-range-string",
        cluster_text(_set("launcher.port_range", "29500-39499")),
        ["launcher.port_range", "[20000, 32767]"],
    ),
    (
        "port-range-too-high",
        cluster_text(_set("launcher.port_range", [60000, 70000])),
        ["launcher.port_range"],
    ),
    ("init-timeout-zero", cluster_text(_set("launcher.init_timeout", 0)), ["launcher.init_timeout"]),
    (
        "preempt-signal-unknown",
        cluster_text(_set("launcher.preempt_signal", "KILL")),
        ["launcher.preempt_signal", "USR2", "use one of the values listed"],
    ),
    (
        "gpu-flag-unknown",
        cluster_text(_set("launcher.gpu_flag", "gpus")),
        ["launcher.gpu_flag", "gres", "use one of the values listed"],
    ),
    (
        "requeue-not-bool",
        cluster_text(_set("launcher.requeue", "sometimes")),
        ["launcher.requeue", "true or false"],
    ),
    ("env-name-dash", cluster_text(_set("env", {"NCCL-DEBUG": "WARN"})), ["NCCL-DEBUG"]),
    (
        "env-value-mapping",
        cluster_text(_set("env", {"NCCL_DEBUG": {"level": "WARN"}})),
        ["env.NCCL_DEBUG", "use text"],
    ),
    (
        "setup-not-list",
        cluster_text(_set("launcher.setup", {"module": "load cuda"})),
        ["launcher.setup", "YAML list"],
    ),
]

# (id, argv after `submit JOB`, what the message must name)
FLAG_CASES: list[tuple[str, list[str], list[str]]] = [
    ("nodes-negative", ["--nodes", "-1"], ["--nodes"]),
    ("nodes-not-int", ["--nodes", "1.5"], ["--nodes", "1.5"]),
    ("gpus-negative", ["--gpus", "-2"], ["--gpus"]),
    ("gpus-over-debug-limit", ["--partition", "debug", "--gpus", "8"], ["--gpus 8", "gpus_per_node=4"]),
    ("nodes-over-debug-limit", ["--partition", "debug", "--nodes", "5", "--gpus", "1"], ["--nodes 5"]),
    ("tasks-over-gpus", ["--gpus", "2", "--ntasks-per-node", "3"], ["--ntasks-per-node 3"]),
    ("cpus-over-node", ["--gpus", "8", "--cpus-per-task", "13"], ["cpus_per_node=96"]),
    ("cpus-zero", ["--cpus-per-task", "0"], ["--cpus-per-task"]),
    ("time-garbage", ["--time", "soon"], ["--time"]),
    ("time-negative", ["--time", "-5"], ["--time"]),
    (
        "time-over-debug-max",
        ["--partition", "debug", "--gpus", "1", "--time", "03:00:00"],
        ["max_time=02:00:00"],
    ),
    ("time-under-preempt", ["--time", "00:02:00"], ["--time 00:02:00", "preempt_before"]),
    ("unknown-partition-case", ["--partition", "GPU"], ["unknown partition 'GPU'"]),
    ("unknown-flag", ["--colour", "2"], ["unrecognized arguments"]),
    ("flag-missing-value", ["--nodes"], ["--nodes", "expected one argument"]),
    ("templates-missing", ["--templates", "/nonexistent/templates"], ["--templates"]),
    ("data-dir-missing", ["--data-dir", "/nonexistent/data"], ["data"]),
    ("job-name-blank", ["--job-name", "   "], ["job name"]),
    ("override-unknown", ["learning_rate=0.1"], ["unknown override 'learning_rate'", "lr"]),
    ("override-wrong-type", ["epochs=two"], ["epochs"]),
    ("override-float-for-int", ["batch_size=1.5"], ["batch_size"]),
    ("override-out-of-range", ["batch_size=0"], ["batch_size"]),
    ("override-negative-lr", ["lr=-0.1"], ["lr"]),
    ("override-bool", ["amp=maybe"], ["amp"]),
    ("override-empty-key", ["=3"], ["not key=value"]),
    ("override-twice", ["lr=0.1", "lr=0.2"], ["given twice"]),
    ("override-empty-int", ["epochs="], ["epochs"]),
]

# (id, whole argv, what the message must name)
JOB_CASES: list[tuple[str, list[str], list[str]]] = [
    ("job-missing", ["submit"], ["JOB"]),
    ("job-unknown", ["submit", "nosuchjob"], ["unknown job 'nosuchjob'", "smoke"]),
    ("job-path-missing", ["submit", "./missing/job.py"], ["does not exist"]),
    ("job-file-broken", ["submit", "@BROKEN@"], ["failed to import"]),
    ("job-file-without-spec", ["submit", "@NOSPEC@"], ["defines no SPEC"]),
    (
        "cluster-file-missing",
        ["submit", "smoke", "--cluster", "/nonexistent/cluster.yaml"],
        ["no cluster file"],
    ),
]


def check_refused(code: int, err: str, named: list[str], stubs: Stubs, jobs: Path) -> None:
    assert code == 2, err
    message, _, hint = err.partition("\nHINT: ")
    assert message.startswith("orch: error: "), err
    assert hint.strip(), f"no HINT line: {err}"
    for fragment in named:
        assert fragment in err, (fragment, err)
    assert "Traceback" not in err
    assert not stubs.log.exists(), f"a Slurm command was called: {stubs.records(event=None)}"
    assert not jobs.exists() or not any(jobs.iterdir()), "a job folder was written"


@pytest.fixture
def setup(clean_env: pytest.MonkeyPatch, stubs: Stubs, tmp_path: Path) -> dict[str, Any]:
    jobs = tmp_path / "jobs"
    good = tmp_path / "cluster.yaml"
    good.write_text(cluster_text().replace("@JOBS@", str(jobs)), encoding="utf-8")
    clean_env.setenv("ORCH_CLUSTER", str(good))
    (tmp_path / "broken.py").write_text("import nosuchmodule_h5\nSPEC = None\n", encoding="utf-8")
    (tmp_path / "nospec.py").write_text("SPEC = 1\n", encoding="utf-8")  # a .py without SPEC is a script
    return {"jobs": jobs, "stubs": stubs, "tmp": tmp_path}


@pytest.mark.parametrize(("text", "named"), [c[1:] for c in CLUSTER_CASES], ids=[c[0] for c in CLUSTER_CASES])
def test_broken_cluster_yaml(
    text: str, named: list[str], setup: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    bad = setup["tmp"] / "bad cluster.yaml"
    bad.write_text(text.replace("@JOBS@", str(setup["jobs"])), encoding="utf-8")
    code = main(["submit", VALUES_JOB, "--cluster", str(bad)])
    err = capsys.readouterr().err
    check_refused(code, err, [str(bad), *named], setup["stubs"], setup["jobs"])


@pytest.mark.parametrize(("argv", "named"), [c[1:] for c in FLAG_CASES], ids=[c[0] for c in FLAG_CASES])
def test_broken_flags_and_overrides(
    argv: list[str], named: list[str], setup: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["submit", VALUES_JOB, *argv])
    err = capsys.readouterr().err
    check_refused(code, err, named, setup["stubs"], setup["jobs"])


@pytest.mark.parametrize(("argv", "named"), [c[1:] for c in JOB_CASES], ids=[c[0] for c in JOB_CASES])
def test_broken_jobs(
    argv: list[str], named: list[str], setup: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        a.replace("@BROKEN@", str(setup["tmp"] / "broken.py")).replace(
            "@NOSPEC@", str(setup["tmp"] / "nospec.py")
        )
        for a in argv
    ]
    code = main(argv)
    err = capsys.readouterr().err
    check_refused(code, err, named, setup["stubs"], setup["jobs"])


RUN_CASES: list[tuple[str, list[str], list[str]]] = [
    ("run-nproc-negative", ["run", "smoke", "--nproc", "-2"], ["--nproc -2"]),
    ("run-override-unknown", ["run", "smoke", "colour=blue"], ["unknown override 'colour'"]),
    ("run-override-range", ["run", "smoke", "samples=0"], ["samples"]),
    ("run-resume-not-a-job", ["run", "--resume", "@TMP@"], ["job.json"]),
    ("run-resume-with-job", ["run", "smoke", "--resume", "@TMP@"], ["--resume"]),
    ("run-broken-cluster", ["run", "smoke", "--cluster", "@BADCLUSTER@"], ["launcher.init_timeout"]),
]


@pytest.mark.parametrize(("argv", "named"), [c[1:] for c in RUN_CASES], ids=[c[0] for c in RUN_CASES])
def test_broken_local_runs_start_nothing(
    argv: list[str], named: list[str], setup: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    bad = setup["tmp"] / "bad.yaml"
    bad.write_text(
        cluster_text(_set("launcher.init_timeout", -1)).replace("@JOBS@", str(setup["jobs"])),
        encoding="utf-8",
    )
    argv = [a.replace("@TMP@", str(setup["tmp"])).replace("@BADCLUSTER@", str(bad)) for a in argv]
    code = main([*argv, "--job-root", str(setup["jobs"])])
    err = capsys.readouterr().err
    check_refused(code, err, named, setup["stubs"], setup["jobs"])


# --- a sample through the installed `orch` (a real process, a real argv) ----------------------

INSTALLED = [
    ["submit", VALUES_JOB, "--gpus", "9"],
    ["submit", VALUES_JOB, "--nodes", "0"],
    ["submit", VALUES_JOB, "--partition", "nope"],
    ["submit", VALUES_JOB, "--time", "1:2:3:4:5"],
    ["submit", VALUES_JOB, "epochs=-3"],
    ["submit", "nosuchjob"],
    ["submit", VALUES_JOB, "--cluster", "@BAD@"],
    ["run", "smoke", "--nproc", "0"],
]


@pytest.mark.parametrize("argv", INSTALLED, ids=range(len(INSTALLED)))
def test_installed_orch_refuses_without_calling_slurm(argv: list[str], setup: dict[str, Any]) -> None:
    stubs: Stubs = setup["stubs"]
    bad = setup["tmp"] / "bad.yaml"
    bad.write_text("name: x\npartitions: []\n", encoding="utf-8")
    argv = [a.replace("@BAD@", str(bad)) for a in argv]
    env = stubs.env(ORCH_CLUSTER=str(setup["tmp"] / "cluster.yaml"))
    proc = subprocess.run(
        [ORCH, *argv], env=env, cwd=setup["tmp"], capture_output=True, text=True, timeout=60, check=False
    )
    check_refused(proc.returncode, proc.stderr, [], stubs, setup["jobs"])
    assert proc.stdout == ""
