"""A torchrun-style script whose processes try to outlive the job (tests/task/test_reaper.py).

    python leaky.py OUT MODE RANKS...

Every rank in RANKS starts a helper that ignores SIGTERM, and a double-forked daemon that called
setsid() (it left the rank's session and process group) and ignores SIGTERM too; each writes its pid
to OUT/<kind>-rank<R>.pid (the rank's own: OUT/rank<R>.pid). Then, by MODE:
``exit`` returns 0, ``fail`` exits 1, ``kill`` SIGKILLs the rank itself, ``stop`` SIGSTOPs it, ``wait``
sleeps until it is stopped. Ranks not in RANKS sleep (``wait``) or exit 0 (``exit``).
"""

import os
import signal
import subprocess
import sys
import time

OUT, MODE, RANKS = sys.argv[1], sys.argv[2], {int(r) for r in sys.argv[3:]}
RANK = int(os.environ["RANK"])
HELPER = ("import os, signal, sys, time\n"
          "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
          "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid())); os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
          "while True: time.sleep(0.2)\n")


def write(name: str, value: int) -> None:
    path = os.path.join(OUT, name)
    with open(path + ".tmp", "w") as fh:
        fh.write(str(value))
    os.rename(path + ".tmp", path)


def daemon(pidfile: str) -> None:
    """The classic double fork: the grandchild calls setsid() and is orphaned at once."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", HELPER, pidfile])
        os._exit(0)
    os.wait()


def wait_for(path: str) -> None:
    deadline = time.monotonic() + 60
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)


write(f"rank{RANK}.pid", os.getpid())
if RANK in RANKS:
    helper = os.path.join(OUT, f"helper-rank{RANK}.pid")
    subprocess.Popen([sys.executable, "-c", HELPER, helper])
    daemon(os.path.join(OUT, f"daemon-rank{RANK}.pid"))
    wait_for(helper)
    wait_for(os.path.join(OUT, f"daemon-rank{RANK}.pid"))
    write(f"ready-rank{RANK}", 1)
    if MODE == "fail":
        sys.exit(1)
    if MODE == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if MODE == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
if MODE in ("wait", "stop", "kill"):
    while True:
        time.sleep(0.2)
