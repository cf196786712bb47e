"""task/worldcheck.py with a stand-in for torch's side: which tasks are watched, what lands in the rank's outcome
record, rank 0's warning lines, and ``launcher.world_check: strict`` failing at the join or at the end."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from orchestrator.env.distenv import DistEnv
from orchestrator.errors import ConfigError
from orchestrator.spec.cluster import Launcher
from orchestrator.spec.launch import Launch
from orchestrator.spec.runconfig import RunConfig
from orchestrator.spec.script import ScriptTarget
from orchestrator.task import worldcheck
from orchestrator.task.outcome import RECORDER

OnJoin = Callable[[int, int, str, "bool | None"], None]


class FakeTorch:
    """Records the watch; ``join`` plays a successful init_process_group."""

    def __init__(self) -> None:
        self.on_join: OnJoin | None = None
        self.where: tuple[str, int] | None = None
        self.spawned: OnJoin | None = None  # what each process a per-node script spawns runs at its join

    def watch_world(self, on_join: OnJoin, *, master_addr: str, master_port: int) -> None:
        self.on_join, self.where = on_join, (master_addr, master_port)

    def watch_spawned_world(self, on_join: OnJoin, *, master_addr: str, master_port: int) -> None:
        self.spawned, self.where = on_join, (master_addr, master_port)

    def join(self, size: int, rank: int, at_orch: bool | None = True) -> None:
        assert self.on_join is not None
        self.on_join(size, rank, "gloo", at_orch)


def check_of(torch: FakeTorch) -> worldcheck.Check:
    """The rank's watch, from the method it handed torch's side."""
    check = getattr(torch.on_join, "__self__", None)
    assert isinstance(check, worldcheck.Check)
    return check


def config(world_check: str = "warn", *, tasks: int = 2, script: bool = True) -> RunConfig:
    target = ScriptTarget(kind="script", target="/src/train.py", cwd="/src") if script else None
    return RunConfig(mode="local", job_name="train", job_file="/src/train.py", params={}, nodes=1, gpus_per_node=0,
                     tasks_per_node=tasks, cpus_per_task=1, job_dir="/jobs/train", created="2026-01-01T00:00:00",
                     script=target, launcher=Launcher(world_check=world_check))  # type: ignore[arg-type]


def dist(rank: int, world: int = 2) -> DistEnv:
    return DistEnv(rank=rank, local_rank=rank, world_size=world, local_world_size=world, node_rank=0, num_nodes=1,
                   master_addr="127.0.0.1", master_port=29512)


@pytest.fixture
def record(tmp_path: Path) -> Iterator[Callable[[], dict[str, object]]]:
    """RECORDER started on a file of tmp_path (as launch starts it); the record's JSON as written."""
    path = tmp_path / "rank0.outcome.json"
    RECORDER.start(path, rank=0, world_size=2, run="local", restart=0, stopped_by="orch run", init_timeout=300,
                   collective_timeout=30)
    yield lambda: json.loads(path.read_text(encoding="utf-8"))
    RECORDER.path = None


@pytest.mark.parametrize(("cfg", "env"), [
    (config(tasks=1), dist(0, world=1)),  # one rank: alone is right
    (config("independent"), dist(0)),  # --independent-ranks
    (config(script=False), dist(0)),  # a job file: orch's entrypoint forms its world
])
def test_what_is_not_watched(cfg: RunConfig, env: DistEnv, record: Callable[[], dict[str, object]]) -> None:
    torch = FakeTorch()
    settle = worldcheck.watch(cfg, env, torch)
    assert torch.on_join is None and settle(0) == 0 and settle(5) == 5
    assert "world" not in record()


