"""The fix loop: every fixable finding of a script fixed in one pass, reported at the user's lines, codes in
``ignore`` left alone, and the fixed script clean (a second pass finds nothing)."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source
from orchestrator.doctor.fix import fix_source, unified_diff

SCRIPT = '''"""A toy DDP script with six pitfalls."""
import argparse

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    args = parser.parse_args()
    device = torch.device(f"cuda:{args.local_rank}")
    dist.init_process_group("nccl")
    model = torch.nn.Linear(4, 1).cuda()
    model.load_state_dict(torch.load("model_ckpt.pt"))
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    for epoch in range(3):
        for x, y in loader:
            ((model(x.to(device)) - y.to(device)) ** 2).mean().backward()
        torch.save(model.state_dict(), "ckpt.pt")
        dist.destroy_process_group()
    dist.barrier()
'''


def test_all_six_fixes_in_one_pass_at_the_lines_the_user_has() -> None:
    assert {f.code for f in check_source(SCRIPT, "train.py")} >= {"DDP001", "DDP004", "DDP006", "DDP007", "DDP009",
                                                                   "DDP015"}
    fixed = fix_source(SCRIPT, "train.py", show_all=True)  # DDP001 (no set_device) is a possible finding
    assert sorted((f.code, f.line) for f in fixed.fixed) == [
        ("DDP001", 15), ("DDP004", 18), ("DDP006", 23), ("DDP007", 24), ("DDP009", 16), ("DDP015", 11)]
    assert fixed.left == []
    assert check_source(fixed.text, "train.py") == []
    again = fix_source(fixed.text, "train.py", show_all=True)
    assert (again.text, again.fixed, again.left) == (fixed.text, [], [])
    default = fix_source(SCRIPT, "train.py")
    assert {f.code for f in default.fixed} == {"DDP004", "DDP006", "DDP007", "DDP009", "DDP015"}
    assert default.possible == 1


def test_ignored_codes_are_not_fixed() -> None:
    fixed = fix_source(SCRIPT, "train.py", ignore={"DDP006", "DDP001"}, show_all=True)
    assert {f.code for f in fixed.fixed} == {"DDP004", "DDP007", "DDP009", "DDP015"}
    assert {f.code for f in check_source(fixed.text, "train.py")} == {"DDP001", "DDP006"}


def test_the_diff_names_the_path_as_given_and_is_empty_without_a_change() -> None:
    diff = unified_diff("a\nb\n", "a\nc\n", "src/train.py")
    assert diff.splitlines()[:2] == ["--- src/train.py", "+++ src/train.py"]
    assert unified_diff(SCRIPT, SCRIPT, "train.py") == ""


def test_a_diff_of_a_file_without_a_final_newline_says_so_and_patch_reads_it() -> None:
    assert unified_diff("a\nb", "a\nc", "x.py").splitlines()[4:] == [
        "-b", "\\ No newline at end of file", "+c", "\\ No newline at end of file"]


def test_findings_on_lines_that_read_the_same_are_each_fixed_at_their_own_line() -> None:
    text = '''import torch
import torch.distributed as dist

dist.init_process_group("gloo")
model = torch.nn.Linear(2, 2)
for epoch in range(3):
    torch.save(model.state_dict(), "last.pt")
torch.save(model.state_dict(), "last.pt")
'''
    fixed = fix_source(text, "train.py")
    assert [(f.code, f.line) for f in fixed.fixed] == [("DDP006", 7), ("DDP006", 8)]
    assert fixed.text.count("dist.barrier()") == 2 and check_source(fixed.text, "train.py") == []


def test_findings_on_lines_that_read_the_same_and_have_no_fix_are_each_left_at_their_own_line() -> None:
    # MT-DNN: two `model.save(model_file)` under `if args.local_rank in [-1, 0]:`; the second was never said
    text = '''import torch
import torch.distributed as dist

dist.init_process_group("gloo")
model = torch.nn.Linear(2, 2)
for epoch in range(3):
    done = torch.save(model.state_dict(), "last.pt")
done = torch.save(model.state_dict(), "last.pt")
'''
    fixed = fix_source(text, "train.py")
    assert fixed.fixed == [] and fixed.text == text
    assert [(f.code, f.line) for f, _ in fixed.left] == [("DDP006", 7), ("DDP006", 8)]

def test_a_file_libcst_cannot_parse_is_left_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    import libcst

    def refuse(text: str) -> libcst.Module:
        raise libcst.ParserSyntaxError("unsupported", lines=[text], raw_line=1, raw_column=0)

    monkeypatch.setattr(libcst, "parse_module", refuse)
    fixed = fix_source(SCRIPT, "train.py")
    assert fixed.text == SCRIPT and fixed.fixed == []
    assert {f.code for f, _ in fixed.left} == {"DDP004", "DDP006", "DDP007", "DDP009", "DDP015"}
    assert all("libcst cannot parse this file" in why for _, why in fixed.left)
