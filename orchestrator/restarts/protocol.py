"""In-process restarts inside one step (pure): which tasks are agents (:data:`BY_STEP`: when the step-level
restart runs instead), the generation protocol of the agents and their workers, when an agent falls back to the
step-level restart, and how attempts.json counts the restarts of a step.

Every task of orch's entrypoint is an agent (``restarts/agent.py``) that forks its rank's worker. Rank 0's
agent hosts the step's store at MASTER_PORT; each worker forms its process group under the prefix of
its generation (:func:`prefix`), so a new world never meets the keys of the one before. When a worker
ends with a failure, its agent claims the generation the worker was in (``store.add(claim(g), 1) == 1``:
one winner however many ranks fail at once), records the attempt and writes the decision
(:data:`RESTART` or ``stop: why``) under :func:`decision`; the survivors' workers, whose collective
failed meanwhile, read it and either form generation g+1 in the same process or end as today.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from orchestrator.env.masterport import agents_port
from orchestrator.spec.pysource import UnreadableSource, parse_source

if TYPE_CHECKING:
    from orchestrator.spec.runconfig import RunConfig

KEY_ROOT = "orch/agents/"
RESTART = "restart"
STOP = "stop"
STOPPED_GRACE_S = 1.0  # a worker stopped (SIGSTOP, state T) this long is hung: its agent kills it
POLL_S = 0.02  # how often an agent looks at its worker
LEFT_BEHIND_S = 1.0  # a worker still in a generation whose restart was decided, with no lost peer said: replaced
LEFT_BEHIND_POLLS = 25  # its agent asks the store about it every this many polls (0.5 s)
REPORT_WAIT_S = 2.0  # how long the deciding agent waits at most for every other rank's report (:func:`reported`)
BEHIND_MIN_S = 0.3  # a worker still this long (and 4 of its steps) after its generation was claimed: behind
BEHIND_STEPS = 4  # (the least of it, in the worker's own recent step times)
BEHIND_POLLS = 5  # an agent whose worker stands still asks about a claim, and then the decision, every 0.1 s
PEER_GRACE_S = 5.0  # how long an agent whose worker only lost a peer waits for the failed rank's agent to claim
EXIT_WAIT_S = 60.0  # how long an agent whose worker completed waits for every rank's agent to end (exit barrier)
FAILED_EXIT_WAIT_S = 10.0  # the same, when it ends on a failure (the others fail too, or one of them is gone)
FALLBACK_FILE = "restart_fallback"  # in the job folder: why the step's last failure was not restarted in it


# Which restart a failed rank gets (launcher.restart is in-process by default): a task is its rank's agent
# (restarts/agent.py) unless a row holds; the first row that holds says why the step-level restart runs instead.
# Row: (holds(cfg, preflight, loopback), why; {nodes} is the job's node count).
BY_STEP: tuple[tuple[Callable[[RunConfig, bool, bool], bool], str], ...] = (
    (lambda cfg, preflight, loopback: cfg.launcher.max_restarts == 0, "max_restarts 0: nothing is restarted"),
    (lambda cfg, preflight, loopback: cfg.launcher.restart == "step", "launcher.restart: step"),
    (lambda cfg, preflight, loopback: preflight, "the preflight"),
    # its processes are the script's (torch.multiprocessing.spawn): no agent can fork them again
    (lambda cfg, preflight, loopback: cfg.script is not None and cfg.script.launch.style == "per-node",
     "a script that starts its own processes on each node"),
)


def by_step(cfg: RunConfig, *, preflight: bool, loopback: bool) -> str | None:
    """Why a failed rank of this task is restarted by step, not in its processes (None: the task is its rank's
    agent). ``loopback``: MASTER_ADDR is this machine's (for a row that needs it; none does now)."""
    for holds, why in BY_STEP:
        if holds(cfg, preflight, loopback):
            return why.format(nodes=cfg.nodes)
    return None


def is_agent(cfg: RunConfig, *, preflight: bool, loopback: bool) -> bool:
    """Whether this task is its rank's agent: in-process restarts of orch's entrypoint, warm restarts of a
    script (no row of :data:`BY_STEP` holds)."""
    return by_step(cfg, preflight=preflight, loopback=loopback) is None


