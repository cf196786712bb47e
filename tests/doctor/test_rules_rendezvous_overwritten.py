"""DDP008 on a rendezvous flag's default: silent when every run overwrites the flag before it is used (the
assignment is what the ranks meet at, and is judged itself); reported when the overwrite is only on some path."""

from __future__ import annotations

from orchestrator.doctor import check_source

_SCRIPT = """
import argparse
import torch.distributed as dist


def main(args):
    dist.init_process_group("nccl", init_method=args.dist_url)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist-url", default="tcp://10.0.0.1:23456")
    args = parser.parse_args()
{overwrite}
    main(args)
"""


def lines(overwrite: str) -> list[int]:
    return [f.line for f in check_source(_SCRIPT.format(overwrite=overwrite), "t.py") if f.code == "DDP008"]


def test_a_default_every_run_overwrites_is_not_reported() -> None:
    assert 12 not in lines('    args.dist_url = "env://"')


def test_a_default_overwritten_only_on_request_is_reported() -> None:
    assert 12 in lines('    if args.dist_url == "auto":\n        args.dist_url = "env://"')


def test_a_default_never_overwritten_is_reported() -> None:
    assert lines("") == [12]
