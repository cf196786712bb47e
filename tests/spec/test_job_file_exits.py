"""Job files that exit while they are imported (``sys.exit``, ``os._exit``, ``os.abort``, ``exit()``) or define a
wrong ``SPEC`` are one clear error in ``orch submit``, its dry run and ``orch run`` (exit 2, nothing written or
queued), also through the installed CLI; ``os._exit``/``os.abort`` are restored after the import.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import cluster_file, expect_refused

from orchestrator.errors import ConfigError

if TYPE_CHECKING:
    from support import Stubs


# --- job files that exit at import or define a wrong SPEC ------------------------------------------

GOOD_TAIL = '''
def build(params, ctx):
    raise RuntimeError("planning only")
'''

SPEC_AFTER_EXIT = ("from orchestrator import JobSpec, TrainParams\n"
                   "SPEC = JobSpec(name='x', params=TrainParams, build=build)\n")

JOB_FILES = [
    ("sys.exit(0)", "import sys\nsys.exit(0)\n", "exits while it is imported"),
    ("sys.exit(3)", "import sys\nsys.exit(3)\n", "exits while it is imported"),
    ("raise SystemExit", "raise SystemExit('bye')\n", "exits while it is imported"),
    ("os._exit(0)", "import os\nos._exit(0)\n", "os._exit(0)"),
    ("from os import _exit", "from os import _exit\n_exit(0)\n", "os._exit(0)"),
    ("os.abort()", "import os\nos.abort()\n", "os.abort()"),
    ("exit()", "exit()\n", "exits while it is imported"),
    ("SPEC = 42", "SPEC = 42\n", "SPEC is a int"),
    ("SPEC = None", "SPEC = None\n", "defines no SPEC"),
    ("SPEC = dict", "SPEC = {'name': 'x'}\n", "SPEC is a dict"),
    ("params instance", "from orchestrator import JobSpec, TrainParams\n"
                        "SPEC = JobSpec(name='x', params=TrainParams(), build=lambda p, c: None)\n", "SPEC.params"),
    ("params dict", "from orchestrator import JobSpec\nSPEC = JobSpec(name='x', params=dict, build=print)\n",
     "SPEC.params"),
    ("name int", "from orchestrator import JobSpec, TrainParams\n"
                 "SPEC = JobSpec(name=7, params=TrainParams, build=print)\n", "SPEC.name"),
    ("name blank", "from orchestrator import JobSpec, TrainParams\n"
                   "SPEC = JobSpec(name='  ', params=TrainParams, build=print)\n", "SPEC.name"),
    ("build str", "from orchestrator import JobSpec, TrainParams\n"
                  "SPEC = JobSpec(name='x', params=TrainParams, build='train')\n", "SPEC.build"),
    ("resources dict", "from orchestrator import JobSpec, TrainParams\n"
                       "SPEC = JobSpec(name='x', params=TrainParams, build=print, resources={'nodes': 2})\n",
     "SPEC.resources"),
    ("needs_data str", "from orchestrator import JobSpec, TrainParams\n"
                       "SPEC = JobSpec(name='x', params=TrainParams, build=print, needs_data='yes')\n",
     "SPEC.needs_data"),
    ("validator TypeError", "from pydantic import field_validator\nfrom orchestrator import JobSpec, TrainParams\n"
                            "class P(TrainParams):\n    @field_validator('lr')\n    @classmethod\n"
                            "    def v(cls, x):\n        raise TypeError('boom')\n"
                            "SPEC = JobSpec(name='x', params=P, build=print)\n", "params model failed"),
]


@pytest.mark.parametrize(("source", "message"), [(s, m) for _, s, m in JOB_FILES], ids=[i for i, _, _ in JOB_FILES])
@pytest.mark.parametrize("verb", ["submit", "submit --dry-run", "run"])
def test_job_files_that_exit_or_lie_are_clear_errors(source: str, message: str, verb: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str], stubs: Stubs) -> None:
    job = tmp_path / "badjob.py"
    # a .py file is a job file when it assigns SPEC (else it is a script, run as such): these all do
    tail = GOOD_TAIL if "SPEC" in source else GOOD_TAIL + SPEC_AFTER_EXIT
    job.write_text(source + tail, encoding="utf-8")
    if verb == "run":
        argv = ["run", str(job), "--job-root", str(tmp_path / "jobs")]
    else:
        argv = [*verb.split(), str(job), "--cluster", str(cluster_file(tmp_path))]
    expect_refused(argv, capsys, [message], jobs=tmp_path / "jobs", stubs=stubs)


def test_os_exit_is_restored_after_the_import(tmp_path: Path) -> None:
    import os

    from orchestrator.spec.job import load_job_file

    before = os._exit, os.abort
    job = tmp_path / "exits.py"
    job.write_text("import os\nos._exit(1)\n" + GOOD_TAIL + SPEC_AFTER_EXIT, encoding="utf-8")
    with pytest.raises(ConfigError):
        load_job_file(job)
    assert (os._exit, os.abort) == before


def test_job_file_exiting_through_the_installed_cli(tmp_path: Path, stubs: Stubs) -> None:
    from support import ORCH

    job = tmp_path / "exits.py"
    job.write_text("import os\nos._exit(0)\n" + GOOD_TAIL + SPEC_AFTER_EXIT, encoding="utf-8")
    proc = subprocess.run([ORCH, "submit", str(job), "--cluster", str(cluster_file(tmp_path))],
                          capture_output=True, text=True, env=stubs.env(), cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "exits while it is imported" in proc.stderr and "Traceback" not in proc.stderr
    assert stubs.records() == []
