"""The job-state side: the state table and the squeue/sacct/scontrol parsers (slurmstate.py), job_status's
calls (slurm.py).

A fake runner returns canned output of Slurm 22.05.8 clients (captured on the local test
cluster) and records every call, so the tests see exactly which commands run and how often.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from orchestrator.errors import SlurmError
from orchestrator.slurm import client as slurm
from orchestrator.slurm import queries
from orchestrator.slurm import state as slurmstate

Reply = tuple[int, str, str]  # returncode, stdout, stderr


@pytest.fixture(autouse=True)
def _no_slurm_conf(monkeypatch: pytest.MonkeyPatch) -> None:
    """The canned answers do not depend on a real cluster's SLURM_CONF (which is checked first)."""
    monkeypatch.delenv("SLURM_CONF", raising=False)


class FakeRunner:
    """Answers by the client name (argv[0]); a callable answer sees the argv."""

    def __init__(self, replies: dict[str, Reply | Callable[[list[str]], Reply] | BaseException]) -> None:
        self.replies = replies
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        argv = list(argv)
        self.calls.append(argv)
        key = "sacct -c" if argv[:2] == ["sacct", "--completion"] else argv[0]
        reply = self.replies[key]
        if isinstance(reply, BaseException):
            raise reply
        code, out, err = reply(argv) if callable(reply) else reply
        return subprocess.CompletedProcess(argv, code, out, err)

    def tools(self) -> list[str]:
        return [" ".join(c[:2]) if c[:2] == ["sacct", "--completion"] else c[0] for c in self.calls]


# squeue --noheader --states=all --Format=JobArrayID:|,State:|,...,RestartCnt:|,Name:, as printed on the test cluster
SQUEUE_OUT = (
    "7|RUNNING|None|node[1-2]|0:12|1|smoke\n"
    "6|COMPLETED|None|node[1-2]|0:09|0|smoke\n"
    "5|FAILED|NonZeroExitCode|node1|0:00|0|a|name|with|bars\n"
)
SACCT_DISABLED: Reply = (1, "", "Slurm accounting storage is disabled\n")
JOBCOMP_OUT = "6|COMPLETED|0:0|node[1-2]|00:00:09|smoke\n5|FAILED|3:0|node1|00:00:00|a|name|with|bars\n"
SCONTROL_OUT = (
    "JobId=7 JobName=smoke job\n   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
    "   JobState=RUNNING Reason=None Dependency=(null)\n"
    "   Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 ExitCode=0:0\n   RunTime=00:00:12 TimeLimit=00:10:00\n"
    "   NodeList=node[1-2]\n   Command=/tmp/a b/sbatch.sh\n"
)


@pytest.mark.parametrize(("state", "orch", "terminal"), [
    ("PENDING", "queued", False),
    ("RUNNING", "running", False),
    ("COMPLETING", "ending", False),
    ("REQUEUED", "queued", False),
    ("COMPLETED", "completed", True),
    ("CANCELLED by 0", "cancelled", True),
    ("FAILED", "failed", True),
    ("NODE_FAIL", "failed", True),
    ("OUT_OF_MEMORY", "failed", True),
    ("TIMEOUT", "timeout", True),
    ("PREEMPTED", "preempted", True),
    ("RUNNING+", "running", False),
    ("completed", "completed", True),
    ("NO_SUCH_STATE", "unknown", False),
    ("", "unknown", False),
])
def test_state_table(state: str, orch: str, terminal: bool) -> None:
    info = slurmstate.state_info(state)
    assert (info.orch, info.terminal) == (orch, terminal)


def test_every_terminal_state_is_one_sacct_knows() -> None:
    # sacct(1) "JOB STATE CODES": the states a finished job ends in
    finished = {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
                "PREEMPTED", "TIMEOUT", "REVOKED"}
    assert {s for s, info in slurmstate.JOB_STATES.items() if info.terminal} == finished


@pytest.mark.parametrize(("text", "expected"), [
    ("0:0", (0, 0)), ("3:0", (3, 0)), ("0:9", (0, 9)), ("137:0", (137, 0)), ("", (None, None)),
    ("garbage", (None, None)),
])
def test_parse_exit_code(text: str, expected: tuple[int | None, int | None]) -> None:
    assert slurmstate.parse_exit_code(text) == expected


