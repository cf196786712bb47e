"""``spawn_target``: the function a process-starting call runs in every process it starts, the one reading the
spawn styles, the spawn index as a rank and DDP009's spawner reach share."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.analysis import spawn_target


@pytest.mark.parametrize(("call", "started"), [
    ("mp.spawn(train, args=(cfg,), nprocs=4)", "train"),
    ("mp.spawn(fn=loader.load_worker, nprocs=n)", "loader.load_worker"),
    ("start_processes(main_worker, nprocs=n, start_method='fork')", "main_worker"),
    ("multiprocessing.Process(target=run, args=(i, world))", "run"),
    ("ctx.Process(args=(i,), target=worker)", "worker"),
])
def test_the_started_function_by_position_or_keyword(call: str, started: str) -> None:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call)
    target = spawn_target(node)
    assert target is not None and ast.unparse(target) == started


@pytest.mark.parametrize("call", ["mp.spawn(nprocs=4)", "Process(args=(1,))"])
def test_nothing_started_when_the_call_names_no_function(call: str) -> None:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call) and spawn_target(node) is None