def test_a_formed_world_is_recorded_and_says_nothing(record: Callable[[], dict[str, object]],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    torch = FakeTorch()
    settle = worldcheck.watch(config("strict"), dist(0), torch)
    assert torch.where == ("127.0.0.1", 29512)
    assert record()["world"] == {}  # watched: nothing joined yet, said at once
    torch.join(2, 0)
    assert record()["world"] == {"size": 2, "rank": 0, "backend": "gloo", "orch_rendezvous": True}
    assert record()["kind"] == "running"
    assert settle(0) == 0
    assert capsys.readouterr().err == ""


def test_rank_0_warns_at_once_of_a_world_of_another_size(record: Callable[[], dict[str, object]],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    torch = FakeTorch()
    settle = worldcheck.watch(config(), dist(0), torch)
    torch.join(1, 0, at_orch=False)
    assert capsys.readouterr().err == (
        "orch: warning: rank 0: the job's 2 ranks never formed a process group: this rank initialised a world of "
        "1 rank (gloo) not at orch's rendezvous (MASTER_ADDR:MASTER_PORT) and trained alone; the job goes on "
        "(--strict-world stops it)\n")
    assert settle(0) == 0  # warn: the run goes on and ends as the script ends
    assert record()["world"] == {"size": 1, "rank": 0, "backend": "gloo", "orch_rendezvous": False}


def test_other_ranks_record_but_do_not_print(capsys: pytest.CaptureFixture[str]) -> None:
    torch = FakeTorch()
    worldcheck.watch(config(), dist(1), torch)
    torch.join(1, 0)
    assert capsys.readouterr().err == ""


def test_strict_fails_the_rank_at_the_join() -> None:
    torch = FakeTorch()
    worldcheck.watch(config("strict"), dist(1), torch)
    with pytest.raises(ConfigError, match="never formed a process group: this rank initialised a world of 1") as err:
        torch.join(1, 0, at_orch=False)
    assert "--independent-ranks" in (err.value.hint or "")


def test_strict_fails_a_rank_that_never_initialised_at_its_end() -> None:
    settle = worldcheck.watch(config("strict"), dist(0), FakeTorch())
    with pytest.raises(ConfigError, match="this rank never called init_process_group") as err:
        settle(0)
    assert "call init_process_group" in (err.value.hint or "")
    assert settle(3) == 3  # a script that failed anyway keeps its own exit code


def test_rank_0_says_when_no_init_came_within_the_init_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    check = worldcheck.Check(env=dist(0, world=4), strict=False)
    check.late(300)
    assert capsys.readouterr().err == (
        "orch: warning: rank 0 has not called init_process_group 300 s into the script (launcher.init_timeout): "
        "unless it does, the 4 ranks train as independent copies\n")
    check.on_join(4, 0, "gloo", True)
    check.late(300)
    assert capsys.readouterr().err == ""  # joined meanwhile: nothing to say


def test_the_timer_runs_on_rank_0_only_and_stops_at_the_join() -> None:
    cfg = config()
    torch = FakeTorch()
    worldcheck.watch(cfg, dist(1), torch)
    assert check_of(torch).timer is None
    torch = FakeTorch()
    worldcheck.watch(cfg, dist(0), torch)
    check = check_of(torch)
    assert check.timer is not None and check.timer.interval == cfg.launcher.init_timeout and check.timer.daemon
    torch.join(2, 0)
    check.timer.join(timeout=5)
    assert not check.timer.is_alive()  # cancelled


def per_node(world_check: str = "warn", procs: int = 2) -> RunConfig:
    launch = Launch(style="per-node", procs_per_task=procs)
    target = ScriptTarget(kind="script", target="/src/spawner.py", cwd="/src", launch=launch)
    return config(world_check, tasks=1).model_copy(update={"script": target})


def test_a_per_node_script_is_watched_in_the_processes_it_spawns(capsys: pytest.CaptureFixture[str]) -> None:
    """One task per node, ``procs`` ranks each: the watch goes to the spawned processes (picklable), not to the
    task, and expects every node's processes (2 nodes x 2 here)."""
    torch = FakeTorch()
    settle = worldcheck.watch(per_node(), dist(0, world=2), torch)
    assert torch.on_join is None and torch.where == ("127.0.0.1", 29512)
    check = torch.spawned
    assert check == worldcheck.SpawnedCheck(expected=4, strict=False)
    assert pickle.loads(pickle.dumps(check)) == check
    check(4, 3, "gloo", True)  # rank 3 of the world of 4: right
    assert capsys.readouterr().err == "" and settle(0) == 0
    check(1, 0, "gloo", True)  # the script's flags' defaults: one process alone
    assert capsys.readouterr().err == (
        "orch: warning: the job's 4 ranks never formed a process group: the spawned rank 0 initialised a world of "
        "1 rank (gloo) at orch's rendezvous and trained alone; the job goes on (--strict-world stops it)\n"
        f"HINT: {worldcheck.PER_NODE_HINT}\n")


def test_a_per_node_scripts_spawned_rank_fails_at_its_join_under_strict() -> None:
    torch = FakeTorch()
    worldcheck.watch(per_node("strict"), dist(0, world=1), torch)
    assert torch.spawned is not None
    with pytest.raises(ConfigError, match="the job's 2 ranks never formed a process group: the spawned rank 1"):
        torch.spawned(3, 1, "gloo", True)


@pytest.mark.parametrize(("cfg", "world"), [(per_node("independent"), 2), (per_node(procs=1), 1)])
def test_what_of_a_per_node_script_is_not_watched(cfg: RunConfig, world: int) -> None:
    torch = FakeTorch()
    worldcheck.watch(cfg, dist(0, world=world), torch)
    assert torch.spawned is None and torch.on_join is None