def agents_apart(cfg: RunConfig, *, loopback: bool) -> bool:
    """Whether the agents meet at their own port (``env/masterport.py``'s ``agents_port``), not at MASTER_PORT: a
    script on several nodes, or whose MASTER_ADDR is not this machine's. Its own rendezvous is MASTER_PORT (its
    rank 0 hosts it, or rank 0's task on loopback); rank 0's agent hosts the agents' store at the agents' port, and
    each later world's MASTER_ADDR:MASTER_PORT is agreed through it (:func:`port`). Decided by the node count too,
    not by the address alone: the nodes of a test cluster share one address, and take the same path as a real
    cluster's. A script on one node (loopback) and orch's entrypoint: the agents' store is at MASTER_PORT."""
    return cfg.script is not None and (cfg.nodes > 1 or not loopback)


def how_restarted(cfg: RunConfig, *, loopback: bool, master_port: int | None = None) -> tuple[str, str] | None:
    """(kind, in words) of the training step's restarts: ``in-process`` or ``step``, for the dry run and
    ``orch submit --dry-run --json``; None when nothing is restarted (max_restarts 0). ``master_port``: the
    plan's, to name the agents' own port (:func:`agents_apart`)."""
    if cfg.launcher.max_restarts == 0:
        return None
    why = by_step(cfg, preflight=False, loopback=loopback)
    if why is not None:
        return "step", f"by step ({why}): every rank starts again in a new step"
    if cfg.script is not None:
        meet = ""
        if agents_apart(cfg, loopback=loopback):
            port = "" if master_port is None else f" {agents_port(master_port, cfg.launcher.port_range)}"
            meet = (f"; the agents meet at their own port{port} (half the port range from MASTER_PORT), and agree "
                    "on each new world's MASTER_ADDR:MASTER_PORT there")
        return "in-process", ("in-process (warm: the script's whole world starts again, forked from agents that "
                              f"imported torch{meet}; by step when that cannot apply)")
    return "in-process", ("in-process (a failed rank is forked again, the other ranks keep their processes; "
                          "by step when that cannot apply)")


def prefix(generation: int) -> str:
    """The store prefix of generation ``generation``'s process group."""
    return f"orch/gen{generation}/"


def claim(generation: int) -> str:
    return f"{KEY_ROOT}claim/{generation}"


def decision(generation: int) -> str:
    return f"{KEY_ROOT}decision/{generation}"


def port(generation: int) -> str:
    """A script's world of ``generation`` rendezvouses here (rank 0's agent hosts a fresh store): the value is
    ``MASTER_ADDR:MASTER_PORT`` (:func:`encode_world`)."""
    return f"{KEY_ROOT}port/{generation}"


def encode_world(addr: str, port_: int) -> str:
    """The value of :func:`port`: where a script's next world meets."""
    return f"{addr}:{port_}"


def parse_world(raw: bytes | str) -> tuple[str, int]:
    """(MASTER_ADDR, MASTER_PORT) of a value :func:`encode_world` wrote (ValueError: not one)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    addr, sep, number = text.rpartition(":")
    value = int(number)
    if not sep or not addr or not 1 <= value <= 65535:
        raise ValueError(f"not an address and port: {text[:80]!r}")
    return addr, value


def lost(generation: int, rank: int) -> str:
    """Rank ``rank``'s worker lost a peer in ``generation`` and wrote its outcome record (``waited``)."""
    return f"{KEY_ROOT}lost/{generation}/{rank}"


def reported(generation: int, rank: int) -> str:
    """Rank ``rank``'s part in the failure of ``generation`` is known: ``lost`` (its worker wrote its record, as
    :func:`lost`) or ``behind`` (its agent: the worker is blocked in the failed step's collective, it will write
    nothing before the decision). The deciding agent waits for these (at most ``REPORT_WAIT_S``)."""
    return f"{KEY_ROOT}reported/{generation}/{rank}"


def gave_up(generation: int) -> str:
    """How many workers of ``generation`` gave up waiting for a peer (a counter: one key to look at, any world)."""
    return f"{KEY_ROOT}gave_up/{generation}"


