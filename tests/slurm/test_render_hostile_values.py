"""Hostile values: every user-controlled value that reaches the sbatch script is carried as data.

The values (job name, overrides, account/QOS, ``env`` of cluster.yaml, the job root, the data
and templates folders, the python path) are rendered through the real ``build_plan`` /
``render_script`` code, checked with ``bash -n`` and ``shellcheck``, parsed with sbatch's own
``#SBATCH`` rules (tests/stubs/_stub.py follows src/sbatch/opt.c), and executed with stub
``srun``/``scontrol`` that record their argv and environment. A value must arrive byte for byte
(in sbatch's options, srun's argv, the environment srun sees, job.json) and nothing else may run:
the injected commands would create a ``PWNED`` file or the ``$ORCH_CANARY`` file, which must
never exist. Values Slurm cannot carry (a newline on an ``#SBATCH`` line, a NUL anywhere in the
script, and a carriage return, which shellcheck refuses as a DOS line break) are refused with a
ConfigError naming the field, before anything is written or queued.

Counts per run: ``test_generated_values_render_parse_and_lint`` renders GENERATED_CASES scripts
(``bash -n`` each, shellcheck on every SHELLCHECK_EVERY-th: shellcheck costs 0.1 CPU-second a script, bash -n
0.004), ``test_generated_values_execute`` executes EXECUTED_CASES of them (each execution starts five Python
processes), and the fixed NASTY list and every short value are rendered, shellchecked and executed whole.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import TESTS, load_stub_module

from orchestrator.cli import main
from orchestrator.env import masterport
from orchestrator.errors import ConfigError
from orchestrator.slurm.plan import SubmitPlan, SubmitRequest, build_plan, make_request, write_job_dir
from orchestrator.slurm.quoting import sbatch_quote
from orchestrator.slurm.render import BUILTIN_TEMPLATES, TEMPLATE_NAMES
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.job import LoadedJob, load_job
from orchestrator.spec.runconfig import JOB_FILE, SCRIPT_FILE

STUBS_DIR = TESTS / "stubs"
VALUES_JOB = TESTS / "jobs" / "hardening_values.py"
SHELLCHECK = shutil.which("shellcheck")
PORT_RANGE = masterport.DEFAULT_PORT_RANGE
JOB_ID = "4711"
PWNED = "PWNED"  # what an injected `touch PWNED` would create (in the cwd of the script)
ENV_NAME = "ORCH_HOSTILE"  # the cluster.yaml env variable that carries a hostile value

GENERATED_CASES = 250
SHELLCHECK_EVERY = 5
EXECUTED_CASES = 12
SHELLCHECK_BATCH = 50


def plan_at(request: SubmitRequest, cluster: Cluster, job: LoadedJob, *, python: str, job_root: Path) -> SubmitPlan:
    """build_plan with a fixed time and token (the folder name is reproducible)."""
    return build_plan(request, cluster, job, python=python, now=datetime(2024, 5, 6, 7, 8, 9), token="c0ffee",
                      job_root=job_root)

STUB = load_stub_module()

# Injections: if any of these ever ran, PWNED (cwd) or $ORCH_CANARY would exist afterwards.
INJECTIONS = [
    "$(touch PWNED)",
    "`touch PWNED`",
    "; touch PWNED",
    "&& touch PWNED",
    "|| touch PWNED",
    "| touch PWNED",
    "& touch PWNED",
    "> PWNED",
    ">> PWNED",
    "<(touch PWNED)",
    '$(touch "$ORCH_CANARY")',
    "'; touch PWNED; '",
    '"; touch PWNED; "',
    "\\'$(touch PWNED)",
    "${IFS}touch${IFS}PWNED",
    "$((0))`touch PWNED`",
    '"$(touch PWNED)"',
    "'$(touch PWNED)'",
    "\\`touch PWNED\\`",
    "$'\\x27'; touch PWNED",
    "!touch",
    "x #; touch PWNED",
    "\t; touch PWNED",
    "\v;touch PWNED",
]

# The fixed list: quoting breakers for bash and for sbatch's #SBATCH parser, plus the injections.
NASTY = [
    "with space",
    "  two  spaces ",
    " lead",
    "trail ",
    "it's",
    'say "hi"',
    "back\\slash",
    "trail\\",
    "\\",
    "'",
    '"',
    "a\\\"b'c",
    "*",
    "?[a]",
    "[!x]*",
    "{a,b}",
    "~root",
    "~",
    "-leading-dash",
    "--job-name=x",
    "-n",
    "--",
    "-",
    "=",
    "a=b",
    "#hash",
    "x #comment",
    "unicode ✓ ünï 日本語",
    "emoji 🚀",
    "zero\u200bwidth",
    "rtl \u202e txt",
    "tab\there",
    "vt\vff\f",
    "bell\a",
    "esc\x1b[31mred",
    "del\x7f",
    "packjob",
    "HetJob-x",
    "a-hetjob",
    "%j %t %%",
    "$HOME",
    "${PATH}",
    "$",
    "$$",
    "!event",
    "!!",
    "a;b",
    "a && b",
    "a | b",
    "a & b",
    "(sub)",
    "a<b>c",
    "$'ansi'",
    *INJECTIONS,
]

# Job-root path components: anything but '/', NUL, newline, '%' and '\' (refused: Slurm's --output
# filename patterns rewrite '%' and '\') and the special names '.' and '..'.
PATH_NASTY = [v for v in NASTY if v and v not in (".", "..") and not set(v) & set("/\0\n%\\")]

SPICE = [
    "$(",
    ")",
    "`",
    ";",
    "&&",
    "||",
    "|",
    "&",
    "*",
    "?",
    "[",
    "]",
    "{",
    "}",
    "'",
    '"',
    "\\",
    "$",
    "!",
    "#",
    "~",
    "-",
    "--",
    "=",
    "%",
    " ",
    "\t",
    "\v",
    "\f",
    ">",
    "<",
    "(",
    "packjob",
    "hetjob",
    "touch PWNED",
    "$(touch PWNED)",
    "`touch PWNED`",
    "; touch PWNED",
    "${IFS}",
    "$'",
    "é",
    "✓",
    "日本",
    "🚀",
    "\u200b",
    "\x1b",
    "\x7f",
    "\x01",
    ",",
    ":",
    "@",
    "^",
    "\u2028",
]
_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\0\r")


def hostile(min_size: int = 0) -> st.SearchStrategy[str]:
    """Text built from shell/sbatch metacharacters, injections and arbitrary (non-surrogate) unicode."""
    piece = st.one_of(st.sampled_from(SPICE), st.text(_CHARS, min_size=1, max_size=4))
    return st.lists(piece, min_size=min_size, max_size=8).map("".join)


JOB_NAMES = hostile(1).filter(lambda s: s.strip() != "")
PATH_PARTS = (
    hostile(1)
    .map(lambda s: "".join(c for c in s if c not in "/%\\"))
    .filter(lambda s: s not in ("", ".", ".."))
)


# --- building plans from values ---------------------------------------------------------------


def cluster_with(env_value: str, *, python: str | None = None) -> Cluster:
    return Cluster.model_validate(
        {
            "name": "hostile",
            "partitions": [
                {
                    "name": "gpu",
                    "nodes": "gpu[001-008]",
                    "gpus_per_node": 4,
                    "cpus_per_node": 32,
                    "mem_per_node": "256G",
                    "max_time": "1-00:00:00",
                    "gpu_type": "a100",
                }
            ],
            "defaults": {"partition": "gpu", "time": "01:00:00"},
            "env": {"NCCL_DEBUG": "WARN", ENV_NAME: env_value},
            "launcher": {"python": python},
        }
    )


@pytest.fixture(scope="module")
def values_job() -> LoadedJob:
    return load_job(str(VALUES_JOB), {}, TESTS)


@dataclass(frozen=True)
class Case:
    job_name: str
    tag: str
    env_value: str
    account: str
    path_part: str
    nodes: int = 1


def plan_for(
    case: Case,
    job: LoadedJob,
    job_root: Path,
    *,
    python: str = "/opt/py/bin/python",
    data_dir: str | None = None,
    templates: Path | None = None,
) -> SubmitPlan:
    request = make_request(
        {
            "job": str(VALUES_JOB),
            "nodes": case.nodes,
            "gpus": 2,
            "job_name": case.job_name,
            "account": case.account or None,
            "qos": case.account or None,
            "overrides": {"tag": case.tag, "note": case.env_value},
            "data_dir": data_dir,
            "templates": templates,
        }
    )
    return plan_at(request, cluster_with(case.env_value, python=python), job, python=python, job_root=job_root)


def check_plan(plan: SubmitPlan, case: Case) -> None:
    """What sbatch reads from the #SBATCH lines, and what job.json holds, equal the values."""
    options = STUB.sbatch_script_options(plan.script)
    assert f"--job-name={case.job_name}" in options
    if case.account:
        assert f"--account={case.account}" in options and f"--qos={case.account}" in options
    else:
        assert not any(o.startswith(("--account", "--qos")) for o in options)
    assert f"--output={plan.job_dir}/logs/slurm-%j.out" in options
    assert all(o.startswith("--") for o in options), options  # no value split into a stray word
    cfg = plan.run_config
    assert cfg.job_name == case.job_name
    assert cfg.params["tag"] == case.tag and cfg.params["note"] == case.env_value
    assert cfg.env[ENV_NAME] == case.env_value
    # job.json round-trips every value through JSON exactly.
    assert json.loads(json.dumps(cfg.model_dump(mode="json")))["params"]["tag"] == case.tag


