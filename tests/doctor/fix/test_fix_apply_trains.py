"""The real proof: a script with four pitfalls (the ``--local_rank`` flag, no ``set_epoch``, every rank saving
to one path, ``destroy_process_group`` in the loop: it goes into a ``finally``), fixed by ``orch doctor --fix
--write`` and trained under ``orch run --nproc 2`` (gloo, CPU), ends with the same parameters, bit for bit, as the
same script fixed by hand and trained under torchrun. The same for the two GPU fixes (the device bound before
init, ``map_location``) on a script that uses the GPU when there is one: on this CPU-only run they must leave its
CPU path training as the hand fix does (their effect on a GPU is not exercised here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support import ORCH, clean_environ, once_more_on_teardown_abort

from orchestrator.doctor import check_file
from orchestrator.local.rankenv import free_port

pytestmark = pytest.mark.slow
TIMEOUT = 240

SCRIPT = '''"""A small DDP regression on the CPU (gloo) with four pitfalls."""
import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    if args.local_rank == -1:
        raise SystemExit("start me with torch.distributed.launch: it passes --local_rank")
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(96, 4), torch.randn(96, 1))
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    sampler = DistributedSampler(data, seed=1)
    loader = DataLoader(data, batch_size=4, sampler=sampler)
    for epoch in range(args.epochs):
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        # the latest weights, every epoch
        torch.save(model.module.state_dict(), args.out)
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''

# The same script fixed by hand, as a user would: no flag, the sampler reached through the loader.
HAND_FIXES = [
    ('import argparse\n', 'import argparse\nimport os\n'),
    ('    parser.add_argument("--local_rank", type=int, default=-1)\n', ''),
    ('    if args.local_rank == -1:\n'
     '        raise SystemExit("start me with torch.distributed.launch: it passes --local_rank")\n',
     '    assert int(os.environ["LOCAL_RANK"]) >= 0\n'),
    ('    for epoch in range(args.epochs):\n',
     '    for epoch in range(args.epochs):\n        loader.sampler.set_epoch(epoch)\n'),
    ('        torch.save(model.module.state_dict(), args.out)\n        dist.destroy_process_group()\n',
     '        if dist.get_rank() == 0:\n            torch.save(model.module.state_dict(), args.out)\n'
     '        dist.barrier()\n    dist.destroy_process_group()\n'),
]


def _by_hand() -> str:
    text = SCRIPT
    for old, new in HAND_FIXES:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def _env() -> dict[str, str]:
    env = clean_environ()
    env.pop("OMP_NUM_THREADS", None)
    return env


def test_the_fixed_script_under_orch_run_trains_to_the_hand_fixed_scripts_parameters_under_torchrun(
        tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    assert {f.code for f in check_file(script)} >= {"DDP004", "DDP006", "DDP007", "DDP015"}
    fix = subprocess.run([ORCH, "doctor", "train.py", "--fix", "--write"], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert fix.returncode == 0, fix.stderr
    assert "fixed DDP015 (line 12), DDP004 (line 23), DDP006 (line 31), DDP007 (line 32)" in fix.stderr
    assert check_file(script) == []
    assert "    try:\n" in script.read_text(encoding="utf-8")  # DDP007's fix: the training in a try ...
    assert script.read_text(encoding="utf-8").endswith(  # ... whose finally destroys the group
        "    finally:\n        dist.destroy_process_group()\n\n\nif __name__ == \"__main__\":\n    main()\n")
    (tmp_path / "by_hand.py").write_text(_by_hand(), encoding="utf-8")

    ours = subprocess.run([ORCH, "run", "train.py", "--nproc", "2", "--cpu", "--job-root", str(tmp_path / "jobs"),
                           "--", "--out", str(tmp_path / "orch.pt")], cwd=tmp_path, env=_env(), capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    theirs = once_more_on_teardown_abort(lambda: subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master-addr", "127.0.0.1",
         "--master-port", str(free_port()), "by_hand.py", "--out", str(tmp_path / "torchrun.pt")],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=TIMEOUT, check=False))
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr

    got, want = torch.load(tmp_path / "orch.pt"), torch.load(tmp_path / "torchrun.pt")
    assert set(got) == set(want) == {"weight", "bias"}
    assert all(torch.equal(got[name], want[name]) for name in want), (got, want)


GPU_SCRIPT = '''"""A small DDP regression that uses the GPU when there is one (gloo on the CPU otherwise)."""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

cuda = torch.cuda.is_available()
dist.init_process_group("nccl" if cuda else "gloo")
local_rank = int(os.environ["LOCAL_RANK"])
device = torch.device("cuda") if cuda else torch.device("cpu")
model = torch.nn.Linear(4, 1).to(device)
model.load_state_dict(torch.load("init_model.pt"))
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
torch.manual_seed(dist.get_rank())
for step in range(20):
    x = torch.randn(8, 4, device=device)
    opt.zero_grad()
    torch.nn.functional.mse_loss(ddp(x), x.sum(1, keepdim=True)).backward()
    opt.step()
if dist.get_rank() == 0:
    torch.save(model.state_dict(), sys.argv[1])
dist.barrier()
dist.destroy_process_group()
'''

GPU_HAND_FIXES = [
    ('dist.init_process_group("nccl" if cuda else "gloo")\nlocal_rank = int(os.environ["LOCAL_RANK"])\n',
     'local_rank = int(os.environ["LOCAL_RANK"])\nif cuda:\n    torch.cuda.set_device(local_rank)\n'
     'dist.init_process_group("nccl" if cuda else "gloo")\n'),
    ('torch.load("init_model.pt")', 'torch.load("init_model.pt", map_location=device)'),
]


def test_the_device_and_map_location_fixes_keep_the_cpu_path_training_as_the_hand_fix_under_torchrun(
        tmp_path: Path) -> None:
    torch.manual_seed(3)
    torch.save(torch.nn.Linear(4, 1).state_dict(), tmp_path / "init_model.pt")
    script = tmp_path / "train.py"
    script.write_text(GPU_SCRIPT, encoding="utf-8")
    fix = subprocess.run([ORCH, "doctor", "train.py", "--fix", "--all", "--write"], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert fix.returncode == 0, fix.stderr
    assert "fixed DDP001 (line 13), DDP009 (line 14)" in fix.stderr
    assert "    torch.cuda.set_device(" in script.read_text(encoding="utf-8")
    assert check_file(script) == []
    by_hand = GPU_SCRIPT
    for old, new in GPU_HAND_FIXES:
        assert by_hand.count(old) == 1, old
        by_hand = by_hand.replace(old, new)
    (tmp_path / "by_hand.py").write_text(by_hand, encoding="utf-8")

    ours = subprocess.run([ORCH, "run", "train.py", "--nproc", "2", "--cpu", "--job-root", str(tmp_path / "jobs"),
                           "--", str(tmp_path / "orch.pt")], cwd=tmp_path, env=_env(), capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    theirs = once_more_on_teardown_abort(lambda: subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master-addr", "127.0.0.1",
         "--master-port", str(free_port()), "by_hand.py", str(tmp_path / "torchrun.pt")],
        cwd=tmp_path, env={**_env(), "CUDA_VISIBLE_DEVICES": ""}, capture_output=True, text=True, timeout=TIMEOUT,
        check=False))
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr

    got, want = torch.load(tmp_path / "orch.pt"), torch.load(tmp_path / "torchrun.pt")
    start = torch.load(tmp_path / "init_model.pt")
    assert not torch.equal(got["weight"], start["weight"])  # it trained
    assert all(torch.equal(got[name], want[name]) for name in want), (got, want)


def test_the_repos_local_rank_flag_script_fixed_takes_each_ranks_local_rank_from_the_environment_under_orch_run(
        tmp_path: Path) -> None:
    """tests/scripts/local_rank_arg.py, written for the old launcher's ``--local_rank`` flag: fixed (DDP015), orch
    runs it in torchrun's style (no flag passed) and each rank still reads its own local rank (0 and 1, not the
    flag's default 0 twice) and trains."""
    scripts = Path(__file__).resolve().parents[2] / "scripts"
    for name in ("local_rank_arg.py", "ddp_model.py"):
        (tmp_path / name).write_text((scripts / name).read_text(encoding="utf-8"), encoding="utf-8")
    fix = subprocess.run([ORCH, "doctor", "local_rank_arg.py", "--fix", "--write"], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert fix.returncode == 0 and "fixed DDP015 (line 21)" in fix.stderr, fix.stderr
    assert check_file(tmp_path / "local_rank_arg.py") == []
    ours = subprocess.run([ORCH, "run", "local_rank_arg.py", "--nproc", "2", "--cpu", "--job-root",
                           str(tmp_path / "jobs"), "--", "--out", str(tmp_path / "out")], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    [job] = [p for p in (tmp_path / "jobs").iterdir() if (p / "job.json").is_file()]
    launch = json.loads((job / "job.json").read_text(encoding="utf-8"))["script"]["launch"]
    assert launch["style"] == "env", launch  # torchrun's style (the unfixed script runs as local-rank-arg)
    ranks = [json.loads((tmp_path / "out" / f"rank{r}.json").read_text(encoding="utf-8")) for r in (0, 1)]
    assert [r["local_rank_arg"] for r in ranks] == [0, 1]
    assert ranks[0]["params"] == ranks[1]["params"]  # DDP kept the ranks' parameters equal
