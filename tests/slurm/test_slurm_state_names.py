"""Every Slurm job state (squeue %T / sacct State / scontrol JobState of Slurm 22.05: 24 names) and
orch's reading of it, stated here independently of slurmstate.JOB_STATES, plus the spellings clients print."""

from __future__ import annotations

import pytest

from orchestrator.slurm import state as slurmstate

# Slurm's state name -> (orch state, terminal). Written from Slurm's documentation (squeue(1) JOB STATE
# CODES), not copied from the table under test.
EXPECTED: dict[str, tuple[str, bool]] = {
    "PENDING": ("queued", False),
    "REQUEUED": ("queued", False),
    "REQUEUE_FED": ("queued", False),
    "REQUEUE_HOLD": ("queued", False),
    "RESV_DEL_HOLD": ("queued", False),
    "CONFIGURING": ("starting", False),
    "RUNNING": ("running", False),
    "RESIZING": ("running", False),
    "SIGNALING": ("running", False),
    "COMPLETING": ("ending", False),
    "STAGE_OUT": ("ending", False),
    "SUSPENDED": ("suspended", False),
    "STOPPED": ("suspended", False),
    "SPECIAL_EXIT": ("held", False),
    "COMPLETED": ("completed", True),
    "CANCELLED": ("cancelled", True),
    "REVOKED": ("cancelled", True),
    "FAILED": ("failed", True),
    "BOOT_FAIL": ("failed", True),
    "NODE_FAIL": ("failed", True),
    "OUT_OF_MEMORY": ("failed", True),
    "TIMEOUT": ("timeout", True),
    "DEADLINE": ("timeout", True),
    "PREEMPTED": ("preempted", True),
}


def test_the_table_holds_exactly_slurms_24_states() -> None:
    assert len(EXPECTED) == 24
    assert set(slurmstate.JOB_STATES) == set(EXPECTED)


@pytest.mark.parametrize(("state", "expected"), sorted(EXPECTED.items()))
def test_every_state_maps_to_its_orch_state(state: str, expected: tuple[str, bool]) -> None:
    info = slurmstate.state_info(state)
    assert (info.orch, info.terminal) == expected
    status = slurmstate.JobStatus(job_id="1", state=state, source="squeue")
    assert (status.orch_state, status.terminal) == expected
    assert status.as_dict()["orch_state"] == expected[0]
    assert status.as_dict()["terminal"] is expected[1]


@pytest.mark.parametrize(("printed", "expected"), [
    ("CANCELLED by 1000", ("cancelled", True)),      # sacct
    ("RUNNING+", ("running", False)),                # sacct -X marks resized jobs
    ("  PENDING  ", ("queued", False)),              # padded columns
    ("timeout", ("timeout", True)),                  # any case
    ("Completed", ("completed", True)),
    ("PENDING_X", ("unknown", False)),               # only the exact name counts
    ("XPENDING", ("unknown", False)),
    ("", ("unknown", False)),
    ("   ", ("unknown", False)),
    ("NO_SUCH_STATE", ("unknown", False)),
])
def test_printed_spellings(printed: str, expected: tuple[str, bool]) -> None:
    info = slurmstate.state_info(printed)
    assert (info.orch, info.terminal) == expected


def test_unknown_is_not_terminal() -> None:
    """A state orch does not know must not make followers stop waiting."""
    assert slurmstate.UNKNOWN.orch == "unknown"
    assert slurmstate.UNKNOWN.terminal is False


def test_a_status_is_a_snapshot() -> None:
    status = slurmstate.JobStatus(job_id="1", state="RUNNING", source="squeue")
    with pytest.raises(AttributeError):
        status.state = "COMPLETED"  # type: ignore[misc]
