"""The legacy ``--local_rank`` flag declared as a spec handed to ``add_argument`` later (PICK's
``CustomArgs(['--local_rank'], default=0, type=int, target='local_rank')``): the script is written for
``torch.distributed.launch``."""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator.launchstyles import detect, read
from orchestrator.launchstyles.localrank import spelling

SPEC = """\
import argparse
import collections

import torch
import torch.distributed as dist

CustomArgs = collections.namedtuple('CustomArgs', 'flags default type target help')
options = [
    CustomArgs(['--local_rank'], default=0, type=int, target='local_rank', help='local rank from the launcher'),
    CustomArgs(['-lr', '--learning_rate'], default=0.1, type=float, target='lr', help='learning rate'),
]
parser = argparse.ArgumentParser()
for opt in options:
    parser.add_argument(*opt.flags, default=opt.default, type=opt.type)
config = vars(parser.parse_args())
torch.cuda.set_device(config['local_rank'])
dist.init_process_group('nccl', init_method='env://')
"""


def test_a_spec_of_the_flag_decides_the_style(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SPEC, encoding="utf-8")
    launch = detect(read(script))
    assert launch.style == "local-rank-arg"
    assert launch.flag == "--local_rank"
    assert launch.why.startswith("train.py:9: CustomArgs(['--local_rank']")


def test_a_list_of_spellings_without_default_or_type_is_no_declaration() -> None:
    """A list that merely names the flag (``FORWARDED = ['--local_rank', '--seed']``, a call building a command
    line) declares nothing."""
    call = ast.parse("subprocess.run(['--local_rank', '0'])").body[0].value
    spec = ast.parse("Arg(['--local-rank'], type=int)").body[0].value
    assert isinstance(call, ast.Call) and isinstance(spec, ast.Call)
    assert spelling(call) is None
    assert spelling(spec) == "--local-rank"


BINDS = """\
import argparse
import os
import torch
import torch.distributed as dist
parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=0)
args = parser.parse_args()
print("local rank", args.local_rank, int(os.environ["LOCAL_RANK"]))
{fill}
torch.cuda.set_device(args.local_rank)
dist.init_process_group("nccl", init_method="env://")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda(), device_ids=[args.local_rank])
"""


def test_a_flag_that_binds_the_gpu_decides_though_local_rank_is_read_elsewhere(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(BINDS.format(fill=""), encoding="utf-8")
    assert detect(read(script)).style == "local-rank-arg"  # without the flag every process binds GPU 0
    script.write_text(BINDS.format(fill='args.local_rank = int(os.environ["LOCAL_RANK"])'), encoding="utf-8")
    assert detect(read(script)).style == "env"  # the environment fills the flag's value


BOUND = """\
import argparse

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
arg = parser.add_argument
arg('--distributed', action='store_true', default=False)
arg("--local_rank", default=0, type=int)
args = parser.parse_args()
if args.distributed:
    torch.cuda.set_device(args.local_rank)
    dist.init_process_group(backend='nccl', init_method='env://')
"""


def test_the_flag_declared_through_a_name_bound_to_add_argument_decides_the_style(tmp_path: Path) -> None:
    """dfdc_deepfake_challenge's ``arg = parser.add_argument`` then ``arg("--local_rank", default=0, type=int)``;
    a command line handed to a function (``run("--local_rank")``, no default or type) declares nothing."""
    script = tmp_path / "train.py"
    script.write_text(BOUND, encoding="utf-8")
    launch = detect(read(script))
    assert (launch.style, launch.flag) == ("local-rank-arg", "--local_rank")
    assert launch.why.startswith('train.py:9: arg("--local_rank"')
    call = ast.parse('run("--local_rank", str(rank))').body[0].value
    assert isinstance(call, ast.Call) and spelling(call) is None