def test_squeue_parses_every_field_and_keeps_bars_in_names() -> None:
    runner = FakeRunner({"squeue": (0, SQUEUE_OUT, "")})
    jobs = queries.squeue(["5", "6", "7"], runner=runner)
    assert list(jobs) == ["7", "6", "5"]
    assert jobs["7"].state == "RUNNING" and not jobs["7"].terminal and jobs["7"].nodes == "node[1-2]"
    assert jobs["7"].reason is None and (jobs["7"].restarts, jobs["6"].restarts) == (1, 0)
    assert jobs["5"].name == "a|name|with|bars" and jobs["5"].reason == "NonZeroExitCode"
    (argv,) = runner.calls
    assert "--jobs=5,6,7" in argv and "--states=all" in argv and "--json" not in argv


def test_squeue_unknown_ids_are_absent_not_an_error() -> None:
    runner = FakeRunner({"squeue": (1, "", "slurm_load_jobs error: Invalid job id specified\n")})
    assert queries.squeue(["99"], runner=runner) == {}


def test_squeue_controller_down_names_the_fix() -> None:
    err = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"
    runner = FakeRunner({"squeue": (1, "", err)})
    with pytest.raises(SlurmError) as info:
        queries.squeue(["1"], runner=runner)
    assert "cannot reach slurmctld" in info.value.message
    assert info.value.hint is not None and "cluster.sh up" in info.value.hint
    assert info.value.exit_code == 1


def test_squeue_missing_client_real_runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no squeue anywhere
    with pytest.raises(SlurmError, match="squeue") as info:
        queries.squeue(["1"])
    assert info.value.hint and info.value.exit_code == 1


def test_squeue_hanging_client_real_runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    stub = tmp_path / "squeue"
    stub.write_text("#!/bin/sh\nexec sleep 30\n")
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setattr(slurm, "QUERY_TIMEOUT", 0.3)
    with pytest.raises(SlurmError, match="did not answer"):
        queries.squeue(["1"])


def test_sacct_disabled_gives_none() -> None:
    runner = FakeRunner({"sacct": SACCT_DISABLED})
    assert queries.sacct(["1"], runner=runner) is None
    runner = FakeRunner({"sacct": (0, "", "Slurm accounting storage is disabled\n")})
    assert queries.sacct(["1"], runner=runner) is None


# sacct --noheader --parsable2 --allocations --duplicates
#       --format=JobID,State,ExitCode,NodeList,Elapsed,ElapsedRaw,AllocTRES,JobName (sacct(1), 22.05)
SACCT_OUT = ("12|FAILED|3:0|node1|00:00:01|1|billing=2,cpu=2,mem=1000M,node=1|x\n"
             "13_0|COMPLETED|0:0|node2|00:00:02|2|billing=1,cpu=1,gres/gpu=1,node=1|y\n"
             "14|CANCELLED by 0|0:15|node1|00:00:03|3|cpu=8,gres/gpu:a100=4,gres/gpu=4,node=1|z|bar\n"
             # a requeued job: each run is a record (--duplicates); the last one holds its state
             "15|REQUEUED|0:15|node[1-2]|00:30:00|1800|cpu=16,gres/gpu=8,mem=64G,node=2|r\n"
             "15|COMPLETED|0:0|node[1-2]|01:00:00|3600|cpu=16,gres/gpu=8,mem=64G,node=2|r\n")


def test_sacct_text_exit_codes_array_elements_and_gpu_hours_over_runs() -> None:
    runner = FakeRunner({"sacct": (0, SACCT_OUT, "")})
    jobs = queries.sacct(["12", "13", "14", "15"], runner=runner)
    assert jobs is not None
    assert (jobs["12"].state, jobs["12"].exit_code, jobs["12"].terminal) == ("FAILED", 3, True)
    assert jobs["13_0"].state == "COMPLETED"
    assert (jobs["14"].state, jobs["14"].signal, jobs["14"].name) == ("CANCELLED", 15, "z|bar")
    assert (jobs["15"].state, jobs["15"].elapsed) == ("COMPLETED", "01:00:00")
    assert [jobs[i].gpu_hours for i in ("12", "13_0", "14", "15")] == [0, round(2 / 3600, 3),
                                                                      round(12 / 3600, 3), 12.0]
    (argv,) = runner.calls
    assert "--parsable2" in argv and "--allocations" in argv and "--duplicates" in argv
    assert "--jobs=12,13,14,15" in argv


