"""Site options: extra ``#SBATCH`` lines and ``--env`` variables (pure).

Extra sbatch options come from, lowest first: cluster.yaml ``defaults.sbatch``, the partition's
``sbatch``, then ``orch submit``'s named flags (``--constraint``, ``--exclusive``, ...) and
``--sbatch-arg KEY=VALUE`` (``KEY`` alone for a flag). A later source replaces an earlier value;
in cluster.yaml ``true`` is a flag and ``false`` removes an option set before. Options orch sets
itself (``ORCH_OPTIONS``) are refused, naming the orch flag to use instead: ``--sbatch-arg nodes=3``
would silently break the rank layout orch checked. Values are free text: the template quotes them
for sbatch's parser (``sq``), and the renderer refuses newlines and NUL bytes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from orchestrator.env.taskenv import LAUNCHER_OWNED_VARS
from orchestrator.errors import ConfigError
from orchestrator.spec.envnames import interpreter_problem, secret_hint, secret_name

# sbatch options orch sets or relies on -> what to use instead.
ORCH_OPTIONS: dict[str, str] = {
    "job-name": "--job-name", "nodes": "--nodes", "ntasks": "--nodes and --gpus (or --ntasks-per-node)",
    "ntasks-per-node": "--ntasks-per-node", "gpus-per-node": "--gpus", "gres": "--gpus (launcher.gpu_flag)",
    "gpus": "--gpus (GPUs per node)", "gpus-per-task": "--gpus-per-task", "cpus-per-task": "--cpus-per-task",
    "cpus-per-gpu": "--cpus-per-task", "mem": "defaults.mem_per_gpu", "mem-per-gpu": "defaults.mem_per_gpu",
    "mem-per-cpu": "defaults.mem_per_gpu", "time": "--time", "partition": "--partition", "account": "--account",
    "qos": "--qos", "output": "orch's job folder (logs/)", "error": "orch's job folder (logs/)",
    "open-mode": "nothing (orch appends to the logs)", "signal": "launcher.preempt_signal / preempt_before",
    "requeue": "launcher.requeue", "no-requeue": "launcher.requeue: false", "array": "--sweep (one job array)",
    "export": "--env KEY=VALUE or launcher.pass_env", "wrap": "a script or job", "parsable": "nothing",
    "wait": "orch status / orch logs -f", "test-only": "orch submit --dry-run", "ntasks-per-gpu": "--gpus-per-task",
    "chdir": "orch submit from the folder the job should work in (a script's ranks work in the submit directory)",
}
# orch submit's named flags for common site options (argparse dest -> sbatch option).
NAMED_OPTIONS: dict[str, str] = {
    "constraint": "constraint", "exclusive": "exclusive", "nodelist": "nodelist", "exclude": "exclude",
    "reservation": "reservation", "dependency": "dependency", "mail_type": "mail-type", "mail_user": "mail-user",
}
# Names --env may not set: the launcher derives them for every task, or Slurm owns them.
OWNED_ENV_PREFIXES = ("SLURM_", "SLURMD_", "SBATCH_", "SRUN_")
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Variable names that belong to someone else; cluster.yaml `env` keys (and --env) may not use them.
# The batch script's own shell variables (templates/*.sbatch.j2; tests/spec/test_extras_env_names.py checks
# that this table lists every name the templates assign): an env key equal to one would overwrite it,
# and some are used in arithmetic, where a value like a[$(cmd)] runs a command.
SCRIPT_VARIABLES = frozenset({
    "JOB_DIR", "PYTHON", "PREEMPT_SIGNAL", "ORCH_JOB_DIR", "REQUEUE_FILE", "srun_pid", "srun_rc", "signals",
    "seen", "requeue_id", "job_nodes", "head_node", "node_info", "preflight_rc", "preflight_next", "next_id",
    "ORCH_BATCH_START", "ORCH_SRUN_START", "ORCH_ATTEMPT", "attempt", "restart_next", "restart_args", "srun_nodes",
    "restart_rc", "resubmit_args", "preflight_args",
})
# bash's special, read-only or behaviour-changing variables (bash(1) "Shell Variables").
SHELL_VARIABLES = frozenset({
    "BASHOPTS", "SHELLOPTS", "EUID", "UID", "PPID", "GROUPS", "IFS", "ENV", "POSIXLY_CORRECT", "CDPATH",
    "GLOBIGNORE", "FUNCNAME", "LINENO", "RANDOM", "SRANDOM", "SECONDS", "EPOCHSECONDS", "EPOCHREALTIME",
    "PIPESTATUS", "OPTIND", "OPTARG", "OPTERR", "DIRSTACK", "REPLY", "SHLVL", "PWD", "OLDPWD", "PS4",
    "HISTFILE", "HOSTTYPE", "MACHTYPE", "OSTYPE", "TMOUT", "PROMPT_COMMAND",
})
# Prefixes: bash's own (BASH, BASH_ENV, BASH_FUNC_*), Slurm's input and output variables.
RESERVED_PREFIXES = ("BASH", "SLURM_", "SLURMD_", "SRUN_", "SBATCH_", "SALLOC_", "COMP_")
_KEY_RE = re.compile(r"[a-z][a-z0-9-]*[a-z0-9]\Z")

Extras = dict[str, str | None]  # sbatch option -> value, None for a flag


def sbatch_key_problem(key: str) -> tuple[str, str] | None:
    """Why ``key`` cannot be an extra sbatch option (message, hint), or None when it can."""
    if len(key) == 1:
        return (f"sbatch option {key!r} is a one-letter form",
                "use the long name, e.g. constraint instead of C (see man sbatch)")
    if not _KEY_RE.match(key):
        return (f"sbatch option {key!r} is not an option name",
                "write the long name without dashes, e.g. --sbatch-arg constraint=a100 or --sbatch-arg exclusive")
    if key in ORCH_OPTIONS:
        return (f"sbatch option {key!r} is set by orch itself", f"use {ORCH_OPTIONS[key]} instead")
    return None


def check_sbatch_key(key: str) -> str:
    """For cluster.yaml validators: ValueError with the problem and its fix."""
    problem = sbatch_key_problem(key)
    if problem is not None:
        raise ValueError(f"{problem[0]}: {problem[1]}")
    return key


def parse_sbatch_args(named: Mapping[str, str | bool | None], items: Sequence[str]) -> Extras:
    """The command line's extras: named flags (``NAMED_OPTIONS``) then ``--sbatch-arg`` items."""
    out: Extras = {}
    for dest, option in NAMED_OPTIONS.items():
        value = named.get(dest)
        if value is None or value is False:
            continue
        out[option] = None if value is True else str(value)
    for item in items:
        raw_key, sep, value = item.partition("=")
        key = raw_key.strip().removeprefix("--")
        problem = sbatch_key_problem(key)
        if problem is not None:
            raise ConfigError(f"--sbatch-arg {item!r}: {problem[0]}", hint=problem[1])
        if key in out:
            raise ConfigError(f"--sbatch-arg {item!r}: {key} is given twice",
                              hint=f"give --{key} once (named flags such as --constraint count too)")
        out[key] = value if sep else None
    return out


