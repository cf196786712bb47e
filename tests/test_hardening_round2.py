"""Hardening, second round (issue 10): each hostile situation is a clear error or harmless.

Table-driven probes, through the real CLI (``orchestrator.cli.main``) with stub Slurm commands
first on PATH: a refused case must exit 2 with ``orch: error:`` naming the field, a ``HINT:``, no
traceback, no job folder and no Slurm call. The classes are numbered as in the issue.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from support import TEST_CLUSTER, load_stub_module

from orchestrator.cli import main
from orchestrator.env import hostlist
from orchestrator.errors import ConfigError
from orchestrator.slurm.render import BUILTIN_TEMPLATES, sbatch_quote, shell_quote
from orchestrator.spec.extras import SCRIPT_VARIABLES, check_env_var

if TYPE_CHECKING:
    from support import Stubs

TESTS = Path(__file__).resolve().parent
SHELLCHECK = shutil.which("shellcheck")


def expect_refused(argv: list[str], capsys: pytest.CaptureFixture[str], must_name: list[str],
                   jobs: Path | None = None, stubs: Stubs | None = None) -> str:
    """Exit 2, ``orch: error:`` naming ``must_name``, a HINT, no traceback, nothing written or queued."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "orch: error:" in err and "HINT:" in err, err
    assert "Traceback" not in err, err
    for text in must_name:
        assert text in err, f"{text!r} not in {err!r}"
    if jobs is not None:
        assert not jobs.exists() or not any(jobs.iterdir()), list(jobs.iterdir())
    if stubs is not None:
        assert stubs.records() == []
    return err


def cluster_file(tmp_path: Path, **sections: Any) -> Path:
    data: dict[str, Any] = {**TEST_CLUSTER, "launcher": {**TEST_CLUSTER["launcher"],
                                                          "job_root": str(tmp_path / "jobs")}}
    data.update(sections)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


# --- 4. bounded hostlists ---------------------------------------------------------------------------

HUGE = [
    ("600 ranges of 65,536", "n[" + ",".join(["1-65536"] * 600) + "]", "more than 1,000,000 hosts"),
    ("many items of big ranges", ",".join(f"r{i}[1-60000]" for i in range(40)), "more than 1,000,000 hosts"),
    ("three groups, product", "a[1-200]b[1-200]c[1-200]", "more than 1,000,000 hosts"),
    ("prefix group over Slurm's limit", "a[1-40000,1-40000]b[1]", "65,536 values"),
    ("one range over 64 Ki", "n[0-65536]", "more than 65,536 hosts"),
    ("too many ranges", "n[" + ",".join(["7"] * (256 * 1024 + 1)) + "]", "262,144 ranges"),
    ("5000-digit end", "n[1-" + "9" * 5000 + "]", "above 18446744073709551615"),
    ("5000-digit start and end", "n[" + "1" * 5000 + "-" + "2" * 5000 + "]", "above"),
    ("2**64", f"n[{2**64}]", "above"),
    ("100 zero-padded digits", "n[" + "0" * 99 + "1]", "longer than 64 digits"),
]


@pytest.mark.parametrize(("expr", "problem"), [(e, p) for _, e, p in HUGE], ids=[i for i, _, _ in HUGE])
def test_huge_hostlists_are_refused_by_counting(expr: str, problem: str) -> None:
    began = time.process_time()
    with pytest.raises(hostlist.HostlistError, match=re.escape(problem)):
        hostlist.expand(expr)
    assert time.process_time() - began < 5  # generous (shared CPUs); expanding would take minutes and GBs


@pytest.mark.parametrize(("expr", "count"), [
    ("n[" + ",".join(str(i) for i in range(256 * 1024)) + "]", 256 * 1024),  # Slurm 22.05's group limit
    ("n[1-65536]x[1-15]", 65536 * 15),
    ("n[18446744073709551614-18446744073709551615]", 2),  # the largest numbers Slurm holds
    ("n[" + "0" * 40 + "-" + "0" * 39 + "9]", 10),  # wide zero padding is fine
    ("n" + "7" * 5000, 1),  # a plain name of many digits is a name
])
def test_limits_that_slurm_allows_still_expand(expr: str, count: int) -> None:
    assert hostlist.count(expr) == count
    assert len(hostlist.expand(expr)) == count