def bash_n(script: str) -> None:
    proc = subprocess.run(["bash", "-n"], input=script.encode("utf-8"), capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")


def shellcheck(paths: list[Path]) -> None:
    """One shellcheck call per batch of scripts (each call costs a start-up)."""
    assert SHELLCHECK is not None
    for start in range(0, len(paths), SHELLCHECK_BATCH):
        batch = [str(p) for p in paths[start : start + SHELLCHECK_BATCH]]
        proc = subprocess.run(
            [SHELLCHECK, "--shell=bash", "--severity=style", "--format=gcc", *batch],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout[:4000] + proc.stderr


# --- executing a written job folder with stub Slurm commands ---------------------------------


@dataclass
class Execution:
    proc: subprocess.CompletedProcess[str]
    calls: list[dict[str, Any]]
    workdir: Path
    canary: Path

    def srun(self) -> dict[str, Any]:
        runs = [c for c in self.calls if c["cmd"] == "srun" and c["event"] == "call"]
        assert len(runs) == 1, self.calls
        return runs[0]


def python_wrapper(folder: Path) -> Path:
    """A python for launcher.python that lives in a hostile folder (it execs this interpreter)."""
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "python"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper


def execute(
    job_dir: Path, workdir: Path, *, nodes: int, extra_env: Mapping[str, str] | None = None
) -> Execution:
    """Run sbatch.sh as the batch step would (stub srun/scontrol first on PATH), cwd = workdir."""
    from support import clean_environ

    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "stub-calls.jsonl"
    canary = workdir / "canary-file"
    env = clean_environ(
        PATH=f"{STUBS_DIR}{os.pathsep}{os.environ.get('PATH', '')}",
        ORCH_STUB_LOG=str(log),
        ORCH_STUB_PYTHON=sys.executable,
        ORCH_CANARY=str(canary),
        SLURM_JOB_ID=JOB_ID,
        SLURM_JOB_NODELIST="gpu[001-002]" if nodes > 1 else "gpu001",
        SLURM_JOB_NUM_NODES=str(nodes),
        **(extra_env or {}),
    )
    proc = subprocess.run(
        ["bash", str(job_dir / SCRIPT_FILE)],
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    calls = (
        [json.loads(line) for line in log.read_text(encoding="ascii").splitlines()] if log.exists() else []
    )
    return Execution(proc=proc, calls=calls, workdir=workdir, canary=canary)


def expected_srun_argv(job_dir: Path, python: str, cpus: int, nodes: int = 1) -> list[str]:
    rank_log = f"{job_dir}/logs/%j-rank%t.out"
    return [
        "--kill-on-bad-exit=1",
        "--wait=60",
        "--export=ALL",
        f"--nodes={nodes}",
        "--ntasks-per-node=2",
        f"--cpus-per-task={cpus}",
        f"--output={rank_log}",
        f"--error={rank_log}",
        "--open-mode=append",
        python,
        "-m",
        "orchestrator.runtime.launch",
        "--job-dir",
        str(job_dir),
    ]


def assert_nothing_injected(run: Execution, root: Path) -> None:
    assert not run.canary.exists(), "an injected command ran ($ORCH_CANARY was created)"
    pwned = [p for p in root.rglob(PWNED) if p.name == PWNED]
    assert not pwned, f"an injected command ran: {pwned}"
    assert {c["cmd"] for c in run.calls} <= {"srun", "scontrol"}, run.calls
    commands = [c["argv"][:2] for c in run.calls if c["cmd"] == "scontrol"]
    assert all(cmd in (["show", "hostnames"], ["show", "node"]) for cmd in commands), commands


def check_execution(
    run: Execution, job_dir: Path, python: str, cpus: int, env_value: str, nodes: int, root: Path
) -> None:
    assert run.proc.returncode == 0, run.proc.stderr
    srun = run.srun()
    assert srun["argv"] == expected_srun_argv(job_dir, python, cpus, nodes)
    env = srun["env"]
    assert env[ENV_NAME] == env_value
    assert env["ORCH_JOB_DIR"] == str(job_dir)
    assert env["MASTER_PORT"] == str(masterport.master_port(JOB_ID, 0, PORT_RANGE))
    assert env["MASTER_ADDR"] == ("gpu001" if nodes > 1 else "127.0.0.1")
    assert_nothing_injected(run, root)


# --- generated values (hypothesis) ------------------------------------------------------------

CASES = st.builds(
    Case,
    job_name=JOB_NAMES,
    tag=hostile(),
    env_value=hostile(),
    account=hostile(),
    path_part=PATH_PARTS,
    nodes=st.sampled_from([1, 2]),
)


def test_generated_values_render_parse_and_lint(values_job: LoadedJob, tmp_path: Path) -> None:
    """GENERATED_CASES random hostile cases: sbatch options and job.json exact, bash -n; shellcheck on a fifth."""
    written: list[Path] = []
    rendered = 0

    @settings(
        max_examples=GENERATED_CASES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(case=CASES)
    def check(case: Case) -> None:
        nonlocal rendered
        plan = plan_for(case, values_job, Path("/jobs") / case.path_part / "root")
        check_plan(plan, case)
        bash_n(plan.script)
        rendered += 1
        if rendered % SHELLCHECK_EVERY == 0:
            path = tmp_path / f"case{rendered:04d}.sh"
            path.write_text(plan.script, encoding="utf-8")
            written.append(path)

    check()
    assert rendered >= GENERATED_CASES and len(written) >= GENERATED_CASES // SHELLCHECK_EVERY
    if SHELLCHECK is None:
        pytest.skip("shellcheck is not installed (apt-get install -y shellcheck); bash -n passed")
    shellcheck(written)


def test_generated_values_execute(values_job: LoadedJob, tmp_path: Path) -> None:
    """EXECUTED_CASES random hostile cases written to disk under a hostile job root, with the python
    in a hostile folder, and executed: srun's argv and environment carry the values exactly."""
    executed = []

    @settings(
        max_examples=EXECUTED_CASES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(case=CASES)
    def check(case: Case) -> None:
        n = len(executed)
        executed.append(case)
        base = tmp_path / f"c{n}"
        python = str(python_wrapper(base / f"py {case.path_part}" / "bin"))
        plan = plan_for(case, values_job, base / case.path_part / "jobs", python=python)
        job_dir = write_job_dir(plan)
        assert json.loads((job_dir / JOB_FILE).read_text(encoding="utf-8"))["params"]["tag"] == case.tag
        run = execute(job_dir, base / "cwd", nodes=case.nodes)
        check_execution(run, job_dir, python, plan.context.cpus_per_task, case.env_value, case.nodes, base)

    check()
    assert len(executed) >= EXECUTED_CASES


# --- the fixed list ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", NASTY, ids=range(len(NASTY)))
def test_nasty_value_in_every_field_renders_exactly(value: str, values_job: LoadedJob) -> None:
    name = value if value.strip() else f"x{value}"
    case = Case(job_name=name, tag=value, env_value=value, account=value, path_part="p")
    plan = plan_for(case, values_job, Path("/jobs/p"))
    check_plan(plan, case)
    bash_n(plan.script)


def test_nasty_values_pass_shellcheck(values_job: LoadedJob, tmp_path: Path) -> None:
    """Every NASTY value in every field, rendered, then shellcheck on all the scripts at once."""
    if SHELLCHECK is None:
        pytest.skip("shellcheck is not installed (apt-get install -y shellcheck)")
    paths = []
    for index, value in enumerate(NASTY):
        case = Case(
            job_name=value if value.strip() else f"x{value}",
            tag=value,
            env_value=value,
            account=value,
            path_part="p",
            nodes=1 + index % 2,
        )
        part = value if value in PATH_NASTY else "p"
        plan = plan_for(case, values_job, Path("/jobs") / part, python=f"/opt/{part}/bin/python")
        paths.append(tmp_path / f"nasty{index:03d}.sh")
        paths[-1].write_text(plan.script, encoding="utf-8")
    shellcheck(paths)


PACK = 5  # nasty values per executed script (each script start costs ~0.5 s of python start-ups)
PACKS = [PATH_NASTY[i : i + PACK] for i in range(0, len(PATH_NASTY), PACK)]


@pytest.mark.parametrize("pack", PACKS, ids=range(len(PACKS)))
def test_nasty_values_execute_exactly_and_run_nothing(
    pack: list[str], values_job: LoadedJob, tmp_path: Path
) -> None:
    """A pack of nasty values executed at once: every value is a component of the job root and of
    the python path, and a cluster.yaml env value; the first ones are job name, account, tag."""
    index = PACKS.index(pack)
    nodes = 1 + index % 2
    folders = Path(*pack)
    python = str(python_wrapper(tmp_path / "py" / folders / "bin"))
    env = {f"{ENV_NAME}_{i}": v for i, v in enumerate(pack)}
    cluster = Cluster.model_validate(
        {**cluster_with(pack[0], python=python).model_dump(), "env": {ENV_NAME: pack[0], **env}}
    )
    data_dir = str(tmp_path / "data" / folders)
    request = make_request(
        {
            "job": str(VALUES_JOB),
            "nodes": nodes,
            "gpus": 2,
            "job_name": pack[0],
            "account": pack[-1],
            "overrides": {"tag": pack[1 % len(pack)], "note": pack[-1]},
            "data_dir": data_dir,
        }
    )
    plan = plan_at(request, cluster, values_job, python=python, job_root=tmp_path / "root" / folders / "job root")
    options = STUB.sbatch_script_options(plan.script)
    assert f"--job-name={pack[0]}" in options and f"--account={pack[-1]}" in options
    job_dir = write_job_dir(plan)
    cfg = json.loads((job_dir / JOB_FILE).read_text(encoding="utf-8"))
    assert cfg["data_dir"] == data_dir and cfg["params"]["tag"] == pack[1 % len(pack)]
    assert cfg["env"] == {ENV_NAME: pack[0], **env}
    run = execute(job_dir, tmp_path / "cwd", nodes=nodes)
    check_execution(run, job_dir, python, plan.context.cpus_per_task, pack[0], nodes, tmp_path)
    seen = run.srun()["env"]
    assert {k: seen.get(k) for k in env} == env


def test_all_nasty_env_values_reach_srun_in_one_script(values_job: LoadedJob, tmp_path: Path) -> None:
    """Every NASTY value at once, each in its own cluster.yaml env variable."""
    env = {f"ORCH_NASTY_{i}": v for i, v in enumerate(NASTY)}
    cluster = Cluster.model_validate({**cluster_with("x").model_dump(), "env": env})
    request = make_request({"job": str(VALUES_JOB), "nodes": 2, "gpus": 2})
    plan = plan_at(request, cluster, values_job, python=sys.executable, job_root=tmp_path / "jobs")
    job_dir = write_job_dir(plan)
    run = execute(job_dir, tmp_path / "cwd", nodes=2)
    assert run.proc.returncode == 0, run.proc.stderr
    seen = run.srun()["env"]
    assert {k: seen.get(k) for k in env} == env
    assert_nothing_injected(run, tmp_path)


# --- every short value: all strings of up to two characters over the interesting alphabet -------

SHORT_ALPHABET = "@%+=:,./-_a1 '\"\\$`!#&*;|<>(){}[]?~^\t"
SHORT_VALUES = [a + b for a in ["", *SHORT_ALPHABET] for b in SHORT_ALPHABET]


def test_every_short_value_in_one_executed_script(values_job: LoadedJob, tmp_path: Path) -> None:
    """Exhaustive where random tests are thin: each of the SHORT_VALUES as an env value of one
    script (one bash -n, one shellcheck, one execution: every value reaches srun exactly), and
    through the #SBATCH quoting filter, parsed by sbatch's rules."""
    env = {f"ORCH_SHORT_{i}": v for i, v in enumerate(SHORT_VALUES)}
    cluster = Cluster.model_validate({**cluster_with("x").model_dump(), "env": env})
    request = make_request({"job": str(VALUES_JOB), "nodes": 1, "gpus": 2})
    plan = plan_at(request, cluster, values_job, python=sys.executable, job_root=tmp_path / "jobs")
    bash_n(plan.script)
    if SHELLCHECK is not None:  # its data-flow analysis is superlinear: 100 values per script
        names = list(env)
        paths = []
        for start in range(0, len(names), 100):
            part = {k: env[k] for k in names[start : start + 100]}
            text = plan_at(request, Cluster.model_validate({**cluster.model_dump(), "env": part}), values_job,
                           python=sys.executable, job_root=tmp_path / "jobs").script
            paths.append(tmp_path / f"short{start:04d}.sh")
            paths[-1].write_text(text, encoding="utf-8")
        shellcheck(paths)
    run = execute(write_job_dir(plan), tmp_path / "cwd", nodes=1)
    assert run.proc.returncode == 0, run.proc.stderr
    seen = run.srun()["env"]
    assert {k: seen.get(k) for k in env} == env
    lines = "".join(f"#SBATCH --job-name={sbatch_quote(v)}\n" for v in SHORT_VALUES)  # the #SBATCH filter
    assert STUB.sbatch_script_options("#!/bin/bash\n" + lines) == [f"--job-name={v}" for v in SHORT_VALUES]


# --- through the real CLI: orch submit with stub sbatch, then the written script --------------


def _hostile_templates(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in TEMPLATE_NAMES:
        shutil.copy(BUILTIN_TEMPLATES / name, folder / name)
    return folder


@pytest.mark.parametrize(
    "value",
    [
        '$(touch PWNED) it\'s "x" `touch PWNED`; *',
        "-dash && touch PWNED #",
        "ünï ✓ \\ ' \" packjob %j",
        "a\tb\vc | touch PWNED > PWNED",
    ],
)
def test_submit_cli_carries_values_to_sbatch_and_srun(
    value: str,
    tmp_path: Path,
    stubs: Any,
    clean_env: pytest.MonkeyPatch,
    write_cluster: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    safe = value.replace("%", "pct").replace("\\", "bs")
    root = tmp_path / safe
    python = str(python_wrapper(root / "py bin"))
    cluster = write_cluster(
        env={ENV_NAME: value}, launcher={"job_root": str(root / "job root"), "python": python}
    )
    templates = _hostile_templates(root / "my templates")
    data = root / "data dir"
    data.mkdir()
    code = main(
        [
            "submit",
            str(VALUES_JOB),
            "--cluster",
            str(cluster),
            "--nodes",
            "2",
            "--gpus",
            "2",
            f"--job-name={value}",
            f"--account={value}",
            f"--qos={value}",
            "--templates",
            str(templates),
            "--data-dir",
            str(data),
            f"tag={value}",
            f"note={value}",
            "--json",
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    job_dir = Path(json.loads(out.out)["job_dir"])
    [sbatch] = stubs.records("sbatch")
    assert sbatch["argv"] == ["--parsable", f"--comment=orch:{job_dir.name}", str(job_dir / SCRIPT_FILE)]
    options = sbatch["sbatch_options"]
    assert (
        f"--job-name={value}" in options and f"--account={value}" in options and f"--qos={value}" in options
    )
    cfg = json.loads((job_dir / JOB_FILE).read_text(encoding="utf-8"))
    assert cfg["params"]["tag"] == value and cfg["params"]["note"] == value and cfg["job_name"] == value
    assert cfg["data_dir"] == str(data) and cfg["env"][ENV_NAME] == value
    run = execute(job_dir, tmp_path / "cwd", nodes=2)
    check_execution(run, job_dir, python, cfg["cpus_per_task"], value, 2, tmp_path)


def test_installed_orch_dry_run_with_hostile_values(
    tmp_path: Path, write_cluster: Callable[..., Path]
) -> None:
    """The installed `orch` command: a hostile job name from a real argv lands on #SBATCH intact."""
    from support import ORCH, clean_environ

    value = "$(touch PWNED); `touch PWNED` 'q' \"dq\" -x ✓"
    cluster = write_cluster(env={ENV_NAME: value})
    proc = subprocess.run(
        [
            ORCH,
            "submit",
            str(VALUES_JOB),
            "--cluster",
            str(cluster),
            "--dry-run",
            "--json",
            f"--job-name={value}",
            f"tag={value}",
        ],
        env=clean_environ(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    script = json.loads(proc.stdout)["script"]
    assert f"--job-name={value}" in STUB.sbatch_script_options(script)
    bash_n(script)
    assert not list(tmp_path.rglob(PWNED))


# --- values Slurm cannot carry are refused, naming the field ----------------------------------

REFUSED = [
    ("job_name", "two\nlines", "--job-name"),
    ("job_name", "nul\0byte", "--job-name"),
    ("account", "acct\nx", "--account"),
    ("account", "acct\0", "--account"),
    ("qos", "\nq", "--qos"),
    ("qos", "q\0", "--qos"),
    ("job_name", "cr\rin", "--job-name"),
    ("account", "dos\r", "--account"),
]


@pytest.mark.parametrize(("field", "value", "named"), REFUSED)
def test_cli_refuses_values_slurm_cannot_carry(
    field: str,
    value: str,
    named: str,
    stubs: Any,
    clean_env: pytest.MonkeyPatch,
    write_cluster: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    cluster = write_cluster()
    code = main(
        ["submit", str(VALUES_JOB), "--cluster", str(cluster), f"--{field.replace('_', '-')}={value}"]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert named in err and "HINT:" in err and "Traceback" not in err
    assert stubs.records("sbatch") == []


@pytest.mark.parametrize(
    ("section", "value", "named"),
    [
        ({"env": {ENV_NAME: "a\nb"}}, None, ENV_NAME),
        ({"env": {ENV_NAME: "a\0b"}}, None, ENV_NAME),
        ({"env": {ENV_NAME: "a\rb"}}, None, ENV_NAME),
        ({"launcher": {"python": "/usr/bin/py\nthon"}}, None, "launcher.python"),
        ({"launcher": {"python": "/usr/bin/py\0thon"}}, None, "launcher.python"),
        ({"launcher": {"job_root": "/tmp/new\nline"}}, None, "job_root"),
        ({"launcher": {"job_root": "/tmp/nul\0byte"}}, None, "job_root"),
        ({"launcher": {"job_root": "/tmp/100%"}}, None, "job_root"),
        ({"launcher": {"job_root": "/tmp/back\\slash"}}, None, "job_root"),
    ],
)
def test_cluster_values_slurm_cannot_carry_are_refused(
    section: dict[str, Any],
    value: None,
    named: str,
    stubs: Any,
    clean_env: pytest.MonkeyPatch,
    write_cluster: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    cluster = write_cluster(**section)
    code = main(["submit", str(VALUES_JOB), "--cluster", str(cluster)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert named in err and "HINT:" in err and "Traceback" not in err
    assert stubs.records("sbatch") == []


def test_refusal_happens_before_anything_is_written(values_job: LoadedJob, tmp_path: Path) -> None:
    case = Case(job_name="bad\nname", tag="", env_value="", account="", path_part="p")
    with pytest.raises(ConfigError, match="job name"):
        plan_for(case, values_job, tmp_path / "jobs")
    assert not (tmp_path / "jobs").exists()


# --- local runs: the same values through orch run and the launcher ----------------------------


@pytest.mark.slow
def test_local_run_carries_hostile_values_to_every_rank(tmp_path: Path) -> None:
    """orch run with a hostile job root, data folder, env value and overrides: each rank receives
    them exactly (the job writes what it got), and nothing is injected."""
    from support import ORCH, clean_environ

    value = "$(touch PWNED) `touch PWNED` 'q' \"dq\" ; && * -x ✓ \\ %j"
    folder = tmp_path / value.replace("/", "_")
    data = folder / "data dir"
    data.mkdir(parents=True)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        json.dumps(
            {  # JSON is YAML
                "name": "hostile",
                "env": {ENV_NAME: value},
                "partitions": [
                    {
                        "name": "cpu",
                        "nodes": "n[1-2]",
                        "gpus_per_node": 0,
                        "cpus_per_node": 2,
                        "mem_per_node": "4G",
                    }
                ],
                "launcher": {"init_timeout": 30, "job_root": str(folder / "job root")},
            }
        ),
        encoding="utf-8",
    )
    proc = subprocess.run(
        [
            ORCH,
            "run",
            str(VALUES_JOB),
            "--cluster",
            str(cluster),
            "--nproc",
            "2",
            "--json",
            "--data-dir",
            str(data),
            f"tag={value}",
            f"note=-{value}",
        ],
        env=clean_environ(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    job_dir = Path(json.loads(proc.stdout)["job_dir"])
    assert job_dir.parent == folder / "job root"
    for rank in (0, 1):
        probe = json.loads((job_dir / f"probe-rank{rank}.json").read_text(encoding="utf-8"))
        assert probe == {
            "tag": value,
            "note": f"-{value}",
            "env": value,
            "data_dir": str(data),
            "job_dir": str(job_dir),
        }
    assert not [p for p in tmp_path.rglob(PWNED) if p.name == PWNED]
