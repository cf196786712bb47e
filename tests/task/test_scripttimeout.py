"""task/scripttimeout.py: a script task hands the job's launcher.init_timeout and collective_timeout to torch's
side, and records which timeout is in force (orch's setting, or the script's own timeout=)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from orchestrator.spec.cluster import Launcher
from orchestrator.spec.runconfig import RunConfig
from orchestrator.task import scripttimeout
from orchestrator.task.outcome import COLLECTIVE_TIMEOUT, RECORDER


class FakeTorch:
    def __init__(self) -> None:
        self.asked: dict[str, int] = {}
        self.on_applied: Callable[[int, bool], None] | None = None

    def bound_timeout(self, *, init_timeout: int, collective_timeout: int,
                      on_applied: Callable[[int, bool], None]) -> None:
        self.asked = {"init": init_timeout, "collective": collective_timeout}
        self.on_applied = on_applied


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[None]:
    RECORDER.start(tmp_path / "rank0.outcome.json", rank=0, world_size=2, run="local", restart=0,
                   stopped_by="orch run", init_timeout=120, collective_timeout=9)
    yield
    RECORDER.path = None


def test_the_jobs_timeouts_reach_the_hook_and_the_record(recorder: None) -> None:
    cfg = cast(RunConfig, SimpleNamespace(launcher=Launcher(init_timeout=120, collective_timeout=9)))  # what it reads
    fake = FakeTorch()
    scripttimeout.bound(cfg, fake)
    assert fake.asked == {"init": 120, "collective": 9}
    assert fake.on_applied is not None
    fake.on_applied(9, True)
    assert RECORDER.timeout == (9, COLLECTIVE_TIMEOUT)
    fake.on_applied(45, False)
    assert RECORDER.timeout == (45, scripttimeout.SCRIPT_TIMEOUT)
