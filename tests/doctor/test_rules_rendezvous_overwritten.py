"""DDP008 on a rendezvous flag's default: silent when every run overwrites the flag before it is used (the
assignment is what the ranks meet at, and is judged itself) or when no module of the project reads the flag; reported
when the overwrite is only on some path."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source

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


_CONFIGURE = """\
import argparse


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--init_method", default="tcp://127.0.0.1:23456")
    p.add_argument("--dist-url", default="tcp://10.0.0.1:23456")
    return p.parse_args()
"""


@pytest.mark.parametrize(("url", "reported"), [
    ('"env://"', set()),  # a landmark retriever: configure.py declares both, the script meets at env://
    ("args.dist_url", {7}),  # read: its default is where the ranks meet when the flag is forgotten
])
def test_a_default_no_module_of_the_project_reads_is_not_reported(tmp_path: Path, url: str, reported: set[int]) -> None:
    (tmp_path / "configure.py").write_text(_CONFIGURE)
    script = tmp_path / "train.py"
    script.write_text("import torch.distributed as dist\nfrom configure import get_args\n\n\ndef main():\n"
                      f"    args = get_args()\n    dist.init_process_group('nccl', init_method={url})\n\n\nmain()\n")
    found = {f.line for f in check_file(script) if f.code == "DDP008" and f.file.endswith("configure.py")}
    assert found == reported
