"""The store of orch mcp's plans (records/plans.py): private files under the user's state folder, ids that
name no path, an unknown or damaged plan refused with a hint, one submit per plan (an exclusive claim)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from orchestrator.errors import ConfigError
from orchestrator.records import plans


def _plan(plan_id: str) -> plans.StoredPlan:
    return plans.StoredPlan(plan_id=plan_id, created="2026-11-28T10:00:00+00:00", cwd="/w", cluster_file="/w/c.yaml",
                            options={"job": "train.py"}, now="2026-11-28T10:00:00+00:00", token="abcdef",
                            script="#!/bin/bash\n", run_config={"job_name": "x"},
                            inputs={"script /w/train.py": "0" * 64}, snapshot=False)


def test_a_plan_is_saved_private_and_read_back(state_dir: Path) -> None:
    plan_id = plans.new_id()
    path = plans.save(_plan(plan_id))
    assert path == state_dir / "plans" / f"{plan_id}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert plans.load(plan_id) == _plan(plan_id)
    with pytest.raises(FileExistsError):  # an id is never written twice
        plans.save(_plan(plan_id))


def test_the_store_follows_the_state_folder(tmp_path: Path) -> None:
    assert plans.plans_dir({"ORCH_STATE_DIR": str(tmp_path)}) == tmp_path / "plans"
    assert plans.plans_dir({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "orch" / "plans"


@pytest.mark.parametrize("plan_id", ["../x", "0123456789ABCDEF", "0123456789abcde", "0123456789abcdef0", "", "a/b"])
def test_an_id_that_is_no_plan_id_names_no_path(plan_id: str, state_dir: Path) -> None:
    with pytest.raises(ConfigError, match="is not a plan id") as refused:
        plans.load(plan_id)
    assert "call the plan tool first" in (refused.value.hint or "")
    with pytest.raises(ConfigError):
        plans.claim(plan_id)
    assert not (state_dir / "plans").exists() or list((state_dir / "plans").iterdir()) == []


def test_an_unknown_or_damaged_plan_is_refused(state_dir: Path) -> None:
    plan_id = plans.new_id()
    with pytest.raises(ConfigError, match=f"unknown plan id {plan_id}"):
        plans.load(plan_id)
    plans.save(_plan(plan_id))
    path = state_dir / "plans" / f"{plan_id}.json"
    path.write_text('{"plan_id": 1}')
    with pytest.raises(ConfigError, match="is damaged") as damaged:
        plans.load(plan_id)
    assert damaged.value.hint == "plan the job again"


def test_a_plan_is_claimed_once(state_dir: Path) -> None:
    plan_id = plans.new_id()
    assert plans.submitted_as(plan_id) is None
    plans.claim(plan_id)
    claim = state_dir / "plans" / f"{plan_id}{plans.CLAIM_SUFFIX}"
    assert stat.S_IMODE(claim.stat().st_mode) == 0o600
    assert plans.submitted_as(plan_id) == ""  # taken, no job id yet
    with pytest.raises(ConfigError, match="did not finish"):
        plans.claim(plan_id)
    plans.record_job(plan_id, "77", "/jobs/x")
    with pytest.raises(ConfigError, match=f"plan {plan_id} was submitted already as job 77") as again:
        plans.claim(plan_id)
    assert "status tool" in (again.value.hint or "")
    plans.release(plan_id)
    plans.claim(plan_id)  # released: free again


def test_a_store_others_may_read_is_refused(state_dir: Path) -> None:
    folder = state_dir / "plans"
    folder.mkdir(mode=0o700)
    os.chmod(folder, 0o755)
    with pytest.raises(ConfigError, match="is not a private folder of yours") as refused:
        plans.save(_plan(plans.new_id()))
    assert "chmod 700" in (refused.value.hint or "")
    assert list(folder.iterdir()) == []


def test_plans_past_their_time_are_removed_when_one_is_saved(state_dir: Path) -> None:
    old, kept = plans.new_id(), plans.new_id()
    plans.save(_plan(old))
    plans.claim(old)
    plans.save(_plan(kept))
    folder = state_dir / "plans"
    (folder / "notes.txt").write_text("not a plan\n")
    past = os.stat(folder / f"{old}.json").st_mtime - plans.KEEP_S - 60
    for name in (f"{old}.json", f"{old}{plans.CLAIM_SUFFIX}", "notes.txt"):
        os.utime(folder / name, (past, past))
    plans.save(_plan(plans.new_id()))
    assert not (folder / f"{old}.json").exists() and not (folder / f"{old}{plans.CLAIM_SUFFIX}").exists()
    assert plans.load(kept) == _plan(kept) and (folder / "notes.txt").exists()
