"""Every process an ``orch run`` started ends with it, even when orch run itself is killed with SIGKILL.

How the processes of a local run are found, without cgroups:

- each rank is the leader of its own session and process group (``start_new_session``): its children,
  a data server, a shell ``sleep``, share that group;
- every rank's environment carries ``ORCH_RUN_TOKEN=<random>``, which its children inherit: a
  double-forked daemon that left the group with ``setsid()`` still carries it in ``/proc/PID/environ``;
- the rank's task makes itself a child subreaper (``orchestrator.task.launch``), so an orphaned
  grandchild is reparented to the rank, not to init, and ends with the rank's children.

Stopping is always SIGCONT (a SIGSTOPped process must see the TERM), SIGTERM, a grace period, SIGKILL.
orch run does it when the ranks have ended (:func:`stop_marked`); if orch run dies first (SIGKILL,
OOM killer), its watchdog does: ``python -m orchestrator.task.reaper TOKEN GRACE`` is started by
orch run in its own session with a pipe on stdin, and when the pipe reads end-of-file (orch run has
gone, however) it stops every process that still carries the token. The ranks also get SIGTERM from
the kernel at once (``PR_SET_PDEATHSIG``).

What this cannot catch: a process that clears its environment (``env -i``, ``execve`` with an empty
environment) *and* leaves its session while the rank that started it is killed with SIGKILL. Only a
cgroup holds those; under Slurm, ``ProctrackType=proctrack/cgroup`` does (``scancel`` and the end of
a step kill every process of the step's cgroup), and orch relies on it there.

A task's own children (its process tree, below the task: :func:`become_subreaper`, :func:`end_children`)
end with it, before it exits (``orchestrator.task.launch``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterable, Mapping

TOKEN_VAR = "ORCH_RUN_TOKEN"
POLL_SECONDS = 0.05


def marked(token: str, *, exclude: Iterable[int] = ()) -> list[int]:
    """The processes of this user whose environment carries ``ORCH_RUN_TOKEN=token`` (Linux /proc)."""
    needle = f"{TOKEN_VAR}={token}".encode()
    skip = {os.getpid(), *exclude}
    found: list[int] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) in skip:
                continue
            with contextlib.suppress(OSError), open(f"/proc/{entry.name}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2:][:1] not in (b"Z", b"X")


def stop(pids: Iterable[int], grace: float) -> list[int]:
    """SIGCONT and SIGTERM to ``pids``, SIGKILL to those alive after ``grace`` seconds; those killed."""
    todo = list(pids)
    for signum in (signal.SIGCONT, signal.SIGTERM, signal.SIGCONT):
        for pid in todo:
            with contextlib.suppress(OSError):
                os.kill(pid, signum)
    deadline = time.monotonic() + grace
    while todo and time.monotonic() < deadline:
        todo = [pid for pid in todo if alive(pid)]
        if todo:
            time.sleep(POLL_SECONDS)
    for pid in todo:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return todo


def stop_marked(token: str, grace: float, *, rounds: int = 3) -> None:
    """Stop every process carrying the token; again, for what a dying process started meanwhile."""
    for _ in range(rounds):
        pids = marked(token)
        if not pids:
            return
        stop(pids, grace)


def watch(token: str, grace: float) -> None:
    """The watchdog: wait for end-of-file on stdin (orch run gone), then stop what carries the token."""
    with contextlib.suppress(OSError):
        while os.read(0, 4096):
            pass
    stop_marked(token, grace)


CHILD_GRACE_SECONDS = 2.0  # how long the task's children have to exit after SIGTERM before SIGKILL
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Linux: orphaned descendants (a double-forked daemon, also after ``setsid()``) are reparented to
    this task instead of init, so :func:`end_children` still finds them under it."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


PR_SET_PDEATHSIG = 1


def lead_group_and_die_with(parent: int) -> None:
    """In a process just forked by ``parent``: lead a process group of its own (what it starts can be ended
    with it, by group) and, on Linux, get SIGKILL from the kernel when ``parent`` dies (``PR_SET_PDEATHSIG``;
    elsewhere nothing watches the parent). A parent already gone before the request took: exit now."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(128 + signal.SIGKILL)


def end_group(leader: int) -> None:
    """SIGKILL to what is left of the process group ``leader`` led (its leader ended or is being stopped)."""
    with contextlib.suppress(OSError):
        os.killpg(leader, signal.SIGKILL)


def end_children(grace: float = CHILD_GRACE_SECONDS) -> None:
    """SIGCONT and SIGTERM to every process this task started (a data server, a ``sleep`` in build)
    and their children, before the task exits, and SIGKILL to those still there after ``grace``
    seconds (one that ignores SIGTERM): they would outlive it otherwise. By process ids, not by
    process group: under srun all tasks of a node share one group (local task 0 leads it)."""
    stop(descendants(os.getpid(), _parent_map()), grace)


def descendants(pid: int, parents: Mapping[int, int]) -> list[int]:
    """Every process below ``pid`` in a {pid: parent pid} map, parents before their children (pure)."""
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    out: list[int] = []
    todo = sorted(children.get(pid, []))
    while todo:
        current = todo.pop(0)
        if current in out or current == pid:
            continue
        out.append(current)
        todo.extend(sorted(children.get(current, [])))
    return out


def _parent_map() -> dict[int, int]:
    """{pid: parent pid} of the processes on this machine (Linux /proc; empty elsewhere)."""
    parents: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    with open(f"/proc/{entry.name}/stat", "rb") as fh:
                        stat = fh.read().decode("ascii", "replace")
                    parents[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    return parents


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is orch run's to handle
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    token, grace = argv[0], float(argv[1])
    watch(token, grace)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
