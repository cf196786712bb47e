"""The quoting filters: the exact text of every special case; exact in both contexts (``shell_quote`` and
``sbatch_quote`` give back the value byte for byte in bash and in sbatch's ``#SBATCH`` parser,
tests/stubs/_stub.py), shellcheck-clean; ``verbatim`` is refused anywhere but the setup lines, which still pass
verbatim; ``finalize`` lets only quoted text and integers out of a template.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import load_stub_module

from orchestrator.errors import ConfigError
from orchestrator.slurm import quoting
from orchestrator.slurm.quoting import env_name, sbatch_quote, shell_quote, verbatim

SHELLCHECK = shutil.which("shellcheck")


# --- the exact text of each filter -------------------------------------------------------------

@pytest.mark.parametrize(("value", "quoted"), [
    ("plain", "plain"),
    ("a=b", "a=b"),
    ("", "''"),
    ("with space", "'with space'"),
    ("it's", "'it'\"'\"'s'"),
    ("~", "'~'"),
    ("~/x", "\\~/x"),
    ("~root", "\\~root"),
    ("~/a b", "\\~'/a b'"),
    ("a\\b", '"a\\\\b"'),
    ('\\"$`', '"\\\\\\"\\$\\`"'),
    ("=x", "'=x'"),
    ("=it's", "'=it'\"'\"'s'"),
    ("x=", "x="),
    (7, "7"),
])
def test_shell_quote_exact(value: object, quoted: str) -> None:
    assert shell_quote(value) == quoted
    assert isinstance(shell_quote(value), quoting.Shell)


@pytest.mark.parametrize(("value", "quoted"), [
    ("plain", "plain"),
    ("a_b@c%d+e=f:g,h.i/j-k", "a_b@c%d+e=f:g,h.i/j-k"),
    ("", '""'),
    ("a b", '"a b"'),
    ('say "hi"', '"say \\"hi\\""'),
    ("back\\slash", '"back\\\\slash"'),
    ("it's", '"it\'s"'),
    ("packjob", 'p""ackjob'),  # split by "" (inert in bash too)
    ("PackJob", 'P""ackJob'),
    ("hetjob", 'h""etjob'),
    ("x-HETJOB-y", 'x-H""ETJOB-y'),
    ("a packjob", '"a p""ackjob"'),
])
def test_sbatch_quote_exact(value: str, quoted: str) -> None:
    assert sbatch_quote(value) == quoted


@pytest.mark.parametrize(("name", "ok"), [("A", True), ("_a1", True), ("a_B_9", True), ("1A", False), ("A-B", False),
                                          ("", False), ("A B", False), ("A\n", False), ("É", False)])
def test_env_name(name: str, ok: bool) -> None:
    if ok:
        assert env_name(name) == name
    else:
        with pytest.raises(ConfigError, match="is not a valid environment variable name"):
            env_name(name)


@pytest.mark.parametrize("value", [None, True, False])
def test_filters_refuse_values_without_text(value: object) -> None:
    for quote in (shell_quote, sbatch_quote, env_name, verbatim):
        with pytest.raises(ConfigError, match="which has no text form"):
            quote(value)


def test_verbatim_is_the_text_itself() -> None:
    line = quoting.SetupLine("module load x && echo $HOME")
    assert verbatim(line) == "module load x && echo $HOME"
    for other in ("module load x", 3):  # only launcher.setup lines pass
        with pytest.raises(ConfigError, match=r"only for the lines of launcher\.setup"):
            verbatim(other)


@pytest.mark.parametrize("value", [quoting.Shell("x"), 0, 5, -1])
def test_finalize_passes_quoted_text_and_integers(value: object) -> None:
    assert quoting.finalize(value) is value


@pytest.mark.parametrize("value", ["x", True, False, None, 1.5, ["x"]])
def test_finalize_refuses_everything_else(value: object) -> None:
    with pytest.raises(ConfigError, match="without a quoting filter"):
        quoting.finalize(value)


# --- quoting filters are safe in both contexts ----------------------------------------------------

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
