"""Test script (restarts): records TORCHELASTIC_RESTART_COUNT per rank in the job folder; rank 1 fails
in the first attempt (count 0), so a job with restarts runs it a second time, which completes."""

import os
import sys
import time
from pathlib import Path

count = os.environ.get("TORCHELASTIC_RESTART_COUNT", "?")
rank = os.environ.get("RANK", "?")
with (Path(os.environ["ORCH_JOB_DIR"]) / f"restart_count-rank{rank}.txt").open("a") as fh:
    fh.write(f"{count}\n")
if count == "0" and rank == "1":
    # fail only once rank 0 has recorded this attempt too: srun kills the other ranks at the first failure
    mine = Path(os.environ["ORCH_JOB_DIR"]) / "restart_count-rank0.txt"
    for _ in range(600):
        if mine.exists() and "0" in mine.read_text().split():
            break
        time.sleep(0.1)
    sys.exit(1)
