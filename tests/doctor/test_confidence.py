"""Every doctor finding carries its evidence and a confidence (certain, likely, possible); orch doctor shows the
possible ones only with --all, and the gate never refuses on one."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.doctor import check_files, check_source
from orchestrator.doctor.confidence import CONFIDENCES, at_most, default_confidence
from orchestrator.doctor.findings import exit_code, format_findings, has_errors, make_finding
from orchestrator.doctor.gate import ScriptRefused, report

FIXTURES = Path(__file__).parent / "fixtures"

# A device used with no set_device anywhere the doctor can read: an absence, so a possible DDP001.
UNBOUND = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(2, 2).cuda())
"""

# A checkpoint told by its name alone (possible) beside one loaded into a model's state (likely).
LOADS = """\
import os
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
model = torch.nn.Linear(2, 2).cuda()
model.load_state_dict(torch.load("last.pt"))
torch.load(os.environ["CKPT"])
"""


def test_every_fixture_finding_has_a_confidence_and_evidence_and_errors_are_certain() -> None:
    findings = check_files(sorted(FIXTURES.glob("*.py")))
    assert findings
    for f in findings:
        assert f.confidence in CONFIDENCES, f
        assert f.evidence.startswith("line"), f  # the line(s) that triggered it
        if f.severity == "error":
            assert f.confidence == "certain", f
    assert {f.confidence for f in findings} >= {"certain", "likely"}


def test_a_name_guess_or_an_absence_is_possible_and_data_flow_is_likely(tmp_path: Path) -> None:
    [unbound] = [f for f in check_source(UNBOUND, "train.py") if f.code == "DDP001"]
    assert unbound.confidence == "possible" and "no set_device" in unbound.evidence
    loads = {f.line: f for f in check_source(LOADS, "train.py") if f.code == "DDP009"}
    assert loads[8].confidence == "likely" and "a model's state" in loads[8].evidence
    assert loads[9].confidence == "possible" and "name only" in loads[9].evidence


def test_a_helper_modules_finding_is_at_most_likely() -> None:
    assert at_most("certain", "likely") == "likely"
    assert at_most("possible", "likely") == "possible"
    assert default_confidence("DDP003", "error") == "certain"
    assert default_confidence("DDP008", "warning") == "certain"
    assert default_confidence("DDP005", "warning") == "likely"


def test_default_output_hides_possible_findings_and_all_shows_them(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "train.py"
    script.write_text(UNBOUND)
    assert main(["doctor", "--strict", str(script)]) == 0  # nothing shown: --strict has nothing to count
    out = capsys.readouterr().out
    assert "DDP001" not in out
    assert "1 possible finding not shown" in out and "orch doctor --all shows them" in out
    assert main(["doctor", "--strict", "--all", str(script)]) == 1
    out = capsys.readouterr().out
    assert "DDP001 warning" in out and "evidence (possible): line 6:" in out and "not shown" not in out
    assert main(["doctor", "--json", str(script)]) == 0  # JSON carries every finding, with both fields
    [item] = [d for d in json.loads(capsys.readouterr().out) if d["code"] == "DDP001"]
    assert item["confidence"] == "possible" and item["evidence"].startswith("line 6: `")


def test_the_gate_never_refuses_on_a_possible_error(tmp_path: Path) -> None:
    certain = make_finding("DDP003", "train.py", 3, "DataLoader(ds) has no sampler")
    possible = replace(certain, confidence="possible")
    assert certain.confidence == "certain" and has_errors([certain]) and exit_code([certain]) == 1
    assert not has_errors([possible]) and exit_code([possible]) == 0
    out = io.StringIO()
    assert report([possible], ["train.py"], out, refuse=True, ignore=(), would_refuse=None) == [possible]
    assert "DDP003" not in out.getvalue() and "1 possible finding not shown" in out.getvalue()
    with pytest.raises(ScriptRefused, match=r"DDP003"):
        report([certain, possible], ["train.py"], io.StringIO(), refuse=True, ignore=(), would_refuse=None)
    assert "DDP003 error" in format_findings([possible], show_all=True)


NAMED = """\
import os
import torch.distributed as dist


def report(value, is_master):
    if is_master:
        dist.barrier()


def main(cfg):
    dist.init_process_group("nccl")
    report(1.0, cfg.is_master)
    if int(os.environ["RANK"]) == 0:
        dist.barrier()
"""


def test_a_collective_under_a_rank_test_read_from_a_name_alone_is_a_likely_error_that_still_refuses() -> None:
    found = {f.line: f for f in check_source(NAMED, "train.py") if f.code == "DDP002"}
    assert found[7].severity == "error" and found[7].confidence == "likely"
    assert "read from a name alone" in found[7].evidence
    assert found[14].severity == "error" and found[14].confidence == "certain"  # RANK from the environment
    assert has_errors([found[7]])  # a likely error stops a launch as before