@pytest.mark.parametrize("hosts", [
    ["n" + "1" * 5000, "n" + "1" * 4999 + "2"],
    [f"n{2**64 - 1}", f"n{2**64}"],
    ["x" + "0" * 70 + "1", "x" + "0" * 70 + "2"],
])
def test_compress_of_huge_numbers_round_trips(hosts: list[str]) -> None:
    assert hostlist.expand(hostlist.compress(hosts)) == hosts


@pytest.mark.parametrize("nodes", ["n[1-65536]x[1-100]", "gpu[1-" + "9" * 4500 + "]",
                                   "a[" + ",".join(["1-65536"] * 100) + "]"])
def test_huge_hostlist_in_cluster_yaml_is_a_field_error(
        nodes: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], stubs: Stubs) -> None:
    part = {**TEST_CLUSTER["partitions"][0], "nodes": nodes}
    path = cluster_file(tmp_path, partitions=[part])
    expect_refused(["submit", "smoke", "--cluster", str(path)], capsys, ["partitions.0.nodes"],
                   jobs=tmp_path / "jobs", stubs=stubs)


@pytest.mark.parametrize(("variable", "value"), [
    ("SLURM_JOB_NODELIST", "n[" + ",".join(["1-65536"] * 600) + "]"),
    ("SLURM_JOB_NODELIST", "n[1-" + "9" * 5000 + "]"),
    ("SLURM_JOB_NUM_NODES", "9" * 5000),
    ("SLURM_PROCID", "1" * 4400),
    ("SLURM_TASKS_PER_NODE", "2(x" + "9" * 5000 + ")"),
])
def test_huge_slurm_variables_are_a_clear_error(variable: str, value: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.env import distenv
    from orchestrator.errors import OrchError

    environ = {"SLURM_JOB_ID": "7", "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_NODEID": "0",
               "SLURM_NTASKS": "2", "SLURM_JOB_NUM_NODES": "1", "SLURM_JOB_NODELIST": "n1",
               "SLURM_TASKS_PER_NODE": "2", "SLURMD_NODENAME": "n1", "SLURM_STEP_NODELIST": "n1",
               "SLURM_STEP_NUM_NODES": "1", "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_TASKS_PER_NODE": "2",
               "MASTER_ADDR": "n1", "MASTER_PORT": "29500", variable: value}
    with pytest.raises(OrchError) as info:
        distenv.derive(environ)
    assert info.value.hint


@pytest.mark.parametrize("text", [
    "name: c\nnum: " + "9" * 5000 + "\n",
    "name: " + "[" * 3000 + "]" * 3000 + "\n",
])
def test_unreadable_yaml_values_are_a_config_error(text: str) -> None:
    from orchestrator.spec.cluster import parse_cluster

    with pytest.raises(ConfigError):
        parse_cluster(text)


@pytest.mark.parametrize(("field", "value"), [("time", "9" * 5000), ("time", "1-" + "9" * 5000),
                                              ("mem", "9" * 5000 + "G")])
def test_units_with_thousands_of_digits_are_value_errors(field: str, value: str) -> None:
    from orchestrator.spec.units import parse_mem_mb, parse_time

    with pytest.raises(ValueError, match="invalid"):
        (parse_time if field == "time" else parse_mem_mb)(value)


# --- 12. names: fullmatch -------------------------------------------------------------------------

@pytest.mark.parametrize(("where", "value"), [
    ("name", "gpu\n"), ("name", "gpu\n\n"), ("partition", "gpu\n"), ("partition", "a\nb"),
    ("env", "NCCL_DEBUG\n"), ("pass_env", "TOKEN\n"),
])
def test_names_with_a_trailing_newline_are_refused(where: str, value: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str], stubs: Stubs) -> None:
    sections: dict[str, Any] = {}
    if where == "name":
        sections["name"] = value
    elif where == "partition":
        sections["partitions"] = [{**TEST_CLUSTER["partitions"][0], "name": value}]
        sections["defaults"] = {}
    elif where == "env":
        sections["env"] = {value: "x"}
    else:
        sections["launcher"] = {"pass_env": [value], "job_root": str(tmp_path / "jobs")}
    path = cluster_file(tmp_path, **sections)
    expect_refused(["submit", "smoke", "--cluster", str(path), "--dry-run"], capsys, ["invalid"],
                   jobs=tmp_path / "jobs", stubs=stubs)


