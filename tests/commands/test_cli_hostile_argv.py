"""Hostile command lines: ``--OPTION --`` (argparse hands the action an empty list) and 100,000-character paths
for every path option and the JOB of status/logs/cancel/plot/doctor exit 2 naming the option, no traceback.
"""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.cli import main


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], *names: str) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("orch: error:") == 1 and "Traceback" not in err, err
    for name in names:
        assert name in err, (name, err)
    return err


# -- ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("option", ["--sbatch-arg", "--env", "--sweep", "--job-name", "--container-mounts",
                                    "--constraint", "--templates", "--nodelist"])
@pytest.mark.parametrize("form", ["joined", "separate"])
def test_dash_dash_as_an_option_value(option: str, form: str, capsys: pytest.CaptureFixture[str],
                                      clean_env: Any, write_cluster: Any) -> None:
    cluster = str(write_cluster())
    argv = ["submit", "smoke", "--dry-run", "--cluster", cluster]
    argv += [f"{option}=--"] if form == "joined" else [option, "--"]
    refused(argv, capsys, option)

LONG = "p" * 100_000

PATH_OPTIONS = [
    (["submit", "smoke", "--dry-run", "--templates", LONG], "--templates"),
    (["submit", "smoke", "--dry-run", "--data-dir", LONG], "--data-dir"),
    (["submit", "smoke", "--dry-run", "--cluster", LONG], "--cluster"),
    (["submit", "--dry-run", "-m", LONG], "-m"),
    (["run", "-m", LONG], "-m"),
    (["run", "smoke", "--job-root", LONG], "--job-root"),
    (["run", "--resume", LONG], "--resume"),
    (["submit", LONG, "--dry-run"], "JOB"),
    (["status", LONG], "JOBID|DIR"),
    (["logs", LONG], "JOB"),
    (["cancel", LONG], "JOBID|DIR"),
    (["plot", LONG], "JOB"),
    (["plot", "1", "-o", LONG], "-o"),
    (["doctor", LONG], "FILE"),
    (["status", "a/" + "b" * 300], "JOBID|DIR"),
    (["doctor", "c" * 256 + ".py"], "FILE"),
]


@pytest.mark.parametrize(("argv", "name"), PATH_OPTIONS)
def test_overlong_paths_name_the_option(argv: list[str], name: str, capsys: pytest.CaptureFixture[str],
                                        clean_env: Any) -> None:
    refused(argv, capsys, name)