@pytest.mark.parametrize(("tres", "gpus"), [
    ("billing=8,cpu=8,gres/gpu=4,mem=64G,node=1", 4), ("cpu=8,gres/gpu:a100=2,gres/gpu=2", 2),
    ("cpu=2,mem=1G,node=1", 0), ("", 0), ("gres/gpu=x", 0),
])
def test_tres_gpus(tres: str, gpus: int) -> None:
    assert slurmstate.tres_gpus(tres) == gpus


def test_jobcomp_later_records_win() -> None:
    # a rebuilt test cluster numbers jobs from 1 again; the newest record of an id comes last
    out = ("1|COMPLETED|0:0|node[1-2]|00:00:00|old\n2|CANCELLED|0:0|node1|00:00:02|old\n"
           "1|FAILED|1:0|node1|00:00:00|new\n")
    runner = FakeRunner({"sacct -c": (0, out, "")})
    jobs = queries.jobcomp(["1"], runner=runner)
    assert list(jobs) == ["1"] and jobs["1"].name == "new" and jobs["1"].exit_code == 1


def test_job_status_batches_one_call_per_client() -> None:
    runner = FakeRunner({"squeue": (0, SQUEUE_OUT, ""), "sacct": SACCT_DISABLED,
                         "sacct -c": (0, JOBCOMP_OUT, "")})
    statuses = queries.job_status(["7", "6", "5", "4"], runner=runner)
    assert runner.tools() == ["squeue", "sacct", "sacct --completion"]
    assert statuses["7"].state == "RUNNING" and statuses["7"].source == "squeue"
    assert (statuses["6"].state, statuses["6"].exit_code, statuses["6"].source) == ("COMPLETED", 0, "jobcomp")
    assert (statuses["5"].state, statuses["5"].exit_code) == ("FAILED", 3)
    unknown = statuses["4"]
    assert (unknown.state, unknown.orch_state, unknown.source) == ("UNKNOWN", "unknown", "none")
    # only the finished and the unknown jobs go to sacct
    assert runner.calls[1][-1] == "--jobs=6,5,4"


def test_an_unreadable_completion_log_leaves_the_exit_codes_to_scontrol() -> None:
    """As a user: sacct --completion opens the completion log for appending, which only root may."""
    denied: Reply = (1, "", "sacct: fatal: open /var/log/slurm/jobcomp.txt: Permission denied\n")

    def scontrol(argv: list[str]) -> Reply:
        job_id = argv[-1]
        code = {"6": "0:0", "5": "3:0"}[job_id]
        return 0, f"JobId={job_id} JobName=x\n   JobState={'COMPLETED' if job_id == '6' else 'FAILED'} " \
                  f"Reason=None Dependency=(null)\n   Restarts=0 BatchFlag=1 Reboot=0 ExitCode={code}\n", ""

    runner = FakeRunner({"squeue": (0, SQUEUE_OUT, ""), "sacct": SACCT_DISABLED, "sacct -c": denied,
                         "scontrol": scontrol})
    statuses = queries.job_status(["7", "6", "5", "4"], runner=runner)
    assert runner.tools() == ["squeue", "sacct", "sacct --completion", "scontrol", "scontrol"]
    assert (statuses["6"].state, statuses["6"].exit_code, statuses["6"].source) == ("COMPLETED", 0, "scontrol")
    assert (statuses["5"].state, statuses["5"].exit_code) == ("FAILED", 3)
    assert statuses["7"].source == "squeue" and statuses["4"].state == "UNKNOWN"  # live and unknown: not asked


