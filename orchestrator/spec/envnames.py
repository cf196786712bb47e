"""The table of variable names the batch step or the interpreter depends on (pure).

One rule for every variable orch exports to every task (cluster.yaml ``env``, ``orch submit --env``,
``--pass-env`` and ``launcher.pass_env``; :func:`orchestrator.spec.extras.check_env_var` applies it):
a name in :data:`INTERPRETER_VARIABLES` (or starting with one of :data:`INTERPRETER_PREFIXES`) would
change how bash or Python start in every task (``PATH=/x`` and the batch script dies with exit 127
before srun; ``PYTHONHOME=/x`` and no task imports anything), so it is refused with the alternative.

Names that look like a secret (:func:`secret_name`) are refused by ``--env`` only: an ``--env`` value is
written into the job folder (``sbatch.sh``, ``job.json``); ``--pass-env NAME`` hands the variable over by
name instead, from the shell that runs ``orch submit``, and no file ever holds its value.
"""

from __future__ import annotations

import re

_SETUP = ("change it in launcher.setup of cluster.yaml (shell lines run before srun), e.g. "
          "'export {name}=/extra${{{name}:+:${name}}}', so the value the job starts with is kept")
_DROP = "remove it: orch's tasks must start the interpreter the job was planned with"
# name -> what to do instead
INTERPRETER_VARIABLES: dict[str, str] = {
    "PATH": _SETUP, "PYTHONPATH": _SETUP, "LD_LIBRARY_PATH": _SETUP,
    "PYTHONHOME": _DROP + " (use launcher.python to pick another interpreter)",
    "PYTHONPLATLIBDIR": _DROP, "PYTHONUSERBASE": _DROP, "PYTHONNOUSERSITE": _DROP, "PYTHONSAFEPATH": _DROP,
    "PYTHONSTARTUP": _DROP, "PYTHONINSPECT": _DROP + " (the tasks would wait for input at the end)",
    "PYTHONEXECUTABLE": _DROP,
    "BASH_ENV": _DROP + " (launcher.setup runs shell lines before srun)",
    "ENV": _DROP + " (launcher.setup runs shell lines before srun)",
    "SHELL": _DROP, "HOME": _DROP, "IFS": _DROP, "CDPATH": _DROP, "GLOBIGNORE": _DROP, "SHELLOPTS": _DROP,
    "BASHOPTS": _DROP, "PS4": _DROP, "POSIXLY_CORRECT": _DROP,
}
# prefix -> what to do instead (LD_PRELOAD, LD_AUDIT, LD_BIND_NOW ...: the dynamic loader of every program)
INTERPRETER_PREFIXES: dict[str, str] = {
    "LD_": _DROP + " (LD_LIBRARY_PATH may be changed in launcher.setup)",
    "BASH_FUNC_": _DROP,
}
# A name that looks like a secret: *_KEY, *TOKEN*, *PASSWORD*, *SECRET* (any case), and a few spellings.
_SECRET_RE = re.compile(r"(?:_KEY|KEY_?ID)$|TOKEN|PASSWORD|PASSWD|SECRET|CREDENTIAL|^KEY$", re.IGNORECASE)


def interpreter_problem(name: str) -> tuple[str, str] | None:
    """Why ``name`` may not be exported to every task and the alternative, or None."""
    fix = INTERPRETER_VARIABLES.get(name)
    if fix is None:
        fix = next((f for prefix, f in INTERPRETER_PREFIXES.items() if name.startswith(prefix)), None)
    if fix is None:
        return None
    return f"{name} is what the batch step or the interpreter of every task depends on", fix.format(name=name)


def secret_name(name: str) -> bool:
    """Does ``name`` look like a secret's (``WANDB_API_KEY``, ``HF_TOKEN``, ``DB_PASSWORD``, ...)?"""
    return bool(_SECRET_RE.search(name))


def secret_hint(name: str, option: str = "--env") -> str:
    return (f"{option} writes the value into the job folder (sbatch.sh, job.json): pass it by name instead, "
            f"export {name}=... in this shell and use orch submit --pass-env {name} (or launcher.pass_env "
            "in cluster.yaml)")
