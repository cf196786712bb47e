"""orch doctor's reading as a service (orchestrator/service/doctor.py), as the verb and orch mcp's doctor tool call it:
the findings less the codes ignored (cluster.yaml's doctor.ignore too), the launch-style note, the layout's
refusals. The verb's printing is tested through the CLI in tests/doctor/test_doctor.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import TESTS, cluster_for

from orchestrator.doctor import DoctorInputError
from orchestrator.service.doctor import asked, diagnose, expand, ignored
from orchestrator.service.jobs import Scope

FIXTURES = TESTS / "doctor" / "fixtures"


def test_a_spawning_script_is_read_in_its_style_and_its_finding_answered() -> None:
    checked = diagnose([str(FIXTURES / "case_ddp014_bad.py")], (), asked())
    assert [n for n in checked.notes if "written for the per-node launch style" in n]
    assert "DDP014" not in {f.code for f in checked.findings}  # orch run/submit start it per node: answered


def test_across_nodes_a_global_rank_device_is_an_error_and_on_one_node_not() -> None:
    one = diagnose([str(FIXTURES / "case_ddp021_bad.py")], (), asked(nproc=2))
    two = diagnose([str(FIXTURES / "case_ddp021_bad.py")], (), asked(nodes=2, gpus=8))
    assert {f.severity for f in one.findings if f.code == "DDP021"} == {"warning"}
    assert {f.severity for f in two.findings if f.code == "DDP021"} == {"error"}


def test_codes_ignored_come_from_the_flag_and_the_cluster_file(clean_env: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    path = cluster_for(tmp_path, tmp_path / "jobs")
    path.write_text(path.read_text() + "doctor:\n  ignore: [DDP021]\n")
    codes = ignored(["DDP014"], Scope(str(path)))
    assert set(codes) == {"DDP014", "DDP021"}
    checked = diagnose([str(FIXTURES / "case_ddp021_bad.py")], codes, asked(nodes=2, gpus=8))
    assert "DDP021" not in {f.code for f in checked.findings}


def test_a_layout_for_both_verbs_and_an_empty_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DoctorInputError, match="--nproc judges"):
        asked(nproc=2, nodes=2)
    with pytest.raises(DoctorInputError, match="no Python files"):
        expand([str(tmp_path)])
    unread = diagnose([str(tmp_path / "missing.py")], (), asked())
    assert len(unread.unreadable) == 1 and unread.findings == []
