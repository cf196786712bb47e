"""sbatch scripts from Jinja2 templates (pure: a ScriptContext in, the script text out).

Every value a template prints goes through one of the quoting filters of
:mod:`orchestrator.slurm.quoting` (``q``, ``sq``, ``envname``, ``verbatim``); its ``finalize`` hook
refuses any other output, for the built-in templates and a user's own (``--templates DIR``) alike.

Values that neither bash nor Slurm can carry are refused with a ConfigError naming the field: a
newline (it would end the ``#SBATCH`` line or the command), a NUL byte, a carriage return (a DOS
line break to sbatch and shellcheck), text that is not UTF-8, and,
in the job folder path, ``%`` and ``\\`` (Slurm's ``--output`` filename patterns treat them).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from orchestrator.errors import ConfigError
from orchestrator.records.joblayout import (
    ARRAY_BATCH_LOG_PATTERN,
    ARRAY_INDEX_PATTERN,
    ARRAY_RANK_LOG_PATTERN,
    BATCH_LOG_PATTERN,
    RANK_LOG_PATTERN,
    RAW_JOB_ID_FILE,
)
from orchestrator.records.restarts.attempts import RESTART_NEXT_FILE, RESUBMIT_NEXT_FILE
from orchestrator.slurm import templating
from orchestrator.slurm.quoting import FILTERS, SetupLine, Shell, finalize
from orchestrator.spec.runconfig import (
    JOB_ID_FILE,
    LOG_DIR,
    PREFLIGHT_NEXT_FILE,
    PREFLIGHT_RESULT_FILE,
    REQUEUE_FILE,
    SCRIPT_FILE,
)

if TYPE_CHECKING:
    import jinja2

BUILTIN_TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
BASE_TEMPLATE = "base.sbatch.j2"
SINGLE_NODE_TEMPLATE = "single_node.sbatch.j2"
MULTI_NODE_TEMPLATE = "multi_node.sbatch.j2"
TEMPLATE_NAMES = (BASE_TEMPLATE, SINGLE_NODE_TEMPLATE, MULTI_NODE_TEMPLATE)

LOOPBACK_ADDR = "127.0.0.1"  # MASTER_ADDR of single-node jobs: every rank runs on the batch host
BATCH_LOG = BATCH_LOG_PATTERN  # inside LOG_DIR (jobdirs owns the names)
RANK_LOG = RANK_LOG_PATTERN
PREFLIGHT_LOG_PATTERN = "preflight-%j.out"  # --preflight: every task's output of the selftest step

# What each field is called where the user sets it (for error messages).
FIELD_LABELS: dict[str, str] = {
    "job_name": "the job name (--job-name)",
    "partition": "the partition (--partition)",
    "account": "the account (--account or defaults.account)",
    "qos": "the QOS (--qos or defaults.qos)",
    "time": "the time limit (--time)",
    "gpu_spec": "gpu_type of the partition",
    "job_dir": "the job folder (launcher.job_root)",
    "workdir": "the submit directory (a script's working directory, --chdir)",
    "python": "the python path (launcher.python)",
    "env": "env of cluster.yaml",
    "setup": "launcher.setup",
    "preempt_signal": "launcher.preempt_signal",
    "extra_env": "--env",
    "container_image": "the container image (--container-image or launcher.container.image)",
    "container_mounts": "the container mounts (--container-mounts or launcher.container.mounts)",
    "container_python": "launcher.container.python",
    "apptainer": "launcher.container.apptainer",
    "sbatch_extra": "the sbatch options (--sbatch-arg, --constraint, ..., cluster.yaml sbatch)",
}


@dataclass(frozen=True)
class ScriptContext:
    """Everything a template may use. Plain data; :func:`render_script` checks every string."""

    job_name: str
    nodes: int
    ntasks_per_node: int
    gpus_per_node: int
    cpus_per_task: int
    time: str
    partition: str
    job_dir: str
    python: str
    gpu_flag: Literal["gpus-per-node", "gres"] = "gpus-per-node"
    gpu_spec: str = ""  # "8" or "a100:8": what follows --gpus-per-node= or --gres=gpu:
    mem_per_gpu_mb: int | None = None
    mem_mb: int | None = None
    account: str | None = None
    qos: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    setup: Sequence[str] = ()
    pass_env: Sequence[str] = ()  # names only (launcher.pass_env): the values stay in the environment
    srun_wait: int = 60
    preempt_signal: str = "USR2"
    preempt_before: int = 120
    requeue: bool = True
    master_addr: str | None = None  # fixed MASTER_ADDR (single node); None: looked up at run time
    array: str | None = None  # a job array: sbatch's --array value ("0-3", "0-3%2"); job_dir is the array's
    sbatch_extra: Mapping[str, str | None] = field(default_factory=dict)  # option -> value (None: a flag)
    gpus_per_task: int = 1
    extra_env: Mapping[str, str] = field(default_factory=dict)  # orch submit --env (after cluster.yaml env)
    container_runtime: Literal["none", "pyxis", "apptainer"] = "none"  # see orchestrator.spec.containers
    container_image: str | None = None
    container_mounts: str | None = None
    container_python: str = "python3"
    apptainer: str = "apptainer"
    preflight: Literal["stop", "exclude"] | None = None  # orch submit --preflight: the selftest step first
    spare_nodes: int = 0  # orch submit --spare-nodes: allocated beyond `nodes`, for restarts without a blamed node
    workdir: str | None = None  # a script's working directory: the submit directory (sbatch --chdir)

    @property
    def template_name(self) -> str:
        return SINGLE_NODE_TEMPLATE if self.nodes + self.spare_nodes == 1 else MULTI_NODE_TEMPLATE

    def variables(self) -> dict[str, Any]:
        """The template variables: the fields plus the job folder paths derived from ``job_dir``."""
        values: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        values["setup"] = tuple(SetupLine(line) for line in self.setup)  # the only input of | verbatim
        if self.array:  # each element runs in <array folder>/<index> (%a), its logs named by <array id>_<index>
            log_dir = f"{self.job_dir}/{ARRAY_INDEX_PATTERN}/{LOG_DIR}"
            batch, rank = ARRAY_BATCH_LOG_PATTERN, ARRAY_RANK_LOG_PATTERN
        else:
            log_dir, batch, rank = f"{self.job_dir}/{LOG_DIR}", BATCH_LOG_PATTERN, RANK_LOG_PATTERN
        values.update(
            log_dir=log_dir,
            batch_log=f"{log_dir}/{batch}",
            rank_log=f"{log_dir}/{rank}",
            requeue_file=f"{self.job_dir}/{REQUEUE_FILE}",
            requeue_name=REQUEUE_FILE,
            raw_id_name=RAW_JOB_ID_FILE,
            job_id_name=JOB_ID_FILE,
            preflight_log=f"{log_dir}/{PREFLIGHT_LOG_PATTERN}",
            preflight_next_name=PREFLIGHT_NEXT_FILE,
            preflight_result_name=PREFLIGHT_RESULT_FILE,
            script_name=SCRIPT_FILE,
            alloc_nodes=self.nodes + self.spare_nodes,
            restart_next_name=RESTART_NEXT_FILE,
            resubmit_next_name=RESUBMIT_NEXT_FILE,
        )
        return values


# Fields that are integers: their output holds no quote, so it may stand inside quotes (shellctx).
INT_FIELDS = frozenset(f.name for f in fields(ScriptContext) if str(f.type) in ("int", "int | None"))


def check_context(context: ScriptContext) -> None:
    """Refuse values that bash or Slurm cannot carry, naming the field (before anything renders)."""
    for f in fields(context):
        value = getattr(context, f.name)
        label = FIELD_LABELS.get(f.name, f.name)
        if isinstance(value, str):
            _check_value(label, value)
        elif isinstance(value, Mapping):
            for key, val in value.items():
                _check_value(f"{label}: {key}", key)
                if val is not None:
                    _check_value(f"{label}: {key}", val)
    for index, line in enumerate(context.setup):
        for bad, what in (("\0", "a NUL byte"), ("\r", "a carriage return (sbatch refuses DOS line breaks)")):
            if bad in line:
                raise ConfigError(f"{FIELD_LABELS['setup']}[{index}] contains {what}",
                                  hint=f"remove it from {FIELD_LABELS['setup']}")
        _check_encoding(f"{FIELD_LABELS['setup']}[{index}]", line)
    for bad in "%\\":
        if bad in context.job_dir:
            raise ConfigError(
                f"the job folder {context.job_dir!r} contains {bad!r}, which Slurm's --output "
                "filename patterns would rewrite",
                hint="choose a launcher.job_root (and job name) without '%' and '\\'",
            )
    if not context.job_dir.startswith("/"):
        raise ConfigError(f"the job folder {context.job_dir!r} is not an absolute path",
                          hint="pass an absolute job folder (orch submit resolves launcher.job_root)")


def _check_value(label: str, value: str) -> None:
    # A carriage return: sbatch and bash would carry it, but it reads as a DOS line break to
    # people and linters (shellcheck SC1017 refuses the whole script), so it is refused too.
    for bad, what in (("\n", "a newline"), ("\0", "a NUL byte"), ("\r", "a carriage return")):
        if bad in value:
            raise ConfigError(f"{label} contains {what}, which a Slurm batch script cannot carry: {value!r}",
                              hint=f"remove the {what.removeprefix('a ')} from {label}")
    _check_encoding(label, value)


def _check_encoding(label: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{label} is not valid UTF-8 text: {value!r}",
                          hint=f"use UTF-8 text in {label}") from None


def template_sources(templates_dir: Path | None = None) -> dict[str, Path]:
    """Which file each template name comes from: the user's directory first, else the built-in."""
    sources = {}
    for name in TEMPLATE_NAMES:
        user = templates_dir / name if templates_dir is not None else None
        sources[name] = user if user is not None and user.is_file() else BUILTIN_TEMPLATES / name
    return sources


