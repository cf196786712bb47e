"""Stand-ins: Slurm clients that answer any number of ids and log the size of every call (batching), Slurm
clients with canned answers (tests/commands, tests/views), and the part of a c10d store the agents use."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ARGV_BOUND = 64 * 1024  # what a call may carry in all (Linux: 128 KiB per argument, ~2 MiB in all)


# SubmitTime N/A: no folder is taken for a reused id. squeue holds the ids divisible by 3 (RUNNING);
# sacct answers the others (COMPLETED, or FAILED for ids ending in 7): every id gets an answer only if
# every batch is asked.
SCALE_STAND_IN = """\
import json, os, sys
name = os.path.basename(sys.argv[0])
args = sys.argv[1:]
ids = []
for arg in args:
    if arg.startswith("--jobs="):
        ids += [i for i in arg[len("--jobs="):].split(",") if i]
if name == "scancel":
    ids = [a for a in args if not a.startswith("-")]
with open(os.environ["SCALE_SLURM_LOG"], "a") as fh:
    fh.write(json.dumps({"name": name, "argv_bytes": sum(len(a.encode()) + 1 for a in sys.argv),
                         "longest": max(len(a.encode()) for a in sys.argv), "ids": len(ids),
                         "first": ids[0] if ids else None, "completion": "--completion" in args}) + "\\n")
if name == "squeue":
    out = [f"{i}|RUNNING|None|node1|1:00|0|N/A|scale" for i in ids if int(i.split("_")[0]) % 3 == 0]
elif name == "sacct" and "--completion" in args:
    out = [f"{i}|COMPLETED|0:0|node1|00:01:00|scale" for i in ids]
elif name == "sacct":
    out = [f"{i}|{'FAILED' if i.endswith('7') else 'COMPLETED'}|{'1:0' if i.endswith('7') else '0:0'}|node1|"
           f"00:01:00|60|cpu=1,gres/gpu=2|N/A|scale" for i in ids]
else:
    out = []
sys.stdout.write("".join(line + "\\n" for line in out))
"""


def calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def assert_bounded(log: Path, name: str) -> list[dict[str, Any]]:
    made = [c for c in calls(log) if c["name"] == name]
    assert made, f"no {name} call"
    assert max(c["argv_bytes"] for c in made) <= ARGV_BOUND
    from orchestrator.slurm import client

    assert max(c["longest"] for c in made) <= client.ID_BATCH_BYTES + 64
    return made



# --- stand-in Slurm clients (tests/commands, tests/views) ------------------------------------------

FAKE_CLIENT = """\
import json, os, sys
name = os.path.basename(sys.argv[0])
args = sys.argv[1:]
with open(os.environ["FAKE_SLURM_LOG"], "a") as fh:
    fh.write(json.dumps([name, *args]) + "\\n")
spec = json.load(open(os.environ["FAKE_SLURM_SPEC"]))
key = name + (" --completion" if "--completion" in args else "")
reply = spec.get(key, {"stdout": "", "stderr": name + ": no canned answer\\n", "rc": 1})
sys.stdout.write(reply.get("stdout", ""))
sys.stderr.write(reply.get("stderr", ""))
sys.exit(reply.get("rc", 0))
"""
CLIENTS = ("squeue", "sacct", "scancel", "scontrol")
class FakeSlurm:
    def __init__(self, folder: Path) -> None:
        self.bin = folder / "bin"
        self.bin.mkdir(parents=True)
        self.spec = folder / "spec.json"
        self.log = folder / "calls.jsonl"
        self.set({})
        for name in CLIENTS:
            exe = self.bin / name
            exe.write_text(f"#!{sys.executable}\n{FAKE_CLIENT}")
            exe.chmod(0o755)

    def set(self, replies: dict[str, Any]) -> None:
        tmp = self.spec.with_suffix(".tmp")
        tmp.write_text(json.dumps(replies))
        tmp.replace(self.spec)

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]



class DictStore:
    """The part of a c10d store the in-process agents use (set, get, add, check, multi_get), in memory: their decisions
    without processes (tests/restarts/test_agent*.py, test_store.py, test_heartbeat.py)."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def set(self, key: str, value: str) -> None:
        self.data[key] = value.encode()

    def get(self, key: str) -> bytes:
        return self.data[key]

    def add(self, key: str, amount: int) -> int:
        value = int(self.data.get(key, b"0")) + amount
        self.data[key] = str(value).encode()
        return value

    def check(self, keys: list[str]) -> bool:
        return all(k in self.data for k in keys)

    def multi_get(self, keys: list[str]) -> list[bytes]:
        return [self.data[k] for k in keys]
