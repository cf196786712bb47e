"""Stand-ins for Slurm's ``sbatch``, ``srun`` and ``scontrol`` in tests: record every call, act as told.

The executables next to this file (``sbatch``, ``srun``, ``scontrol``) run ``$ORCH_STUB_PYTHON
_stub.py NAME ARGS...``. Each call appends JSON lines to ``$ORCH_STUB_LOG``:

    {"cmd": "srun", "event": "call", "argv": [...], "env": {...the whole environment...},
     "cwd": "...", "pid": 123, "umask": 18}

plus, for ``sbatch``, ``"script"`` (the file's text) and ``"sbatch_options"`` (the ``#SBATCH``
options as Slurm's own parser reads them: see :func:`sbatch_script_options`), and for ``srun``
later ``{"cmd": "srun", "event": "signal", "signal": "USR2"}`` lines. Values are recorded byte for
byte (JSON escapes keep undecodable bytes as ``\\udcXX`` surrogates).

Behaviour, from the environment (all optional):

=============================== ========================================================================
ORCH_STUB_SBATCH_STDOUT         what sbatch prints (default ``4242``, i.e. ``--parsable`` output)
ORCH_STUB_SBATCH_STDERR         what sbatch prints on stderr
ORCH_STUB_SBATCH_RC             sbatch's exit code (default 0)
ORCH_STUB_SRUN_RC               srun's exit code (default 0)
ORCH_STUB_SRUN_SLEEP            seconds srun runs (default 0); signals arriving meanwhile are recorded
ORCH_STUB_SRUN_TOUCH            a file srun creates when it gets a signal (e.g. the job's ``requeue``)
ORCH_STUB_SRUN_TOUCH_AT_EXIT    a file srun creates before exiting, signal or not
ORCH_STUB_SRUN_AFTER_SIGNAL     seconds srun keeps running after a signal (default 0), then exits
ORCH_STUB_HOSTNAMES             output of ``scontrol show hostnames`` (default: orchestrator.env.hostlist)
ORCH_STUB_NODEADDR              NodeAddr in ``scontrol show node N`` (default: N itself)
ORCH_STUB_SHOW_NODE_RC          exit code of ``scontrol show node`` (default 0)
ORCH_STUB_SCONTROL_RC           exit code of ``scontrol requeue`` and other scontrol calls (default 0)
ORCH_STUB_SRUN_EXEC             1: srun runs its command (the first argument after its options) once,
                                and exits with its code (instead of ORCH_STUB_SRUN_RC)
ORCH_STUB_APPTAINER_RC          exit code of ``apptainer`` (default 0); it runs nothing
ORCH_STUB_QUEUE                 a JSON-lines file: sbatch appends the job it queued (id, ``--comment``,
                                name, PENDING); ``squeue``/``scancel``/``sacct`` in ``stubs/queue/``
                                answer from it (scancel marks the job CANCELLED); unset: no queue kept
ORCH_STUB_SBATCH_KILL_PARENT    1: sbatch SIGKILLs its parent (``orch submit``) right after it printed
                                the id (the job stays queued): a submit killed at the worst moment
=============================== ========================================================================

``stubs/queue/`` holds ``squeue``, ``scancel`` and ``sacct`` (answering from ``ORCH_STUB_QUEUE``); only
tests that put that folder on PATH see them, so the other tests' PATH stays as it was.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

RECORDED_SIGNALS = ("USR1", "USR2", "TERM", "INT", "HUP", "CONT")
C_SPACE = frozenset(" \t\n\v\f\r")  # C isspace() in the C locale (sbatch parses bytes)


def record(entry: dict[str, Any]) -> None:
    log = os.environ.get("ORCH_STUB_LOG")
    if not log:
        return
    line = json.dumps(entry, ensure_ascii=True) + "\n"
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode("ascii"))
    finally:
        os.close(fd)


def call_entry(cmd: str, argv: list[str]) -> dict[str, Any]:
    return {"cmd": cmd, "event": "call", "argv": argv, "env": dict(os.environ), "cwd": os.getcwd(),
            "pid": os.getpid(), "umask": current_umask()}


def current_umask() -> int:
    """This process's umask (sbatch passes it on to the job as SLURM_UMASK)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --- sbatch ------------------------------------------------------------------------------------

