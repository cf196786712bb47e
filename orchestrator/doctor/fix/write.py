"""``orch doctor --fix --write``: the fixed text written in place of the script, atomically (a temporary file
in its folder, renamed over it), after a copy of the original (``SCRIPT.orig``, or ``SCRIPT.orig.N`` when
that name is taken). Refused when the script changed since it was read, or cannot be written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from orchestrator.errors import OrchError


class ScriptChanged(OrchError):
    """The script is not what the fix was made from, or cannot be replaced: nothing written."""


def write_fixed(path: Path, original: str, fixed: str) -> Path:
    """Write ``fixed`` over ``path``, whose text was ``original``; return where the original was kept."""
    try:
        now = path.read_bytes()
    except OSError as exc:
        raise ScriptChanged(f"{path}: cannot read it again: {exc.strerror}", hint="check the path") from None
    if now != original.encode("utf-8"):
        raise ScriptChanged(f"{path}: changed since orch doctor read it; nothing written",
                            hint=f"run orch doctor {path} --fix --write again on the file as it is now")
    folder = path.parent
    if not os.access(path, os.W_OK) or not os.access(folder, os.W_OK | os.X_OK):
        what = path if not os.access(path, os.W_OK) else folder
        raise ScriptChanged(f"{what}: not writable; nothing written",
                            hint=f"make it writable, or apply the diff yourself: orch doctor {path} --fix > fix.diff")
    backup = _keep(path, now)
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".fix", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(fixed.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return backup


def _keep(path: Path, data: bytes) -> Path:
    """The original's bytes in the first free name of ``SCRIPT.orig``, ``SCRIPT.orig.1``, ...; never over a file."""
    for n in range(1000):
        backup = path.with_name(f"{path.name}.orig" + (f".{n}" if n else ""))
        try:
            with open(backup, "xb") as fh:
                fh.write(data)
            return backup
        except FileExistsError:
            continue
    raise ScriptChanged(f"{path}: no free name for the original's copy ({path.name}.orig.N)",
                        hint=f"remove old copies: rm {path}.orig*")