def check_templates_dir(templates_dir: Path) -> None:
    """``--templates DIR`` must be a directory holding at least one of the template names."""
    if not templates_dir.is_dir():
        raise ConfigError(f"--templates {templates_dir} is not a directory",
                          hint="pass a directory holding your versions of " + ", ".join(TEMPLATE_NAMES))
    if not any((templates_dir / name).is_file() for name in TEMPLATE_NAMES):
        raise ConfigError(
            f"--templates {templates_dir} holds none of the template files " + ", ".join(TEMPLATE_NAMES),
            hint=f"copy the ones you want to change from {BUILTIN_TEMPLATES} and edit them; "
                 "missing ones fall back to the built-in templates",
        )


@functools.lru_cache(maxsize=8)
def environment(templates_dir: Path | None = None) -> jinja2.Environment:
    """The Jinja2 environment: the user's templates first, then the built-in ones."""
    import jinja2

    from orchestrator.records.cache import template_bytecode_cache

    search = [str(templates_dir), str(BUILTIN_TEMPLATES)] if templates_dir else [str(BUILTIN_TEMPLATES)]
    settings: dict[str, Any] = {
        "undefined": jinja2.StrictUndefined,
        "autoescape": False,
        "keep_trailing_newline": True,
        "trim_blocks": True,
        "lstrip_blocks": True,
        "finalize": finalize,
        "auto_reload": True,  # a stat per render: edits to --templates files are seen in long sessions
    }
    # compiled templates are cached per user, keyed by each file's path and content (cache.py); a template
    # is checked for filters inside quotes (shellctx) when it compiles, so a cached one was checked
    key = {**{k: getattr(v, "__qualname__", v) for k, v in settings.items()}, "quoting_check": templating.CHECK_VERSION}
    env = templating.environment_class(INT_FIELDS)(loader=jinja2.FileSystemLoader(search),
                                                   bytecode_cache=template_bytecode_cache(key), **settings)
    env.filters.update(FILTERS)
    env.context_class = templating.context_class(Shell)
    return env


def render_script(context: ScriptContext, templates_dir: Path | None = None) -> str:
    """Render the sbatch script for ``context`` (single- or multi-node template by ``nodes``)."""
    import jinja2

    check_context(context)
    name = context.template_name
    try:
        template = environment(templates_dir).get_template(name)
        return template.render(context.variables())
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"template {exc.filename or exc.name}, line {exc.lineno}: {exc.message}",
                          hint="fix the template syntax") from None
    except jinja2.UndefinedError as exc:
        known = ", ".join(sorted(context.variables()))
        raise ConfigError(f"template {name}: {exc.message}", hint=f"templates may use: {known}") from None
    except jinja2.TemplateNotFound as exc:
        raise ConfigError(f"template {exc.name} not found (looked in "
                          f"{templates_dir or ''} {BUILTIN_TEMPLATES})".replace("( ", "("),
                          hint="restore the built-in templates or add the file to --templates DIR") from None
