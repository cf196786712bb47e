"""The data directory: ``--data-dir`` / ``data_dir=``, else ``$ORCH_DATA_DIR``, read here at the edge.

The tasks trust ``job.json``'s ``data_dir``; they never read the variable themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

DATA_DIR_ENV_VAR = "ORCH_DATA_DIR"  # the dataset folder when --data-dir / data_dir= is not given


def resolve_data_dir(given: str | Path | None, environ: Mapping[str, str], cwd: Path) -> str | None:
    """The data directory: ``given`` (--data-dir, data_dir=), else ``$ORCH_DATA_DIR``, as a normalized
    absolute path (``~`` expanded); None when neither is set."""
    value = str(given) if given else environ.get(DATA_DIR_ENV_VAR)
    if not value:
        return None
    import os

    return os.path.normpath(cwd / Path(value).expanduser())
