"""The options of ``orch submit``, ``orch run`` and ``orch exec``, the Python API's keywords and ``orch mcp``'s
plan tool: one table, :data:`OPTIONS` (pure data: nothing here builds a parser or a model).

Each :class:`Option` is declared once, with everything each interface needs: its flag(s), how argparse takes
it (``kind``), metavar, choices, default, help, the verbs that take it, and the ``--help`` section it sits in
on ``orch submit``. From it come the verbs' argparse flags (``commands/_common.py``), the API's request
keywords (``api.REQUEST_FIELDS``), the MCP plan tool's input model and signature (``commands/_mcp_plan.py``)
and the options table of docs/cli.md (:func:`markdown_table`, written by ``scripts/docs_tables.py``);
``SubmitOptions`` (``service/request.py``) is tested equal to it (tests/spec/test_options.py).

The table's order is the order each verb's ``--help`` lists its options in (``place``: where a verb lists
one elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.spec.datadir import DATA_DIR_ENV_VAR
from orchestrator.spec.launch import AUTO, STYLES

SUBMIT, RUN, EXEC, API, MCP = "submit", "run", "exec", "api", "mcp"
VERBS = (SUBMIT, RUN, EXEC, API, MCP)
# kinds: "str"/"int" a value, "flag" store_true, "list" append (repeatable), "switch" one store_const per switch
KINDS = ("str", "int", "flag", "list", "switch")

# orch submit's --help sections (an option's ``group``; the other verbs list every option under "options")
GROUPS = {
    "site": "site options (added as #SBATCH lines after cluster.yaml's defaults.sbatch)",
    "containers": "containers (default: launcher.container of cluster.yaml)",
}


@dataclass(frozen=True)
class Option:
    """One option: ``name`` is its API keyword, its ``SubmitOptions`` field and its MCP field."""

    name: str
    verbs: tuple[str, ...]
    help: str
    flags: tuple[str, ...] = ()  # no flag: a keyword only (script_args: what follows --); "job": a positional
    kind: str = "str"
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    default: object = None
    nargs: str | None = None
    const: str | None = None
    dest: str | None = None  # the argparse dest when it is not ``name``
    group: str | None = None  # orch submit's --help section (GROUPS)
    switches: tuple[Switch, ...] = ()
    helps: tuple[tuple[str, str], ...] = ()  # (verb, help) where a verb says it otherwise
    place: tuple[tuple[str, str], ...] = ()  # (verb, option) where a verb lists it after that option
    request: bool = True  # with "api": a field of the request (SubmitOptions), not a keyword of its own
    literal: tuple[str, ...] | None = None  # the values the API and MCP fields take (a Literal)
    describe: str | None = None  # the MCP field's description

    @property
    def key(self) -> str:
        """The argparse dest (``vars(args)``'s key)."""
        return self.dest or self.name

    def help_for(self, verb: str) -> str:
        return dict(self.helps).get(verb, self.help)

    def after(self, verb: str) -> str | None:
        return dict(self.place).get(verb)


@dataclass(frozen=True)
class Switch:
    """One flag of a ``switch`` option: it sets the option to ``const`` (the flags of one option exclude each
    other)."""

    flag: str
    const: str
    help: str


JOB_HELP = ("a job name from jobs/ (e.g. {}), the path of a job file, or a torchrun-style script (train.py; its "
        "arguments after --)")
_LAUNCHING = (SUBMIT, RUN, EXEC)

OPTIONS: tuple[Option, ...] = (
    # what to run (orch submit, orch run, orch exec)
    Option("job", (*_LAUNCHING, API, MCP), JOB_HELP.format("mnist"), flags=("job",), nargs="?", metavar="JOB",
           helps=((RUN, JOB_HELP.format("smoke, mnist")), (EXEC, JOB_HELP.format("train.py"))),
           describe="a job name (jobs/), a job file, or a script (train.py)"),
    Option("module", (*_LAUNCHING, API, MCP), "run a module as a script, as python -m does (its arguments after --)",
           flags=("-m",), metavar="MODULE", describe="run a module as python -m does"),
    Option("script_args", (*_LAUNCHING, API, MCP), "a script's own arguments (after --)", kind="list",
           describe="a script's own arguments (after --)"),
    Option("overrides", (*_LAUNCHING, API, MCP),
           "hyperparameter overrides, checked against the job's parameters (e.g. lr=0.05)",
           flags=("overrides",), kind="list", nargs="*", metavar="key=value", default=(),
           describe="key=value hyperparameters of a job file"),
    Option("data_dir", (*_LAUNCHING, API, MCP), f"dataset directory (default: ${DATA_DIR_ENV_VAR})",
           flags=("--data-dir",), metavar="DIR"),
    Option("no_check", (*_LAUNCHING, API, MCP),
           "launch a script without running orch doctor on it (its launch style is still read from it)",
           flags=("--no-check",), kind="flag", default=False),
    Option("ignore", (*_LAUNCHING, API, MCP),
           "orch doctor codes not to report for this script (repeatable), e.g. --ignore DDP001,DDP005; "
           "cluster.yaml's doctor.ignore adds its own", flags=("--ignore",), kind="list", metavar="CODE[,CODE]",
           default=(), describe="orch doctor codes not to report"),
    Option("launch", (*_LAUNCHING, API, MCP),
           "how the script starts its ranks: env (torchrun's variables), local-rank-arg (torch.distributed.launch's "
           "--local-rank=N), per-node (it spawns its own processes: one task per node), slurm (it reads "
           "SLURM_PROCID); default auto: read from the script, shown by the dry run",
           flags=("--launch",), choices=(AUTO, *STYLES), default=AUTO, metavar="STYLE"),
    Option("track", _LAUNCHING,
           "also log to this experiment tracker (wandb, mlflow; repeatable), one run per job across requeues and "
           "restarts; cluster.yaml's tracking adds its own (TensorBoard is always on)",
           flags=("--track",), kind="list", metavar="NAME", default=()),
    # resources
    Option("nodes", (SUBMIT, API, MCP), "number of nodes (default: the job's)", flags=("--nodes",), kind="int",
           metavar="N"),
    Option("gpus", (SUBMIT, API, MCP), "GPUs per node (default: the job's); tasks per node = G / --gpus-per-task",
           flags=("--gpus",), kind="int", metavar="G"),
    Option("nproc", (RUN,), "processes (ranks) to start (default: 1; with --resume: as before)",
           flags=("--nproc",), kind="int", metavar="N"),
    Option("gpus_per_task", (SUBMIT, RUN, API, MCP),
           "GPUs each task holds (scripts only; default 1): G / K tasks per node, each seeing exactly its K GPUs",
           flags=("--gpus-per-task",), kind="int", metavar="K",
           helps=((RUN, "scripts: each rank holds K of this machine's GPUs (CUDA_VISIBLE_DEVICES, else all); "
                        "--nproc defaults to GPUs / K"),)),
    Option("ntasks_per_node", (SUBMIT, API, MCP),
           "tasks per node: needed with --gpus 0 (CPU ranks); with GPUs it must divide --gpus (G/T GPUs per task: "
           "scripts only)", flags=("--ntasks-per-node",), kind="int", metavar="T"),
    Option("cpus_per_task", (SUBMIT, API, MCP),
           "CPUs per task (default: the job's, defaults.cpus_per_task, or the node's CPUs per GPU x the task's "
           "GPUs; CPU jobs: the node's CPUs divided among its tasks)", flags=("--cpus-per-task",), kind="int",
           metavar="C"),
    Option("partition", (SUBMIT, API, MCP), "Slurm partition from cluster.yaml", flags=("--partition",),
           metavar="P"),
    Option("time", (SUBMIT, API, MCP), "time limit, e.g. 04:00:00 or 1-12:00:00", flags=("--time",),
           metavar="TIME"),
    Option("job_name", (SUBMIT, API, MCP), "Slurm job name (default: the job's name)", flags=("--job-name",),
           metavar="NAME"),
    Option("account", (SUBMIT, API, MCP), "Slurm account (default: defaults.account)", flags=("--account",),
           metavar="A"),
    Option("qos", (SUBMIT, API, MCP), "Slurm QOS (default: defaults.qos)", flags=("--qos",), metavar="Q"),
    # site options
    Option("constraint", (SUBMIT, API, MCP), "node features, e.g. a100 or 'a100&ib'", flags=("--constraint",),
           metavar="FEATURES", group="site"),
    Option("exclusive", (SUBMIT, API), "whole nodes for this job", flags=("--exclusive",), kind="flag",
           group="site"),
    Option("nodelist", (SUBMIT, API, MCP), "nodes to use, e.g. gpu[001-004]", flags=("--nodelist",),
           metavar="HOSTS", group="site"),
    Option("exclude", (SUBMIT, API, MCP), "nodes to avoid", flags=("--exclude",), metavar="HOSTS", group="site"),
    Option("reservation", (SUBMIT, API), "run in this reservation", flags=("--reservation",), metavar="NAME",
           group="site"),
    Option("dependency", (SUBMIT, API, MCP), "e.g. afterok:1234", flags=("--dependency",), metavar="DEP",
           group="site"),
    Option("mail_type", (SUBMIT, API), "e.g. END,FAIL", flags=("--mail-type",), metavar="TYPES", group="site"),
    Option("mail_user", (SUBMIT, API), "where Slurm's mails go", flags=("--mail-user",), metavar="ADDRESS",
           group="site"),
    Option("sbatch_args", (SUBMIT, API),
           "any other sbatch option, long name without dashes (repeatable): --sbatch-arg licenses=scratch "
           "--sbatch-arg hold", flags=("--sbatch-arg",), kind="list", metavar="KEY[=VALUE]", default=(),
           dest="sbatch_arg", group="site"),
    Option("env", (SUBMIT, API, MCP),
           "a variable exported to every task (repeatable; its value is written into the job folder, so a "
           "secret-looking name is refused: use --pass-env)", flags=("--env",), kind="list", metavar="KEY=VALUE",
           default=(), group="site", describe="KEY=VALUE exported to every task"),
    Option("pass_env", (SUBMIT, RUN, API),
           "pass this shell's variable NAME to every task by name (repeatable): a secret such as WANDB_API_KEY; "
           "its value is never written (as launcher.pass_env)", flags=("--pass-env",), kind="list",
           metavar="NAME", default=(), group="site", place=((RUN, "download"),),
           helps=((RUN, "as orch submit --pass-env (repeatable): NAME must be set here; every local rank inherits "
                        "it, and no file holds its value"),)),
    # containers
    Option("container_runtime", (SUBMIT, API),
           "pyxis/enroot (srun --container-image) or Apptainer/Singularity (apptainer exec)",
           flags=("--container-runtime",), choices=("none", "pyxis", "apptainer"), group="containers"),
    Option("container_image", (SUBMIT, API), "the image every task runs in", flags=("--container-image",),
           metavar="IMAGE", group="containers"),
    Option("container_mounts", (SUBMIT, API),
           "a bind mount (repeatable); the job folder and this directory are always mounted",
           flags=("--container-mounts",), kind="list", metavar="SRC[:DST[:FLAGS]]", default=(),
           group="containers"),
    Option("templates", (SUBMIT, API),
           "directory with your own sbatch templates (same file names as templates/; missing files fall back to "
           "the built-in ones)", flags=("--templates",), metavar="DIR"),
    # where and how
    Option("resume", (RUN,), "continue the job folder DIR from its last checkpoint (no JOB then)",
           flags=("--resume",), metavar="DIR"),
    Option("cluster", (SUBMIT, RUN, EXEC, API),
           "cluster file to use: a path, or NAME for ~/.config/orch/clusters/NAME.yaml (default: $ORCH_CLUSTER, "
           "then ./cluster.yaml)", flags=("--cluster",), metavar="PATH|NAME", request=False),
    Option("executor", (API,), "where it runs: auto (Slurm when sbatch is on PATH, else here), slurm or local",
           default="auto", request=False, literal=("auto", "slurm", "local")),
    Option("job_root", (RUN, EXEC), "where to create the job folder (default: launcher.job_root, else ~/orch-jobs)",
           flags=("--job-root",), metavar="DIR",
           helps=((EXEC, "where to create the step's job folder (default: launcher.job_root, else ~/orch-jobs); "
                         "every task of the step must be given the same"),)),
    Option("sweep", (SUBMIT,),
           "sweep a hyperparameter (repeatable): the cartesian product of all --sweep values runs as one Slurm job "
           "array, element I in <job folder>/I", flags=("--sweep",), kind="list", metavar="KEY=V1,V2", default=()),
    Option("array_throttle", (SUBMIT,), "with --sweep: run at most N array elements at once (sbatch --array=...%%N)",
           flags=("--array-throttle",), kind="int", metavar="N"),
    Option("preflight", (SUBMIT, API, MCP),
           "run the selftest checks as the job's first step, in its own allocation: a failing node is named and "
           "the job stops (--preflight), or is submitted again without that node (--preflight=exclude); default: "
           "launcher.preflight of cluster.yaml ('off')", flags=("--preflight",), nargs="?", const="stop",
           choices=("stop", "exclude", "off"), metavar="MODE", literal=("off", "stop", "exclude")),
    Option("max_restarts", (SUBMIT, RUN, API, MCP),
           "restart a failed training step N times inside the allocation (or the local run), from the newest "
           "checkpoint (default: launcher.max_restarts of cluster.yaml; 0: never)", flags=("--max-restarts",),
           kind="int", metavar="N"),
    Option("spare_nodes", (SUBMIT, API, MCP),
           "allocate K nodes more than --nodes; a restart runs without a blamed node, on a spare",
           flags=("--spare-nodes",), kind="int", metavar="K"),
    Option("world_check", (SUBMIT, RUN, API, MCP),
           "launcher.world_check for this job: warn, strict or independent (default: cluster.yaml's)",
           kind="switch", literal=("warn", "strict", "independent"), switches=(
               Switch("--strict-world", "strict",
                      "scripts: fail the run when its ranks never formed one process group (each trained alone) or "
                      "never called init_process_group (default: launcher.world_check, a warning)"),
               Switch("--independent-ranks", "independent",
                      "scripts: the ranks are meant to train independently (no process group): no world check"))),
    Option("collective_timeout", (SUBMIT, RUN, API, MCP),
           "seconds a collective may wait before the job ends (a stuck or crashed rank); scripts: their process "
           "group's timeout unless they pass their own timeout= (default: launcher.collective_timeout of "
           "cluster.yaml, 30)", flags=("--collective-timeout",), kind="int", metavar="S"),
    # the run's own switches
    Option("cpu", (RUN,), "train on the CPU even when GPUs are present", flags=("--cpu",), kind="flag",
           default=False),
    Option("download", (RUN,),
           "jobs: first fetch the job's data where it is missing (mnist: torchvision's download) into --data-dir, "
           f"else ${DATA_DIR_ENV_VAR}, else ~/.cache/orch/data; offline: exit code 75", flags=("--download",),
           kind="flag", default=False),
    Option("all_ranks", (RUN,),
           "show every rank's output, each line prefixed with [rank R] (default: rank 0's)", flags=("--all-ranks",),
           kind="flag", default=False),
    Option("no_snapshot", (SUBMIT, API, MCP),
           "run the code in place, as it is on disk when each task starts (default: a copy taken now, "
           "launcher.snapshot; docs/snapshots.md)", flags=("--no-snapshot",), kind="flag", default=False),
    Option("dry_run", (SUBMIT,), "print the script and every rank; run nothing, write nothing",
           flags=("--dry-run",), kind="flag", default=False),
    Option("remote_check", (SUBMIT,),
           "with a remote cluster file and --dry-run: ship the code and dry-run it on the cluster",
           flags=("--remote-check",), kind="flag", default=False),
    Option("json", (SUBMIT, RUN), "print machine-readable JSON", flags=("--json",), kind="flag", default=False),
)

BY_NAME = {option.name: option for option in OPTIONS}


def options_of(verb: str) -> tuple[Option, ...]:
    """The options ``verb`` takes, in the table's order."""
    return tuple(option for option in OPTIONS if verb in option.verbs)


def request_fields() -> tuple[str, ...]:
    """The fields of a submit request (``SubmitOptions``): the API's keywords less its own (cluster, executor)."""
    return tuple(option.name for option in options_of(API) if option.request)


def spellings(option: Option) -> tuple[str, ...]:
    """What the command line writes for it: ``--nodes N``, ``--exclusive``, ``JOB``, ``-- ARGS`` (no flag)."""
    if option.switches:
        return tuple(s.flag for s in option.switches)
    if not option.flags:
        return ("-- ARGS",) if option.name == "script_args" else ()
    flag = option.flags[0]
    if not flag.startswith("-"):
        return (option.metavar or flag,)
    value = option.metavar or ("|".join(option.choices) if option.choices else "")
    if option.kind == "flag":
        return (flag,)
    return (f"{flag}[={value}]" if option.nargs == "?" else f"{flag} {value}",)


def markdown_table() -> str:
    """docs/cli.md's options table: every option, its flag(s), who takes it, what it does (orch submit's help)."""
    lines = ["| option | command line | orch submit | orch run | `orchestrator.submit()` | orch mcp `plan` | "
             "what it does |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for option in OPTIONS:
        shown = " ".join(f"`{s}`" for s in spellings(option)) or "none"
        cells = ["yes" if verb in option.verbs else "" for verb in (SUBMIT, RUN, API, MCP)]
        text = option.help_for(SUBMIT) if SUBMIT in option.verbs else option.help_for(option.verbs[0])
        if option.switches:
            text = "; ".join(f"`{s.flag}`: {s.help}" for s in option.switches)
        text = text.replace("%%", "%").replace("<", "&lt;").replace(">", "&gt;")
        row = [f"`{option.name}`", shown.replace("|", "\\|"), *cells, text.replace("|", "\\|")]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"