def merge_sbatch(*layers: Mapping[str, str | bool | int | None]) -> Extras:
    """cluster.yaml defaults, the partition's, then the command line's (later wins; False removes)."""
    out: Extras = {}
    for layer in layers:
        for key, value in layer.items():
            if value is False:
                out.pop(key, None)
            else:
                out[key] = None if value is True or value is None else str(value)
    return out


def check_env_var(name: str, value: str | None = None) -> None:
    """The one rule for a variable that orch exports to every task (cluster.yaml ``env``, ``--env``,
    ``launcher.pass_env``): raises ValueError saying what is wrong and the fix.

    Refused: names that are not ``[A-Za-z_][A-Za-z0-9_]*``; the batch script's own variables; the
    variables orch derives per rank (RANK, MASTER_PORT, ...); bash's special and read-only ones;
    ``BASH*``, ``SLURM_*`` and Slurm's other input prefixes; what the batch step or the interpreter
    depends on (``PATH``, ``PYTHONHOME``, ``LD_*``, ...: :mod:`orchestrator.spec.envnames`). Values:
    no NUL byte, newline or carriage return (Slurm's environment and the script cannot carry them).
    """
    if not isinstance(name, str) or not _ENV_NAME_RE.fullmatch(name):
        raise ValueError(f"{name!r} is not a valid environment variable name (use letters, digits and '_', "
                         "not starting with a digit)")
    owner = None
    if name in SCRIPT_VARIABLES:
        owner = "a variable of the batch script itself"
    elif name in LAUNCHER_OWNED_VARS:
        owner = "derived by orch for every rank"
    elif name in SHELL_VARIABLES or name.startswith("BASH"):
        owner = "a special or read-only bash variable"
    elif name.startswith(RESERVED_PREFIXES):
        owner = "reserved for Slurm (its SLURM_/SRUN_/SBATCH_ variables)"
    if owner is not None:
        raise ValueError(f"{name} is {owner}; orch cannot export it (remove it, or use another name)")
    problem = interpreter_problem(name)  # PATH, PYTHONHOME, LD_*, ... (spec/envnames.py, the one table)
    if problem is not None:
        raise ValueError(f"{problem[0]}: {problem[1]}")
    if value is not None:
        for bad, what in (("\0", "a NUL byte"), ("\n", "a newline"), ("\r", "a carriage return")):
            if bad in value:
                raise ValueError(f"the value of {name} contains {what}, which Slurm cannot carry (remove it)")