# --- 2. names the script owns ----------------------------------------------------------------------

OWNED = [*sorted(SCRIPT_VARIABLES),
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT", "MASTER_ADDR", "NODE_RANK", "CUDA_VISIBLE_DEVICES",
    "BASHOPTS", "SHELLOPTS", "EUID", "PPID", "UID", "IFS", "BASH_ENV", "BASH_FUNC_x%%", "BASH", "SECONDS",
    "RANDOM", "POSIXLY_CORRECT", "SLURM_JOB_ID", "SLURM_NTASKS", "SLURM_ANYTHING", "SRUN_CPUS_PER_TASK",
    "SBATCH_EXPORT", "SLURMD_NODENAME", "1ABC", "A-B", "", "A B", "ÄNDERN",
]


@pytest.mark.parametrize("name", OWNED)
def test_owned_names_are_refused_in_env(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        stubs: Stubs) -> None:
    with pytest.raises(ValueError):
        check_env_var(name, "1")
    path = cluster_file(tmp_path, env={name: "a[$(touch PWNED)]"})
    expect_refused(["submit", "smoke", "--cluster", str(path), "--dry-run"], capsys, ["env"],
                   jobs=tmp_path / "jobs", stubs=stubs)
    assert not (tmp_path / "PWNED").exists()


# issue 23: PATH and PYTHONPATH left this list (refused: launcher.setup changes them; test_round3_secrets_env.py)
@pytest.mark.parametrize("name", ["NCCL_DEBUG", "OMP_NUM_THREADS", "http_proxy", "PYTHONUNBUFFERED",
                                  "WANDB_API_KEY", "ORCH_DATA_DIR", "MY_SIGNALS", "slurm_x", "_"])
def test_ordinary_names_are_accepted(name: str) -> None:
    check_env_var(name, "value with spaces and $(dollar)")


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\0b"])
def test_env_values_slurm_cannot_carry_are_refused(value: str) -> None:
    with pytest.raises(ValueError, match="cannot carry"):
        check_env_var("NCCL_DEBUG", value)


def _assigned_names(text: str) -> set[str]:
    """Shell variables a template assigns: NAME=..., for NAME in, read NAME, (( NAME ... ))."""
    names = set(re.findall(r"(?m)^\s*(?:export\s+|local\s+|readonly\s+)?([A-Za-z_][A-Za-z0-9_]*)\+?=", text))
    names |= set(re.findall(r"\bfor\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\b", text))
    names |= set(re.findall(r"\bread\s+(?:-\w+\s+)*([A-Za-z_][A-Za-z0-9_]*)", text))
    return names


def test_the_owned_table_lists_every_variable_the_templates_assign() -> None:
    assigned: set[str] = set()
    for path in BUILTIN_TEMPLATES.glob("*.j2"):
        text = re.sub(r"\{#.*?#\}", "", path.read_text(encoding="utf-8"), flags=re.S)
        assigned |= _assigned_names(re.sub(r"\{[{%].*?[}%]\}", "", text))
    assigned -= {"MASTER_ADDR", "MASTER_PORT"}  # derived variables: refused by their own table
    assert assigned, "the pattern found no assignments at all"
    assert assigned <= SCRIPT_VARIABLES, f"add to extras.SCRIPT_VARIABLES: {sorted(assigned - SCRIPT_VARIABLES)}"


