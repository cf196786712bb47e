"""A script that follows orch's preemption contract (no orch import needed):

* it handles the preemption signal itself (``ORCH_PREEMPT_SIGNAL``, USR2 by default);
* after saving its state it exits with 75 to ask for a requeue;
* the next run sees ``TORCHELASTIC_RESTART_COUNT`` one higher (and ``ORCH_JOB_DIR`` for its files).

Every rank writes ``<out>/seen<rank>-<restart>.json``; the first run waits (at most 120 s) for the
signal and then exits 75, later runs exit 0.
"""

import json
import os
import signal
import sys
import time
from pathlib import Path

stop = []
signal.signal(getattr(signal, "SIG" + os.environ.get("ORCH_PREEMPT_SIGNAL", "USR2")), lambda *_: stop.append(1))
out = Path(sys.argv[sys.argv.index("--out") + 1])
out.mkdir(parents=True, exist_ok=True)
rank = os.environ["RANK"]
restarts = os.environ["TORCHELASTIC_RESTART_COUNT"]
names = ("RANK", "WORLD_SIZE", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID", "ORCH_JOB_DIR",
         "ORCH_RUN_ID", "WANDB_RUN_ID", "WANDB_RESUME", "WANDB_RUN_GROUP", "MLFLOW_RUN_ID")
(out / f"seen{rank}-{restarts}.json").write_text(json.dumps({n: os.environ.get(n) for n in names}))
if restarts == "0":
    (out / f"ready{rank}").touch()
    deadline = time.monotonic() + 120
    while not stop and time.monotonic() < deadline:
        time.sleep(0.05)
    sys.exit(75 if stop else 1)  # (save a checkpoint first) then ask for a requeue
