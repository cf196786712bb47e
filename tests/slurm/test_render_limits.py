"""render at its edges: every refusal of check_context (per field), and the template lookup rules (the
quoting filters' exact text: tests/slurm/test_quoting.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from orchestrator.errors import ConfigError
from orchestrator.slurm.render import (
    BUILTIN_TEMPLATES,
    MULTI_NODE_TEMPLATE,
    SINGLE_NODE_TEMPLATE,
    TEMPLATE_NAMES,
    ScriptContext,
    check_context,
    check_templates_dir,
    render_script,
    template_sources,
)

CTX = ScriptContext(job_name="j", nodes=2, ntasks_per_node=2, gpus_per_node=2, cpus_per_task=1, time="01:00:00",
                    partition="p", job_dir="/jobs/j-1", python="/usr/bin/python3", gpu_spec="2")


# Where the user sets each field, as the error must say it (stated here, not read from render.FIELD_LABELS).
LABELS = {
    "job_name": "the job name (--job-name)", "partition": "the partition (--partition)",
    "account": "the account (--account or defaults.account)", "qos": "the QOS (--qos or defaults.qos)",
    "time": "the time limit (--time)", "gpu_spec": "gpu_type of the partition",
    "python": "the python path (launcher.python)", "preempt_signal": "launcher.preempt_signal",
}


@pytest.mark.parametrize("field", sorted(LABELS))
@pytest.mark.parametrize(("bad", "what"), [("\n", "a newline"), ("\0", "a NUL byte"), ("\r", "a carriage return"),
                                           ("\udcff", "not valid UTF-8")])
def test_every_text_field_refuses_what_a_script_cannot_carry(field: str, bad: str, what: str) -> None:
    ctx = dataclasses.replace(CTX, **{field: f"a{bad}b"})
    with pytest.raises(ConfigError) as info:
        check_context(ctx)
    assert info.value.message.startswith(LABELS[field] + " ")
    assert what in info.value.message


def test_the_job_folder_label() -> None:
    with pytest.raises(ConfigError) as info:
        check_context(dataclasses.replace(CTX, job_dir="/a\nb"))
    assert info.value.message.startswith("the job folder (launcher.job_root) contains a newline")


@pytest.mark.parametrize(("env", "what"), [({"A\n": "x"}, "a newline"), ({"A": "x\0"}, "a NUL byte"),
                                           ({"A": "x\r"}, "a carriage return"), ({"A": "\udcff"}, "UTF-8")])
def test_env_keys_and_values_are_checked(env: dict[str, str], what: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_context(dataclasses.replace(CTX, env=env))
    assert "env of cluster.yaml: A" in info.value.message and what in info.value.message


@pytest.mark.parametrize(("line", "ok"), [("a\nb", True), ("a\0b", False), ("a\rb", False), ("\udcff", False),
                                          ("$(x) `y`", True)])
def test_setup_lines(line: str, ok: bool) -> None:
    ctx = dataclasses.replace(CTX, setup=("ok", line))
    if ok:
        check_context(ctx)
    else:
        with pytest.raises(ConfigError, match=r"launcher.setup\[1\]"):
            check_context(ctx)


@pytest.mark.parametrize(("job_dir", "fragment"), [("/a%j", "contains '%'"), ("/a\\b", "contains '\\\\'"),
                                                   ("a/b", "is not an absolute path"), ("", "not an absolute path")])
def test_job_dir_refusals(job_dir: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_context(dataclasses.replace(CTX, job_dir=job_dir))
    assert fragment in info.value.message


def test_script_context_defaults_match_the_launcher_defaults() -> None:
    """The same built-in values as cluster.yaml's launcher section (README: srun_wait 60, USR2, 120 s)."""
    assert (CTX.srun_wait, CTX.preempt_signal, CTX.preempt_before, CTX.requeue) == (60, "USR2", 120, True)
    assert (CTX.gpu_flag, CTX.account, CTX.qos, CTX.master_addr) == ("gpus-per-node", None, None, None)
    assert "srun --kill-on-bad-exit=1 --wait=60 " in render_script(CTX)


def test_a_context_is_a_snapshot() -> None:
    with pytest.raises(AttributeError):
        CTX.nodes = 3  # type: ignore[misc]


