"""runtime/pgtimeout.py: a script's init_process_group gets launcher.collective_timeout when it passes no
timeout= (or torch's own default, what the frameworks pass when the user set nothing), joins with the longer
init_timeout, and keeps a timeout the script chose; a per-node script's spawned processes are bounded too."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support import ROOT, clean_environ
from torch.distributed import constants

from orchestrator.runtime import pgtimeout
from orchestrator.runtime.pgtimeout import Bound

BOUND = Bound(init_s=300, collective_s=7)


class FakeC10d(ModuleType):
    """init_process_group and set_timeout, recorded."""

    def __init__(self) -> None:
        super().__init__("torch_fake_c10d")
        self.calls: list[dict[str, Any]] = []
        self.timeouts: list[datetime.timedelta] = []

        def init_process_group(backend: str | None = None, init_method: str | None = None,
                               timeout: datetime.timedelta | None = None, world_size: int = -1,
                               rank: int = -1) -> None:
            self.calls.append({"backend": backend, "timeout": timeout, "world_size": world_size})

        self.init_process_group = init_process_group
        self.set_timeout = lambda delta, group=None: self.timeouts.append(delta)


@pytest.fixture
def c10d(monkeypatch: pytest.MonkeyPatch) -> FakeC10d:
    fake = FakeC10d()
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    return fake


def _init(c10d: FakeC10d, *args: Any, **kwargs: Any) -> list[tuple[int, bool]]:
    applied: list[tuple[int, bool]] = []
    pgtimeout._wrap_init(c10d, BOUND, lambda seconds, orchs: applied.append((seconds, orchs)))
    c10d.init_process_group(*args, **kwargs)
    return applied


@pytest.mark.parametrize("given", [{}, {"timeout": None}, {"timeout": constants.default_pg_timeout},
                                   {"timeout": constants.default_pg_nccl_timeout}])
def test_a_script_that_chose_no_timeout_gets_the_collective_timeout(c10d: FakeC10d, given: dict[str, Any]) -> None:
    applied = _init(c10d, "gloo", world_size=2, **given)
    assert c10d.calls == [{"backend": "gloo", "timeout": datetime.timedelta(seconds=300), "world_size": 2}]
    assert c10d.timeouts == [datetime.timedelta(seconds=7)]  # every collective after the join
    assert applied == [(7, True)]


def test_a_timeout_the_script_passes_is_left_alone(c10d: FakeC10d) -> None:
    chosen = datetime.timedelta(seconds=90)
    applied = _init(c10d, "gloo", None, chosen)  # positionally, as init_process_group(backend, init_method, timeout)
    assert c10d.calls == [{"backend": "gloo", "timeout": chosen, "world_size": -1}]
    assert c10d.timeouts == []
    assert applied == [(90, False)]


def test_the_join_waits_the_longer_of_the_two(c10d: FakeC10d) -> None:
    pgtimeout._wrap_init(c10d, Bound(init_s=10, collective_s=600), None)
    c10d.init_process_group("gloo")
    assert c10d.calls[0]["timeout"] == datetime.timedelta(seconds=600)


def test_wrapping_twice_wraps_once(c10d: FakeC10d) -> None:
    pgtimeout._wrap_init(c10d, BOUND, None)
    once = c10d.init_process_group
    pgtimeout._wrap_init(c10d, Bound(init_s=20, collective_s=20), None)
    assert c10d.init_process_group is once


CHILD = """
import datetime, json, os, sys
from orchestrator.runtime.pgtimeout import Bound, bound_timeout
if sys.argv[1] == "before":
    import torch.distributed  # torch loaded before the bound
from orchestrator.runtime.worldhook import watch_world
bound_timeout(Bound(init_s=60, collective_s=6))
joins = []
watch_world(lambda *a: joins.append(a), master_addr="127.0.0.1", master_port=1)  # the world check's hook too
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

def group_timeout():
    return dist.group.WORLD._get_backend(torch.device("cpu")).options._timeout.total_seconds()

def init(port, **kwargs):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", world_size=1, rank=0, **kwargs)
    seconds = group_timeout()
    dist.all_reduce(torch.ones(1))
    dist.destroy_process_group()
    return seconds

def spawned(index, port, out):
    with open(out, "w") as fh:
        json.dump(init(port), fh)

if __name__ == "__main__":
    ports = [int(p) for p in sys.argv[2:6]]
    own = init(ports[0], timeout=datetime.timedelta(seconds=45))
    framework = init(ports[1], timeout=datetime.timedelta(seconds=1800))  # Lightning's, HF's ddp_timeout default
    bounded = init(ports[2])
    out = os.path.join(sys.argv[6], "spawned.json")
    mp.spawn(spawned, args=(ports[3], out), nprocs=1)  # a per-node script's own process: a fresh interpreter
    with open(out) as fh:
        spawned_s = json.load(fh)
    seen = {"own": own, "framework": framework, "bounded": bounded, "spawned": spawned_s, "joins": len(joins)}
    print(json.dumps(seen))
"""


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_real_gloo_group_and_a_spawned_one_get_the_bound_beside_the_world_watch(when: str, tmp_path: Path) -> None:
    from orchestrator.local.rankenv import free_port

    child = tmp_path / "child.py"
    child.write_text(textwrap.dedent(CHILD), encoding="utf-8")
    ports = [str(free_port()) for _ in range(4)]
    proc = subprocess.run([sys.executable, str(child), when, *ports, str(tmp_path)], capture_output=True,
                          text=True, timeout=120, env=clean_environ(PYTHONPATH=str(ROOT)), check=False)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen == {"own": 45.0, "framework": 6.0, "bounded": 6.0, "spawned": 6.0, "joins": 3}