def get_argument(line: str) -> tuple[str | None, int]:
    """Slurm 22.05 ``src/sbatch/opt.c:_get_argument``: one option from a ``#SBATCH`` line.

    Returns (argument or None, characters consumed). Backslash escapes the next character anywhere,
    single or double quotes group (and are removed), an unquoted ``#`` starts a comment. Slurm
    first blanks ``packjob`` (older versions) and ``hetjob`` (newer) out of the raw line.
    """
    lowered = line.lower()
    for word in ("packjob", "hetjob"):
        at = lowered.find(word)
        if at >= 0:
            line = line[:at] + " " * len(word) + line[at + len(word):]
            lowered = line.lower()
    i = 0
    while i < len(line) and line[i] in C_SPACE:
        i += 1
    if i < len(line) and line[i] == ":":
        raise ValueError(f"Unexpected `:` in [{line}]")
    if i >= len(line):
        return None, i
    out: list[str] = []
    quoted = escape = False
    quote = ""
    while i < len(line) and (quoted or line[i] not in C_SPACE) and line[i] != "\n":
        ch = line[i]
        if escape:
            escape = False
        elif ch == "\\":
            escape = True
            i += 1
            continue
        elif quoted:
            if ch == quote:
                quoted = False
                i += 1
                continue
        elif ch in "\"'":
            quoted, quote = True, ch
            i += 1
            continue
        elif ch == "#":
            break
        out.append(ch)
        i += 1
    if quoted:
        raise ValueError(f"Unmatched `{quote}` in [{line}]")
    return ("".join(out) if out else None), i


def sbatch_script_options(script: str) -> list[str]:
    """The options sbatch reads from ``#SBATCH`` lines (``_opt_batch_script``): it stops at the first
    line that is neither blank nor a comment."""
    options: list[str] = []
    for line in script.split("\n"):
        if line.startswith("#SBATCH"):
            rest = line[len("#SBATCH"):]
        else:
            stripped = line.lstrip()
            if stripped and not stripped.startswith("#"):
                break
            continue
        while True:
            arg, used = get_argument(rest)
            if arg is None:
                break
            options.append(arg)
            rest = rest[used:]
    return options


def sbatch(argv: list[str]) -> int:
    entry = call_entry("sbatch", argv)
    script_args = [a for a in argv if not a.startswith("-")]
    problem = None
    if script_args:
        text = Path(script_args[0]).read_text(encoding="utf-8", errors="surrogateescape")
        entry["script"] = text
        if not text.startswith("#!"):
            problem = ("sbatch: error: This does not look like a batch script.  The first\n"
                       "sbatch: error: line must start with #! followed by the path to an interpreter.")
        elif "\r\n" in text:
            problem = "sbatch: error: Batch script contains DOS line breaks (\\r\\n)"
        else:
            try:
                entry["sbatch_options"] = sbatch_script_options(text)
            except ValueError as exc:
                problem = f"sbatch: fatal: {exc}"
    record(entry)
    if problem:
        print(problem, file=sys.stderr)
        return 1
    rc = int(os.environ.get("ORCH_STUB_SBATCH_RC", "0"))
    out = os.environ.get("ORCH_STUB_SBATCH_STDOUT", "4242")
    err = os.environ.get("ORCH_STUB_SBATCH_STDERR", "")
    if out:
        print(out, flush=True)
    if err:
        print(err, file=sys.stderr)
    if rc == 0 and out:
        enqueue(out.strip().split(";")[0], argv, entry.get("sbatch_options", []))
    if os.environ.get("ORCH_STUB_SBATCH_KILL_PARENT") == "1":
        os.kill(os.getppid(), signal.SIGKILL)
    return rc


# --- the queue: squeue, scancel, sacct (stubs/queue/) ------------------------------------------

def _option(options: list[str], long: str, short: str) -> str | None:
    """The last value of ``--long=V`` / ``--long V`` / ``-sV`` in ``options`` (as sbatch lets the last win)."""
    value = None
    for i, arg in enumerate(options):
        if arg.startswith(f"--{long}="):
            value = arg.split("=", 1)[1]
        elif arg in (f"--{long}", short) and i + 1 < len(options):
            value = options[i + 1]
        elif arg.startswith(short) and len(arg) > len(short):
            value = arg[len(short):]
    return value


def enqueue(job_id: str, argv: list[str], script_options: list[str]) -> None:
    """Keep the job sbatch queued in ``$ORCH_STUB_QUEUE`` (command-line options win over ``#SBATCH``)."""
    path = os.environ.get("ORCH_STUB_QUEUE")
    if not path:
        return
    options = [*script_options, *argv[:-1]]
    job = {"JobArrayID": job_id, "ArrayJobID": job_id, "State": "PENDING", "Reason": "Priority",
           "NodeList": "", "TimeUsed": "0:00", "RestartCnt": "0",
           "SubmitTime": time.strftime("%Y-%m-%dT%H:%M:%S"), "Name": _option(options, "job-name", "-J") or "job",
           "Comment": _option(options, "comment", "--comment") or "(null)"}
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(job) + "\n")


