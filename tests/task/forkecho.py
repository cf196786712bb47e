"""A fork server without torch for tests/task/test_forkserver.py: ``python -m forkecho FD``. Each rank it forks
prints what it was given (arguments, session, a few variables) as one JSON line, then does what its first
argument says: ``exit N``, ``sleep``, ``kill`` (SIGKILL to itself)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from orchestrator.task import forkserver

argv = forkserver.serve(int(sys.argv[1]))
if argv is None:
    os._exit(0)
print(json.dumps({"argv": argv, "pid": os.getpid(), "own_session": os.getsid(0) == os.getpid(),
                  "env": {k: os.environ.get(k) for k in ("KEEP", "CHANGED", "GONE", "RANK")}}), flush=True)
if argv[0] == "exit":
    os._exit(int(argv[1]))
if argv[0] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(60)
os._exit(0)