def test_variables_hold_the_paths_inside_the_job_folder() -> None:
    values = CTX.variables()
    assert values["log_dir"] == "/jobs/j-1/logs"
    assert values["batch_log"] == "/jobs/j-1/logs/slurm-%j.out"
    assert values["rank_log"] == "/jobs/j-1/logs/%j-rank%t.out"
    assert values["requeue_file"].startswith("/jobs/j-1/")
    assert values["job_name"] == "j" and values["nodes"] == 2


@pytest.mark.parametrize(("nodes", "template"), [(1, SINGLE_NODE_TEMPLATE), (2, MULTI_NODE_TEMPLATE),
                                                 (64, MULTI_NODE_TEMPLATE)])
def test_template_by_node_count(nodes: int, template: str) -> None:
    assert dataclasses.replace(CTX, nodes=nodes).template_name == template


def test_template_sources_prefer_the_users_files(tmp_path: Path) -> None:
    assert template_sources() == {name: BUILTIN_TEMPLATES / name for name in TEMPLATE_NAMES}
    (tmp_path / MULTI_NODE_TEMPLATE).write_text("x")
    (tmp_path / "other.j2").write_text("x")
    sources = template_sources(tmp_path)
    assert sources[MULTI_NODE_TEMPLATE] == tmp_path / MULTI_NODE_TEMPLATE
    assert sources[SINGLE_NODE_TEMPLATE] == BUILTIN_TEMPLATES / SINGLE_NODE_TEMPLATE


def test_templates_dir_checks(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a directory"):
        check_templates_dir(tmp_path / "missing")
    with pytest.raises(ConfigError, match="holds none of the template files"):
        check_templates_dir(tmp_path)
    (tmp_path / SINGLE_NODE_TEMPLATE).mkdir()  # a folder of that name is not a template
    with pytest.raises(ConfigError, match="holds none of the template files"):
        check_templates_dir(tmp_path)
    (tmp_path / MULTI_NODE_TEMPLATE).write_text("x")
    check_templates_dir(tmp_path)


def test_user_template_errors(tmp_path: Path) -> None:
    (tmp_path / MULTI_NODE_TEMPLATE).write_text("{{ nosuch | q }}\n")
    with pytest.raises(ConfigError) as info:
        render_script(CTX, tmp_path)
    assert "'nosuch' is undefined" in info.value.message
    assert info.value.hint is not None and "job_name" in info.value.hint and "batch_log" in info.value.hint
    (tmp_path / MULTI_NODE_TEMPLATE).write_text('{% extends "nosuch.j2" %}\n')
    with pytest.raises(ConfigError, match=r"template nosuch\.j2 not found"):
        render_script(CTX, tmp_path)
    (tmp_path / MULTI_NODE_TEMPLATE).write_text("{{ job_name | sq }} {{ nodes }}\n")
    assert render_script(CTX, tmp_path) == "j 2\n"
    single = dataclasses.replace(CTX, nodes=1, master_addr="127.0.0.1")
    assert render_script(single, tmp_path).startswith("#!/bin/bash\n")  # the built-in single-node one


@pytest.mark.parametrize(("changes", "present", "absent"), [
    ({}, ["#SBATCH --gpus-per-node=2\n", "#SBATCH --requeue\n", "#SBATCH --signal=B:USR2@120\n"],
     ["--account", "--qos", "--mem"]),
    ({"gpu_flag": "gres"}, ["#SBATCH --gres=gpu:2\n"], ["--gpus-per-node"]),
    ({"gpus_per_node": 0, "gpu_spec": "", "mem_mb": 100}, ["#SBATCH --mem=100M\n"], ["--gres", "--gpus-per-node"]),
    ({"mem_per_gpu_mb": 5, "mem_mb": 100}, ["#SBATCH --mem-per-gpu=5M\n"], ["--mem=100M"]),
    ({"account": "a", "qos": "q"}, ["#SBATCH --account=a\n", "#SBATCH --qos=q\n"], []),
    ({"requeue": False, "preempt_signal": "TERM", "preempt_before": 0}, ["#SBATCH --signal=B:TERM@0\n"],
     ["--requeue"]),
])
def test_optional_sbatch_lines(changes: dict[str, Any], present: list[str], absent: list[str]) -> None:
    script = render_script(dataclasses.replace(CTX, **changes))
    for text in present:
        assert text in script
    for text in absent:
        assert text not in script
