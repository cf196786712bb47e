"""Which cluster.yaml a command uses, and the named cluster files.

Discovery order (one lookup, used by every verb): ``--cluster PATH|NAME``, then ``$ORCH_CLUSTER``, then
``./cluster.yaml``. A NAME is ``NAME.yaml`` in :func:`clusters_dir` (``~/.config/orch/clusters``).
Pure: the caller passes the environment and the current directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from orchestrator.errors import ConfigError
from orchestrator.spec.cluster import NAME_RE

CLUSTER_ENV_VAR = "ORCH_CLUSTER"
DEFAULT_CLUSTER_FILE = "cluster.yaml"


def clusters_dir(environ: Mapping[str, str]) -> Path | None:
    """Where named cluster files live: ``$XDG_CONFIG_HOME/orch/clusters`` (default ``~/.config/...``)."""
    base = environ.get("XDG_CONFIG_HOME") or ""
    if not base.startswith("/"):  # the XDG spec: a relative value is invalid and ignored
        home = environ.get("HOME") or ""
        if not home.startswith("/"):
            return None
        base = home.rstrip("/") + "/.config"
    return Path(base) / "orch" / "clusters"


def is_cluster_name(text: str) -> bool:
    """``--cluster NAME`` (a named cluster file) rather than a path: no '/', no .yaml/.yml suffix."""
    return bool(NAME_RE.fullmatch(text)) and not text.endswith((".yaml", ".yml")) and text not in (".", "..")


def named_cluster_files(environ: Mapping[str, str]) -> dict[str, Path]:
    """NAME -> file of every ``NAME.yaml`` in :func:`clusters_dir`, sorted by name."""
    folder = clusters_dir(environ)
    if folder is None or not folder.is_dir():
        return {}
    found = {p.stem: p for p in folder.glob("*.yaml") if is_cluster_name(p.stem) and p.is_file()}
    return dict(sorted(found.items()))


def find_cluster_file(explicit: str | None, environ: Mapping[str, str], cwd: Path) -> Path:
    """Resolve which cluster file to use (pure: the caller passes the environment and cwd).

    ``--cluster``, then ``$ORCH_CLUSTER``, then ``./cluster.yaml``. The first two take a path or a NAME:
    ``NAME`` is ``<clusters_dir>/NAME.yaml`` when that exists (a file ``./NAME`` otherwise still works).
    """
    if explicit:
        text, source = explicit, "--cluster"
    elif environ.get(CLUSTER_ENV_VAR):
        text, source = environ[CLUSTER_ENV_VAR], f"${CLUSTER_ENV_VAR}"
    else:
        text, source = str(cwd / DEFAULT_CLUSTER_FILE), "the current directory"
    folder = clusters_dir(environ)
    if is_cluster_name(text) and folder is not None and (folder / f"{text}.yaml").is_file():
        return folder / f"{text}.yaml"
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = cwd / path
    if not path.is_file():
        names = ", ".join(named_cluster_files(environ)) or "none"
        where = f" nor {folder}/{text}.yaml" if is_cluster_name(text) and folder is not None else ""
        raise ConfigError(
            f"no cluster file at {path}{where} (from {source})",
            hint=f"pass --cluster PATH or NAME (named clusters: {names}; orch clusters lists them), "
                 f"set {CLUSTER_ENV_VAR}, or run from a folder with a cluster.yaml",
        )
    return path