def test_scontrol_is_asked_for_a_bounded_number_of_exit_codes() -> None:
    many = "".join(f"{i}|FAILED|NonZeroExitCode|node1|0:00|0|x\n" for i in range(100, 200))
    runner = FakeRunner({"squeue": (0, many, ""), "sacct": SACCT_DISABLED, "sacct -c": (0, "", ""),
                         "scontrol": (0, "JobId=1 JobName=x\n   JobState=FAILED Reason=None ExitCode=1:0\n", "")})
    statuses = queries.job_status([str(i) for i in range(100, 200)], runner=runner)
    assert runner.tools().count("scontrol") == queries.MAX_SCONTROL_EXIT_CODES
    assert sum(s.exit_code == 1 for s in statuses.values()) == queries.MAX_SCONTROL_EXIT_CODES
    assert all(s.state == "FAILED" for s in statuses.values())


def test_job_status_prefers_accounting_when_it_exists() -> None:
    runner = FakeRunner({"squeue": (1, "", "slurm_load_jobs error: Invalid job id specified\n"),
                         "sacct": (0, "3|TIMEOUT|0:0|node1|00:01:10|70|cpu=1,gres/gpu=2|t\n", "")})
    statuses = queries.job_status(["3"], runner=runner)
    assert runner.tools() == ["squeue", "sacct"]
    assert statuses["3"].state == "TIMEOUT" and statuses["3"].source == "sacct"
    assert statuses["3"].gpu_hours == round(140 / 3600, 3)


def test_job_status_of_one_live_job_adds_scontrol_details() -> None:
    runner = FakeRunner({"squeue": (0, "7|RUNNING|None|node[1-2]|0:12|0|smoke\n", ""),
                         "scontrol": (0, SCONTROL_OUT, "")})
    status = queries.job_status(["7"], runner=runner)["7"]
    assert runner.tools() == ["squeue", "scontrol"]
    assert (status.state, status.restarts, status.exit_code) == ("RUNNING", 1, 0)
    assert status.as_dict()["job_id"] == "7" and status.as_dict()["terminal"] is False


def test_job_status_without_ids_calls_nothing() -> None:
    runner = FakeRunner({})
    assert queries.job_status([], runner=runner) == {}
    assert runner.calls == []


def test_parse_scontrol_keeps_spaces_inside_values() -> None:
    fields = slurmstate.parse_scontrol(SCONTROL_OUT)
    assert fields["JobName"] == "smoke job"
    assert fields["Command"] == "/tmp/a b/sbatch.sh"
    assert fields["Restarts"] == "1" and fields["JobState"] == "RUNNING"


def test_show_job_unknown_is_none() -> None:
    runner = FakeRunner({"scontrol": (1, "", "slurm_load_jobs error: Invalid job id specified\n")})
    assert queries.show_job("42", runner=runner) is None


def test_scancel_signal_and_refusal() -> None:
    runner = FakeRunner({"scancel": (0, "", "")})
    slurm.scancel(["3", "4"], signal="USR2", full=True, runner=runner)
    assert runner.calls == [["scancel", "--signal=USR2", "--full", "3", "4"]]
    denied = "scancel: error: Kill job error on job id 3: Access/permission denied\n"
    runner = FakeRunner({"scancel": (1, "", denied)})
    with pytest.raises(SlurmError, match="permission denied"):
        slurm.scancel(["3"], runner=runner)


def test_a_missing_slurm_conf_fails_at_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "nope.conf"))
    runner = FakeRunner({})
    with pytest.raises(SlurmError, match=r"SLURM_CONF=.*nope\.conf does not exist"):
        queries.squeue(["1"], runner=runner)
    assert runner.calls == []  # no client started, no 60 s of retries


def test_finished_job_keeps_squeues_restart_count_and_zero_elapsed_is_one_format() -> None:
    runner = FakeRunner({"squeue": (0, "6|COMPLETED|None|node1|0:09|2|smoke\n9|PENDING|BeginTime||0:00|1|p\n", ""),
                         "sacct": SACCT_DISABLED, "sacct -c": (0, "6|COMPLETED|0:0|node1|00:00:09|smoke\n", "")})
    statuses = queries.job_status(["6", "9"], runner=runner)
    assert (statuses["6"].source, statuses["6"].exit_code, statuses["6"].restarts) == ("jobcomp", 0, 2)
    assert (statuses["9"].elapsed, statuses["9"].restarts, statuses["9"].reason) == ("00:00:00", 1, "BeginTime")