def parse_env_args(items: Sequence[str]) -> dict[str, str]:
    """``--env KEY=VALUE`` items, checked by cluster.yaml's own ``env`` rule, minus orch's own names;
    a name that looks like a secret's is refused (its value would be written): ``--pass-env NAME``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--env {item!r} is not KEY=VALUE", hint="write --env NAME=value (an empty value: NAME=)")
        if key in LAUNCHER_OWNED_VARS or key.startswith(OWNED_ENV_PREFIXES):
            raise ConfigError(f"--env {key}: orch's launcher (or Slurm) sets {key} for every task",
                              hint=f"leave {key} out; orch submit --dry-run shows what each rank gets")
        problem = interpreter_problem(key)
        if problem is not None:
            raise ConfigError(f"--env {key}: {problem[0]}", hint=problem[1])
        try:
            check_env_var(key, value)
        except ValueError as exc:
            raise ConfigError(f"--env {key}: {exc}", hint="use a name of letters, digits and '_' (not starting "
                                                          "with a digit) and a one-line value") from None
        if secret_name(key):
            raise ConfigError(f"--env {key}: the name looks like a secret's (*_KEY, *TOKEN*, *PASSWORD*, "
                              "*SECRET*), and --env values are written into the job folder", hint=secret_hint(key))
        if key in out:
            raise ConfigError(f"--env {key} is given twice", hint="give each variable once")
        out[key] = value
    return out


def placement(hosts: Sequence[str], extras: Mapping[str, str | None], nodes: int, partition: str) -> list[str]:
    """The ``nodes`` hosts the dry run shows: every ``nodelist`` node (Slurm allocates all of them), then
    the partition's first other nodes, never an ``exclude``d one, in node order. Contradictions are
    refused here."""
    from orchestrator.env.hostlist import HostlistError, expand

    def listed(option: str) -> list[str]:
        value = extras.get(option)
        if not value or "/" in value:  # unset, a flag, or a file of names (not read here)
            return []
        try:
            return expand(value)
        except HostlistError as exc:
            raise ConfigError(f"--{option} {value!r}: {exc.message}",
                              hint="use a Slurm hostlist such as gpu[001-004],gpu010") from None

    wanted, excluded = listed("nodelist"), set(listed("exclude"))
    outside = [h for h in wanted if h not in set(hosts)]
    if outside:
        raise ConfigError(f"--nodelist: {outside[0]} is not a node of partition {partition}",
                          hint=f"name nodes of partition {partition} (cluster.yaml partitions[].nodes), "
                               "or pick another --partition")
    if len(wanted) > nodes:
        raise ConfigError(f"--nodelist names {len(wanted)} nodes but --nodes is {nodes}: Slurm allocates every "
                          "listed node", hint=f"use --nodes {len(wanted)}, or list {nodes} node(s)")
    both = [h for h in wanted if h in excluded]
    if both:
        raise ConfigError(f"{both[0]} is in both --nodelist and --exclude", hint="remove it from one of them")
    others = [h for h in hosts if h not in excluded and h not in wanted]
    if len(wanted) + len(others) < nodes:
        raise ConfigError(f"--exclude leaves {len(wanted) + len(others)} node(s) of partition {partition}, "
                          f"fewer than --nodes {nodes}", hint="use fewer --nodes, or exclude fewer nodes")
    picked = set(wanted + others[:nodes - len(wanted)])
    return [h for h in hosts if h in picked]  # Slurm lists (and ranks) an allocation's nodes in node order


def parse_pass_env(names: Sequence[str]) -> list[str]:
    """``--pass-env NAME`` items: names only (the value stays in the submitting shell), by the same rule."""
    out: list[str] = []
    for name in names:
        if "=" in name:
            raise ConfigError(f"--pass-env {name.split('=', 1)[0]}=...: --pass-env takes a name, never a value",
                              hint=f"export {name.split('=', 1)[0]}=... in this shell, then "
                                   f"--pass-env {name.split('=', 1)[0]}")
        try:
            check_env_var(name)
        except ValueError as exc:
            raise ConfigError(f"--pass-env {name}: {exc}", hint="pass a variable of your own by name") from None
        if name not in out:
            out.append(name)
    return out
