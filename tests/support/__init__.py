"""Helpers shared by the tests (import them as ``from support import ...``), one module per kind:

- ``environment``: paths (``ROOT`` the checkout, ``TESTS`` this folder, ``STUBS_DIR``), a clean environment, the test
  cluster, stub Slurm commands (``Stubs``), golden scripts, who listens where (/proc);
- ``clicalls``: refusals through the real CLI (``expect_refused``, ``refused``, ``cluster_file``), real ``orch``
  processes on a finished run (``orch``, ``resume``), a script preempted and resumed under ``orch run``;
- ``jobfolders``: job folders orch reads back (canned, or written by orch's own writers);
- ``standins``: stand-in Slurm clients (batching, canned answers) and an in-memory c10d store;
- ``terminal``: a real terminal (tmux) for ``orch top``.

Test modules must not import ``conftest``: with tests/ and tests/e2e/ each holding one, the name
``conftest`` means whichever pytest loaded first. Fixtures stay in conftest.py.
"""

from __future__ import annotations

from support.clicalls import (
    FAST,
    HANG,
    TEARDOWN_ABORT,
    aborted_in_teardown,
    assert_refused,
    cluster_file,
    expect_refused,
    no_hang,
    no_rank_started,
    once_more_on_teardown_abort,
    orch,
    preempt_and_resume,
    refused,
    resume,
    run_cli,
)
from support.environment import (
    GOLDEN_DIR,
    LISTEN,
    LOOPBACK4,
    LOOPBACK6,
    ORCH,
    ROOT,
    STUBS_DIR,
    TEST_CLUSTER,
    TESTS,
    UPDATE_GOLDEN,
    Stubs,
    batch_task_env,
    check_golden,
    clean_environ,
    is_leaky_var,
    listeners,
    load_stub_module,
)
from support.jobfolders import (
    CANNED_JOB_ID,
    CANNED_SUBMIT,
    cluster_for,
    make_job,
    training_job,
)
from support.standins import (
    ARGV_BOUND,
    CLIENTS,
    FAKE_CLIENT,
    SCALE_STAND_IN,
    DictStore,
    FakeSlurm,
    assert_bounded,
    calls,
)
from support.terminal import (
    Tmux,
    screen_row,
)

__all__ = [
    "ARGV_BOUND",
    "CANNED_JOB_ID",
    "CANNED_SUBMIT",
    "CLIENTS",
    "FAKE_CLIENT",
    "FAST",
    "GOLDEN_DIR",
    "HANG",
    "LISTEN",
    "LOOPBACK4",
    "LOOPBACK6",
    "ORCH",
    "ROOT",
    "SCALE_STAND_IN",
    "STUBS_DIR",
    "TEARDOWN_ABORT",
    "TESTS",
    "TEST_CLUSTER",
    "UPDATE_GOLDEN",
    "DictStore",
    "FakeSlurm",
    "Stubs",
    "Tmux",
    "aborted_in_teardown",
    "assert_bounded",
    "assert_refused",
    "batch_task_env",
    "calls",
    "check_golden",
    "clean_environ",
    "cluster_file",
    "cluster_for",
    "expect_refused",
    "is_leaky_var",
    "listeners",
    "load_stub_module",
    "make_job",
    "no_hang",
    "no_rank_started",
    "once_more_on_teardown_abort",
    "orch",
    "preempt_and_resume",
    "refused",
    "resume",
    "run_cli",
    "screen_row",
    "training_job",
]