def _queue() -> list[dict[str, str]]:
    path = os.environ.get("ORCH_STUB_QUEUE")
    if not path or not Path(path).exists():
        return []
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def squeue(argv: list[str]) -> int:
    """``--Format=F:|,...,G:`` lines of the queued jobs (``--jobs=`` filters; the rest is ignored)."""
    record(call_entry("squeue", argv))
    spec = next((a.split("=", 1)[1] for a in argv if a.startswith("--Format=")), "JobArrayID:")
    wanted = next((a.split("=", 1)[1].split(",") for a in argv if a.startswith("--jobs=")), None)
    fields = [(item.split(":", 1)[0], item.split(":", 1)[1] if ":" in item else "") for item in spec.split(",")]
    jobs = [j for j in _queue() if wanted is None or j["JobArrayID"] in wanted]
    if wanted is not None and not jobs:
        print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
        return 1
    for job in jobs:
        print("".join(job.get(name, "") + suffix for name, suffix in fields))
    return 0


def scancel(argv: list[str]) -> int:
    record(call_entry("scancel", argv))
    path = os.environ.get("ORCH_STUB_QUEUE")
    ids = [a for a in argv if not a.startswith("-")]
    jobs = _queue()
    for job in jobs:
        if job["JobArrayID"] in ids:
            job["State"] = "CANCELLED"
    if path:
        Path(path).write_text("".join(json.dumps(j) + "\n" for j in jobs), encoding="utf-8")
    return 0


def sacct(argv: list[str]) -> int:
    """No accounting records (the queue's jobs are squeue's)."""
    record(call_entry("sacct", argv))
    return 0


# --- srun --------------------------------------------------------------------------------------

def srun(argv: list[str]) -> int:
    got: list[str] = []

    def on_signal(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name.removeprefix("SIG")
        got.append(name)
        record({"cmd": "srun", "event": "signal", "signal": name, "pid": os.getpid()})
        touch = os.environ.get("ORCH_STUB_SRUN_TOUCH")
        if touch:
            Path(touch).touch()

    for name in RECORDED_SIGNALS:
        signal.signal(getattr(signal, f"SIG{name}"), on_signal)
    record(call_entry("srun", argv))  # after the handlers: a test may signal as soon as it sees this
    deadline = time.monotonic() + float(os.environ.get("ORCH_STUB_SRUN_SLEEP", "0"))
    after = float(os.environ.get("ORCH_STUB_SRUN_AFTER_SIGNAL", "0"))
    while time.monotonic() < deadline and not got:
        time.sleep(0.02)
    if got and after:
        time.sleep(after)
    touch = os.environ.get("ORCH_STUB_SRUN_TOUCH_AT_EXIT")
    if touch:
        Path(touch).touch()
    rc = int(os.environ.get("ORCH_STUB_SRUN_RC", "0"))
    if os.environ.get("ORCH_STUB_SRUN_EXEC") == "1":
        import subprocess

        command = argv[next(i for i, a in enumerate(argv) if not a.startswith("-")):]
        rc = subprocess.run(command, check=False).returncode
    record({"cmd": "srun", "event": "exit", "rc": rc, "signals": got, "pid": os.getpid()})
    return rc


# --- scontrol ----------------------------------------------------------------------------------

def scontrol(argv: list[str]) -> int:
    record(call_entry("scontrol", argv))
    words = [a for a in argv if not a.startswith("-")]
    if words[:2] == ["show", "hostnames"]:
        listed = os.environ.get("ORCH_STUB_HOSTNAMES")
        if listed is None:
            from orchestrator.env.hostlist import expand

            expr = words[2] if len(words) > 2 else os.environ.get("SLURM_JOB_NODELIST", "")
            listed = "\n".join(expand(expr))
        print(listed)
        return 0
    if words[:2] == ["show", "node"]:
        rc = int(os.environ.get("ORCH_STUB_SHOW_NODE_RC", "0"))
        if rc:
            print(f"Node {words[2]} not found", file=sys.stderr)
            return rc
        node = words[2]
        addr = os.environ.get("ORCH_STUB_NODEADDR", node)
        print(f"NodeName={node} Arch=x86_64 CoresPerSocket=1\n   CPUAlloc=0 CPUEfctv=4 CPUTot=4\n"
              f"   NodeAddr={addr} NodeHostName=localhost Version=22.05.8\n   State=IDLE")
        return 0
    return int(os.environ.get("ORCH_STUB_SCONTROL_RC", "0"))


# --- apptainer ---------------------------------------------------------------------------------

def apptainer(argv: list[str]) -> int:
    record(call_entry("apptainer", argv))
    return int(os.environ.get("ORCH_STUB_APPTAINER_RC", "0"))


COMMANDS = {"sbatch": sbatch, "srun": srun, "scontrol": scontrol, "apptainer": apptainer, "squeue": squeue,
            "scancel": scancel, "sacct": sacct}


def main() -> int:
    cmd, argv = sys.argv[1], sys.argv[2:]
    return COMMANDS[cmd](argv)


if __name__ == "__main__":
    sys.exit(main())