# --- 3. quoting filters are safe in both contexts ----------------------------------------------------

QUOTE_VALUES = [
    "$(touch PWNED)", "`touch PWNED`", "a\\$(touch PWNED)", '"; touch PWNED; "', "x'$(touch PWNED)'",
    "xpackjob--qos=high", "HETJOB --partition=evil", "a # b", "~root", "=x", "${IFS}", "$((1+1))",
    "\\", "\\\\\"", "a\tb", "!x", "*", "{a,b}", "x;touch PWNED", "--output=/tmp/x", "pa\\ckjob",
    "PackJob=1", "hetjob", "~packjob", "it's packjob", "packjobpackjob", "=hetjob",
]


@pytest.mark.parametrize("value", QUOTE_VALUES)
@pytest.mark.parametrize("quote", [shell_quote, sbatch_quote], ids=["q", "sq"])
def test_both_filters_are_exact_in_bash_and_in_sbatch(value: str, quote: Callable[[str], str],
                                                      tmp_path: Path) -> None:
    stub = load_stub_module()
    quoted = quote(value)
    out = subprocess.run(["bash", "-c", f"printf '%s' {quoted}"], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout
    assert out == value
    assert stub.sbatch_script_options(f"#!/bin/bash\n#SBATCH --job-name={quoted}\n") == [f"--job-name={value}"]
    assert not (tmp_path / "PWNED").exists()
    if quote is shell_quote and SHELLCHECK:  # shell code in the templates (which disable SC2016 too)
        lint = subprocess.run([SHELLCHECK, "--shell=bash", "--severity=style", "--exclude=SC2016", "-"],
                              capture_output=True, text=True, input=f'#!/bin/bash\nX={quoted}\necho "$X"\n')
        assert lint.returncode == 0, lint.stdout


@pytest.mark.parametrize("template", [
    "{{ job_name | verbatim }}", "{{ python | verbatim }}", "{{ env | string | verbatim }}",
    "{{ setup | join(' ') | verbatim }}", "{{ setup[0] | upper | verbatim }}",
])
def test_verbatim_is_only_for_setup_lines(template: str, tmp_path: Path,
                                          make_plan: Callable[..., Any], write_cluster: Callable[..., Path]) -> None:
    folder = tmp_path / "tpl"
    folder.mkdir()
    (folder / "single_node.sbatch.j2").write_text(
        '{% extends "base.sbatch.j2" %}{% block master_addr %}MASTER_ADDR=127.0.0.1\n'
        f"echo {template}\n{{% endblock %}}\n", encoding="utf-8")
    cluster = write_cluster(launcher={"setup": ["module load x"]})
    with pytest.raises(ConfigError, match="verbatim"):
        make_plan(cluster, nodes=1, gpus=1, job_name="$(touch PWNED)", templates=folder)


def test_setup_lines_still_pass_verbatim(make_plan: Callable[..., Any],
                                         write_cluster: Callable[..., Path]) -> None:
    plan = make_plan(write_cluster(launcher={"setup": ["module load cuda/12 && echo $HOME"]}), nodes=1, gpus=1)
    assert "\nmodule load cuda/12 && echo $HOME\n" in plan.script


# --- 5. what the ranks validate is validated before sbatch --------------------------------------------

PARAM_CASES = [
    (["lr=inf"], "lr"), (["lr=-inf"], "lr"), (["lr=nan"], "lr"), (["lr=1e999"], "lr"), (["momentum=NaN"], "momentum"),
    (["weight_decay=Infinity"], "weight_decay"), ([f"seed={2**64 + 1}"], "seed"), ([f"seed={2**63}"], "seed"),
    (["seed=-1"], "seed"), (["epochs=" + "9" * 5000], "epochs"), ([f"batch_size={2**31}"], "batch_size"),
    (["num_threads=100000"], "num_threads"), ([f"samples={2**64}"], "samples"),
    ([f"max_steps_per_epoch={2**40}"], "max_steps_per_epoch"),
]


@pytest.mark.parametrize(("overrides", "field"), PARAM_CASES, ids=[c[0][0][:30] for c in PARAM_CASES])
@pytest.mark.parametrize("dry_run", [False, True], ids=["submit", "dry-run"])
def test_params_the_ranks_would_refuse_are_refused_before_sbatch(
        overrides: list[str], field: str, dry_run: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        stubs: Stubs) -> None:
    path = cluster_file(tmp_path)
    argv = ["submit", str(TESTS / "jobs" / "hardening_values.py"), "--cluster", str(path), *overrides]
    expect_refused([*argv, "--dry-run"] if dry_run else argv, capsys, [field], jobs=tmp_path / "jobs",
                   stubs=stubs)


@pytest.mark.parametrize("overrides", [["lr=inf"], [f"seed={2**64}"]])
def test_orch_run_refuses_them_too_before_starting_a_rank(overrides: list[str], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    expect_refused(["run", "smoke", "--job-root", str(tmp_path / "jobs"), *overrides], capsys, [],
                   jobs=tmp_path / "jobs")


JOB_WITH_INF_DEFAULT = '''
from orchestrator import JobSpec, TrainParams
class P(TrainParams):
    scale: float = float("inf")
def build(params, ctx):
    raise RuntimeError
SPEC = JobSpec(name="infdefault", params=P, build=build)
'''


def test_a_job_default_that_json_cannot_carry_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         stubs: Stubs) -> None:
    job = tmp_path / "infdefault.py"
    job.write_text(JOB_WITH_INF_DEFAULT, encoding="utf-8")
    expect_refused(["submit", str(job), "--cluster", str(cluster_file(tmp_path)), "--dry-run"], capsys,
                   ["job.json"], jobs=tmp_path / "jobs", stubs=stubs)


# --- 8. job files that exit at import or define a wrong SPEC ------------------------------------------

GOOD_TAIL = '''
def build(params, ctx):
    raise RuntimeError("planning only")
'''
SPEC_AFTER_EXIT = ("from orchestrator import JobSpec, TrainParams\n"
                   "SPEC = JobSpec(name='x', params=TrainParams, build=build)\n")
JOB_FILES = [
    ("sys.exit(0)", "import sys\nsys.exit(0)\n", "exits while it is imported"),
    ("sys.exit(3)", "import sys\nsys.exit(3)\n", "exits while it is imported"),
    ("raise SystemExit", "raise SystemExit('bye')\n", "exits while it is imported"),
    ("os._exit(0)", "import os\nos._exit(0)\n", "os._exit(0)"),
    ("from os import _exit", "from os import _exit\n_exit(0)\n", "os._exit(0)"),
    ("os.abort()", "import os\nos.abort()\n", "os.abort()"),
    ("exit()", "exit()\n", "exits while it is imported"),
    ("SPEC = 42", "SPEC = 42\n", "SPEC is a int"),
    ("SPEC = None", "SPEC = None\n", "defines no SPEC"),
    ("SPEC = dict", "SPEC = {'name': 'x'}\n", "SPEC is a dict"),
    ("params instance", "from orchestrator import JobSpec, TrainParams\n"
                        "SPEC = JobSpec(name='x', params=TrainParams(), build=lambda p, c: None)\n", "SPEC.params"),
    ("params dict", "from orchestrator import JobSpec\nSPEC = JobSpec(name='x', params=dict, build=print)\n",
     "SPEC.params"),
    ("name int", "from orchestrator import JobSpec, TrainParams\n"
                 "SPEC = JobSpec(name=7, params=TrainParams, build=print)\n", "SPEC.name"),
    ("name blank", "from orchestrator import JobSpec, TrainParams\n"
                   "SPEC = JobSpec(name='  ', params=TrainParams, build=print)\n", "SPEC.name"),
    ("build str", "from orchestrator import JobSpec, TrainParams\n"
                  "SPEC = JobSpec(name='x', params=TrainParams, build='train')\n", "SPEC.build"),
    ("resources dict", "from orchestrator import JobSpec, TrainParams\n"
                       "SPEC = JobSpec(name='x', params=TrainParams, build=print, resources={'nodes': 2})\n",
     "SPEC.resources"),
    ("needs_data str", "from orchestrator import JobSpec, TrainParams\n"
                       "SPEC = JobSpec(name='x', params=TrainParams, build=print, needs_data='yes')\n",
     "SPEC.needs_data"),
    ("validator TypeError", "from pydantic import field_validator\nfrom orchestrator import JobSpec, TrainParams\n"
                            "class P(TrainParams):\n    @field_validator('lr')\n    @classmethod\n"
                            "    def v(cls, x):\n        raise TypeError('boom')\n"
                            "SPEC = JobSpec(name='x', params=P, build=print)\n", "params model failed"),
]


@pytest.mark.parametrize(("source", "message"), [(s, m) for _, s, m in JOB_FILES], ids=[i for i, _, _ in JOB_FILES])
@pytest.mark.parametrize("verb", ["submit", "submit --dry-run", "run"])
def test_job_files_that_exit_or_lie_are_clear_errors(source: str, message: str, verb: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str], stubs: Stubs) -> None:
    job = tmp_path / "badjob.py"
    # a .py file is a job file when it assigns SPEC (else it is a script, run as such): these all do
    tail = GOOD_TAIL if "SPEC" in source else GOOD_TAIL + SPEC_AFTER_EXIT
    job.write_text(source + tail, encoding="utf-8")
    if verb == "run":
        argv = ["run", str(job), "--job-root", str(tmp_path / "jobs")]
    else:
        argv = [*verb.split(), str(job), "--cluster", str(cluster_file(tmp_path))]
    expect_refused(argv, capsys, [message], jobs=tmp_path / "jobs", stubs=stubs)


