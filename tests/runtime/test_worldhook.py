"""runtime/worldhook.py: init_process_group wrapped, whether torch was imported before or after; every name
bound to it (torch.distributed's, init_device_mesh's); new_group untouched; the signature kept; whether a
rendezvous was orch's."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import ROOT, clean_environ

from orchestrator.local.rankenv import free_port
from orchestrator.runtime.worldhook import at_orch_rendezvous

ORCH = ("127.0.0.1", 29512)


@pytest.mark.parametrize(("init_method", "environ", "expected"), [
    (None, {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29512"}, True),
    ("env://", {"MASTER_ADDR": "localhost", "MASTER_PORT": "29512"}, True),  # loopback names are one
    ("env://", {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "12355"}, False),  # the tutorial's own port
    ("tcp://127.0.0.1:29512", {}, True),
    ("tcp://localhost:29512?rank=0", {}, True),
    ("tcp://127.0.0.1:41234", {}, False),  # a hard-coded port
    ("tcp://node7:29512", {}, False),
    ("tcp://127.0.0.1:port", {}, False),
    ("file:///tmp/rendezvous", {}, False),
])
def test_whether_the_rendezvous_is_orchs(init_method: str | None, environ: dict[str, str], expected: bool,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert at_orch_rendezvous(init_method, None, ORCH) is expected


def test_a_store_is_placed_by_its_address() -> None:
    import torch.distributed as dist

    port = free_port()
    server = dist.TCPStore("127.0.0.1", port, 1, True, timeout=datetime.timedelta(seconds=10))
    assert at_orch_rendezvous(None, server, ("localhost", port)) is True
    assert at_orch_rendezvous(None, dist.PrefixStore("p", server), ("127.0.0.1", port)) is True  # unwrapped
    assert at_orch_rendezvous(None, server, ("127.0.0.1", port + 1)) is False
    assert at_orch_rendezvous(None, dist.HashStore(), ORCH) is None  # no address: orch cannot tell


CHILD = """
import inspect, json, os, sys
from orchestrator.runtime.worldhook import watch_world
joins = []
if sys.argv[1] == "before":
    import torch.distributed  # torch loaded before the watch
watch_world(lambda *a: joins.append(a), master_addr="127.0.0.1", master_port=int(os.environ["MASTER_PORT"]))
import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d
from torch.distributed.device_mesh import init_device_mesh
mesh = init_device_mesh("cpu", (1,))  # init_process_group() through device_mesh's own name of it
group = dist.new_group([0])  # a subgroup: not a join
dist.all_reduce(torch.ones(1), group=group)
dist.destroy_process_group()
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + sys.argv[2], world_size=1, rank=0)
dist.destroy_process_group()
original = inspect.unwrap(distributed_c10d.init_process_group)
print(json.dumps({"joins": joins, "same_function": dist.init_process_group is distributed_c10d.init_process_group,
                  "signature": str(inspect.signature(dist.init_process_group)) == str(inspect.signature(original)),
                  "name": dist.init_process_group.__name__}))
"""


@pytest.mark.parametrize("when", ["before", "after"])
def test_every_init_is_seen_whether_torch_was_loaded_before_or_after(when: str, tmp_path: Path) -> None:
    master, own = free_port(), free_port()
    env = clean_environ(PYTHONPATH=str(ROOT), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(master), RANK="0",
                        WORLD_SIZE="1", LOCAL_RANK="0")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD), when, str(own)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    # init_device_mesh (env://, no backend named: one per device), then the script's own tcp:// world
    assert [(size, rank, orch) for size, rank, _, orch in seen["joins"]] == [(1, 0, True), (1, 0, False)]
    assert seen["joins"][0][2].startswith("cpu:gloo") and seen["joins"][1][2] == "gloo"  # cpu:gloo[,cuda:nccl]
    assert seen["same_function"] and seen["signature"] and seen["name"] == "init_process_group"


def test_what_on_join_raises_the_call_raises(tmp_path: Path) -> None:
    code = """
import os
from orchestrator.runtime.worldhook import watch_world
def refuse(*args):
    raise RuntimeError("refused by on_join")
watch_world(refuse, master_addr="127.0.0.1", master_port=1)
import torch.distributed as dist
try:
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["PORT"], world_size=1, rank=0)
except RuntimeError as exc:
    print(exc, dist.is_initialized())
"""
    proc = subprocess.run([sys.executable, "-c", code], env=clean_environ(PYTHONPATH=str(ROOT), PORT=str(free_port())),
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "refused by on_join True"  # the group was made; the error is on_join's


def test_the_loader_hands_on_what_it_does_not_do_itself() -> None:
    """inspect and linecache read the wrapped module's source through its loader."""
    code = """
import inspect, sys
from orchestrator.runtime.worldhook import watch_world
watch_world(lambda *a: None, master_addr="127.0.0.1", master_port=1)
import torch.distributed.distributed_c10d as c10d
print(type(c10d.__loader__).__name__, "def new_group" in inspect.getsource(c10d),
      c10d.__loader__.get_filename(c10d.__name__) == c10d.__file__)
"""
    proc = subprocess.run([sys.executable, "-c", code], env=clean_environ(PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["_Loader", "True", "True"]

