"""A quoting filter inside quotes the template opened is refused when the template compiles:
hostile templates of our own, each unsafe context refused (and shown to run a hostile value
without the check), each safe context rendered and run in bash without running anything."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from orchestrator.errors import ConfigError
from orchestrator.slurm import quoting, render, shellctx, templating
from orchestrator.slurm.plan import SubmitPlan

SETTINGS: dict[str, Any] = {"undefined": jinja2.StrictUndefined, "autoescape": False, "keep_trailing_newline": True,
                            "trim_blocks": True, "lstrip_blocks": True, "finalize": quoting.finalize}
PWN = "$(touch pwned)"
HOSTILE = [PWN, "a\\b$(touch pwned)", "`touch pwned`", "'$(touch pwned)'", '"$(touch pwned)"', "x;touch pwned",
           "$(touch pwned)'\"`", "EOF"]


def env(checking: bool) -> jinja2.Environment:
    cls = templating.environment_class(render.INT_FIELDS) if checking else jinja2.Environment
    environment = cls(**SETTINGS)
    environment.filters.update(quoting.FILTERS)
    return environment


def run_bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    (cwd / "line.sh").write_text(script)
    syntax = subprocess.run(["bash", "-n", "line.sh"], cwd=cwd, capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, syntax.stderr
    return subprocess.run(["bash", "line.sh"], cwd=cwd, capture_output=True, text=True, timeout=30, check=False,
                          env={"PATH": os.environ["PATH"]})


# id, template, the context named, a value that runs `touch pwned` there without the check (None: none does)
UNSAFE: list[tuple[str, str, str, str | None]] = [
    ("double quotes", 'echo "job {{ x | q }}"\n', "double quotes", PWN),
    ("double, sq", 'echo "job {{ x | sq }}"\n', "double quotes", None),  # splits the value; refused all the same
    ("single quotes", "echo '{{ x | q }}'\n", "single quotes", PWN),
    ("ansi quotes", "echo $'{{ x | q }}'\n", "$'...' quotes", PWN),
    ("backquotes", "echo `echo {{ x | q }}`\n", "backquotes", "a\\b$(touch pwned)"),
    ("backquotes in double", 'echo "`echo {{ x | q }}`"\n', "backquotes", "a\\b$(touch pwned)"),
    ("param in double", 'echo "${X:-{{ x | q }}}"\n', "a ${...} expansion", PWN),
    ("param unquoted", "echo ${X:-{{ x | q }}}\n", "a ${...} expansion", None),
    ("arithmetic", "echo $(( {{ x | q }} ))\n", "an arithmetic expression", PWN),
    ("arithmetic command", "(( {{ x | q }} )) || true\n", "an arithmetic expression", PWN),
    ("heredoc", "cat <<EOF\n{{ x | q }}\nEOF\n", "here-document", PWN),
    ("heredoc dash", "cat <<-END\n\t{{ x | q }}\n\tEND\n", "here-document", PWN),
    ("double across lines", 'echo "a\nb {{ x | q }}"\n', "double quotes", PWN),
    ("double after a safe one", 'echo {{ x | q }} "{{ x | q }}"\n', "double quotes", PWN),
    ("subst in double, then quote", 'echo "$(echo a) {{ x | q }}"\n', "double quotes", PWN),
    ("verbatim in double", 'echo "{{ x | verbatim }}"\n', "double quotes", None),
    ("inside an if", '{% if true %}\necho "{{ x | q }}"\n{% endif %}\n', "double quotes", PWN),
    ("after a comment with a quote", "# it's fine\necho '{{ x | q }}'\n", "single quotes", PWN),
    ("after a quote in a jinja tag", "{% set y = \"'\" %}echo '{{ x | q }}'\n", "single quotes", PWN),
]


@pytest.mark.parametrize(("template", "context", "runs"), [u[1:] for u in UNSAFE], ids=[u[0] for u in UNSAFE])
def test_a_filter_inside_quotes_is_refused_naming_line_and_fix(template: str, context: str, runs: str | None,
                                                                tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        env(True).from_string(template)
    line = template[:template.rindex("{{ x")].count("\n") + 1  # the last expression is the unsafe one
    assert f"template <string>, line {line}:" in info.value.message, info.value.message
    assert context in info.value.message and "would run" in info.value.message
    assert info.value.hint is not None and ("{{ x | q }} without surrounding quotes" in info.value.hint
                                            or "backquotes" in info.value.hint or "<<'EOF'" in info.value.hint)
    if runs is not None:  # the refusal matters: without it, bash runs the value
        rendered = env(False).from_string(template).render(x=runs)
        run_bash(rendered, tmp_path)
        assert (tmp_path / "pwned").exists(), rendered


SAFE: list[tuple[str, str]] = [
    ("a word", "echo job {{ x | q }}\n"),
    ("an assignment", "X={{ x | q }}\necho \"$X\"\n"),
    ("sbatch line", "#SBATCH --job-name={{ x | sq }}\necho {{ x | sq }}\n"),
    ("comment with quotes", "# say \"{{ x | q }}\" or '{{ x | q }}'\necho {{ x | q }}\n"),
    ("command substitution", "echo $(echo {{ x | q }})\n"),
    ("command substitution in double quotes", 'echo "$(echo {{ x | q }})"\n'),
    ("nested substitution", 'echo "$(echo "$(echo {{ x | q }})")"\n'),
    ("subshell", "( echo {{ x | q }} )\n"),
    ("function", "f() { echo {{ x | q }}; }\nf\n"),
    ("after closed quotes", "echo \"a\" 'b' $'c' {{ x | q }} \"d\"\n"),
    ("escaped quotes", "echo \\\" it\\'s {{ x | q }}\n"),
    ("after arithmetic", "n=$((1 + (2 * 3)))\n((n > 0)) && echo {{ x | q }}\n"),
    ("after a parameter", "echo ${PATH%%:*} ${PATH:+a} {{ x | q }}\n"),
    ("dollar hash", "set -- a\necho $# {{ x | q }}\n"),
    ("quoted heredoc", "cat <<'EOF'\n{{ x | q }} \"'\nEOF\necho {{ x | q }}\n"),
    ("after an unquoted heredoc", "cat <<EOF\ntext \" ' $HOME $(echo ')')\nEOF\necho {{ x | q }}\n"),
    ("here-string", "cat <<< {{ x | q }}\n"),
    ("envname in double quotes", 'echo "{{ "NAME" | envname }}"\n'),
    ("integer in double quotes", 'echo "{{ nodes }} {{ 3 }}"\n'),
    ("jinja comment with a quote", "{# don't #}echo {{ x | q }}\n"),
    ("if with balanced branches", "{% if true %}echo \"a\"{% else %}echo 'b'{% endif %} {{ x | q }}\n"),
]


@pytest.mark.parametrize("template", [s[1] for s in SAFE], ids=[s[0] for s in SAFE])
def test_safe_contexts_render_and_run_nothing(template: str, tmp_path: Path) -> None:
    compiled = env(True).from_string(template)
    for value in HOSTILE:
        rendered = compiled.render(x=value, nodes=2)
        proc = run_bash(rendered, tmp_path)
        assert not (tmp_path / "pwned").exists(), f"{value!r} ran in:\n{rendered}"
        if template.startswith("echo job"):
            assert proc.stdout == f"job {value}\n", "the value arrives byte-exact"


def test_the_shipped_templates_pass() -> None:
    environment = env(True)
    for name in render.TEMPLATE_NAMES:
        source = (render.BUILTIN_TEMPLATES / name).read_text(encoding="utf-8")
        assert shellctx.find_unsafe(environment.lex(source), render.INT_FIELDS) is None, name


def test_a_user_template_is_refused_with_its_file_and_line(tmp_path: Path,
                                                           make_plan: Callable[..., SubmitPlan]) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    base = (render.BUILTIN_TEMPLATES / render.BASE_TEMPLATE).read_text(encoding="utf-8")
    marker = "PYTHON={{ python | q }}\n"
    line = base[:base.index(marker)].count("\n") + 2
    (templates / render.BASE_TEMPLATE).write_text(base.replace(marker, marker + 'echo "{{ job_name | q }}"\n'))
    with pytest.raises(ConfigError) as info:
        make_plan(nodes=2, gpus=8, templates=str(templates))
    assert f"template {templates / render.BASE_TEMPLATE}, line {line}: {{{{ job_name | q }}}}" in info.value.message
    assert "double quotes" in info.value.message


def test_an_edited_cached_template_is_checked_again(tmp_path: Path, make_plan: Callable[..., SubmitPlan],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled template comes from the cache only while its source is the same: an edit compiles
    (and checks) it again, in a new process and in the same one."""
    monkeypatch.setenv("ORCH_CACHE_DIR", str(tmp_path / "cache"))
    render.environment.cache_clear()
    templates = tmp_path / "templates"
    templates.mkdir()
    path = templates / render.SINGLE_NODE_TEMPLATE
    safe = (render.BUILTIN_TEMPLATES / render.SINGLE_NODE_TEMPLATE).read_text(encoding="utf-8")
    path.write_text(safe)
    assert "MASTER_ADDR=" in make_plan(nodes=1, gpus=1, templates=str(templates)).script
    assert any((tmp_path / "cache").rglob("*.jinja")), "the template was cached"
    path.write_text(safe.replace("MASTER_ADDR={{ master_addr | q }}", "MASTER_ADDR='{{ master_addr | q }}'"))
    os.utime(path, (1, 1))  # a new mtime even within the file system's timestamp resolution
    with pytest.raises(ConfigError, match="single quotes"):
        make_plan(nodes=1, gpus=1, templates=str(templates))
    render.environment.cache_clear()  # a new process: the bytecode cache only
    with pytest.raises(ConfigError, match="single quotes"):
        make_plan(nodes=1, gpus=1, templates=str(templates))
    render.environment.cache_clear()


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab \t\n#'\"`$(){}\\<-;|EOF")), max_size=200))
@example(text="<<\\\n\n")  # an empty quoted delimiter: the empty line that ends it is still a line
def test_the_lexer_reads_any_text_to_its_end(text: str) -> None:
    lexer = shellctx.Lexer()
    lexer.feed(text)
    assert lexer.line == text.count("\n") + 1
    assert lexer.stack, "the command context at the bottom is never popped"