def test_os_exit_is_restored_after_the_import(tmp_path: Path) -> None:
    import os

    from orchestrator.spec.job import load_job_file

    before = os._exit, os.abort
    job = tmp_path / "exits.py"
    job.write_text("import os\nos._exit(1)\n" + GOOD_TAIL + SPEC_AFTER_EXIT, encoding="utf-8")
    with pytest.raises(ConfigError):
        load_job_file(job)
    assert (os._exit, os.abort) == before


def test_job_file_exiting_through_the_installed_cli(tmp_path: Path, stubs: Stubs) -> None:
    from support import ORCH

    job = tmp_path / "exits.py"
    job.write_text("import os\nos._exit(0)\n" + GOOD_TAIL + SPEC_AFTER_EXIT, encoding="utf-8")
    proc = subprocess.run([ORCH, "submit", str(job), "--cluster", str(cluster_file(tmp_path))],
                          capture_output=True, text=True, env=stubs.env(), cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "exits while it is imported" in proc.stderr and "Traceback" not in proc.stderr
    assert stubs.records() == []


@pytest.mark.parametrize("text", ["12\n", "12 ", "١٢", "1_2_3", "9" * 5000, "12_"])
def test_job_ids_are_full_ascii_matches(text: str) -> None:
    from orchestrator.records.jobdirs import is_job_id

    assert not is_job_id(text)


@pytest.mark.parametrize("expr", ["n[" + ",".join(["1-65536"] * 600) + "]", "n[1-" + "9" * 5000 + "]"])
def test_orch_hosts_refuses_huge_expressions(expr: str, capsys: pytest.CaptureFixture[str]) -> None:
    expect_refused(["hosts", expr], capsys, ["invalid hostlist"])


def test_orch_hosts_compress_of_a_name_with_5000_digits(capsys: pytest.CaptureFixture[str]) -> None:
    name = "n" + "1" * 5000
    assert main(["hosts", "--compress", name, "n2"]) == 0
    assert capsys.readouterr().out.strip() == f"{name},n2"