def ended(rank: int) -> str:
    """Rank ``rank``'s agent has ended (the exit barrier: none leaves before every rank's has said so)."""
    return f"{KEY_ROOT}ended/{rank}"


def at(rank: int) -> str:
    """The generation rank ``rank``'s worker is in now (written by the worker at each start)."""
    return f"{KEY_ROOT}at/{rank}"


def encode_stop(why: str) -> str:
    return f"{STOP}: {why}"[:500]


def parse_decision(raw: bytes | str | None) -> tuple[bool, str]:
    """(restart, why not) of a stored decision; a missing or unreadable one is a stop."""
    if raw is None:
        return False, "no decision came from the failed rank's agent (its node or agent is gone?)"
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if text == RESTART:
        return True, ""
    return False, text.removeprefix(f"{STOP}: ") if text.startswith(STOP) else f"unreadable decision {text[:80]!r}"


def process_state(stat: str) -> str | None:
    """The state letter of a ``/proc/PID/stat`` line (R, S, D, T, t, Z, ...), None when unreadable."""
    try:
        return stat[stat.rindex(")") + 2]
    except (ValueError, IndexError):
        return None


# Why an agent hands a failure to the step-level restart (name, reason): restarts/policy.py's "no" stays a
# "no" (the agent then ends as its worker did); these are the failures the agents cannot restart in the step.
FALLBACKS: tuple[tuple[str, str], ...] = (
    ("peer_only", "the worker gave up on a collective and no rank failed or stopped (a deadlock, or a rank "
                  "stuck where no signal shows it): the step ends"),
    ("store_lost", "the agents' store (at MASTER_PORT, or a script's agents' port) is gone (rank 0's agent or "
                   "node was lost): the step ends"),
    ("no_decision", "no decision came from the failed rank's agent in time: the step ends"),
    ("agent_stopped", "an agent gave no sign of life (stopped, e.g. SIGSTOP, or its node frozen): nobody can decide "
                      "for its rank in the step; the step ends and the step-level restart blames that rank"),
    ("declined", "no restart was decided in the step (the restart policy, restarts/policy.py, said no; or a rank's "
                 "part was done): the step ends as the worker did"),
)
FALLBACK_REASONS = dict(FALLBACKS)


def in_step_restarts(history: Sequence[Mapping[str, Any]], *, job: str | None, requeue: int, base: int) -> int:
    """How many in-process restarts the step that started at attempt ``base`` made (its entries in
    attempts.json: ``in_process`` true, the same job and requeue, attempt ``base`` or later)."""
    return sum(1 for a in history if a.get("in_process") is True and a.get("job") == job
               and a.get("requeue") == requeue and isinstance(a.get("attempt"), int) and a["attempt"] >= base)


def pids(records: Mapping[int, Any]) -> dict[str, int]:
    """{rank: pid} of an attempt's outcome records (attempts.json ``pids``: a survivor keeps its pid)."""
    out: dict[str, int] = {}
    for rank, record in sorted(records.items()):
        pid = getattr(record, "pid", None)
        if isinstance(pid, int):
            out[str(rank)] = pid
    return out


# A script's imports an agent makes before it forks the script's ranks (warm restarts): top-level packages
# known to import without side effects on the GPU (no CUDA initialised) or on the script's state.
WARM_PACKAGES = frozenset({"torch", "torchvision", "torchaudio", "numpy", "transformers", "lightning",
                           "pytorch_lightning", "accelerate", "datasets", "timm", "safetensors", "einops", "scipy",
                           "pandas", "tokenizers"})


def warm_imports(source: str) -> list[str]:
    """The modules of ``WARM_PACKAGES`` a script imports unconditionally at its top level (``import x.y``,
    ``from x.y import z``: ``x.y``), in order; a script that does not parse: none."""
    try:
        tree = parse_source(source, "<script>")
    except UnreadableSource:
        return []
    found: list[str] = []
    for node in tree.body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
        for name in names:
            if name.split(".")[0] in WARM_PACKAGES and name not in found:
                found.append(name)
    return found
