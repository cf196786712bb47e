"""orch doctor's in-process parse of the project's modules follows each file, not its size and mtime: a helper
edited in place with the same length and the old mtime (``cp -p``, ``rsync -t``, ``tar x``) is read again."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from orchestrator.doctor import check_file

SIBLING = Path(__file__).resolve().parent / "fixtures" / "projects" / "sibling"


def test_a_helper_edited_keeping_size_and_mtime_is_read_again(tmp_path: Path) -> None:
    project = tmp_path / "sibling"
    shutil.copytree(SIBLING, project)
    helper = project / "utils.py"
    assert check_file(project / "main.py") == []  # the helper sets the device: parsed and cached
    before = os.stat(helper)
    text = helper.read_text(encoding="utf-8")
    line = "    torch.cuda.set_device(args.gpu)\n"
    edited = text.replace(line, "    pass  # no device".ljust(len(line) - 1) + "\n")
    assert edited != text and len(edited) == len(text)
    helper.write_text(edited, encoding="utf-8")
    os.utime(helper, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (os.stat(helper).st_size, os.stat(helper).st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert "DDP001" in [f.code for f in check_file(project / "main.py")]
