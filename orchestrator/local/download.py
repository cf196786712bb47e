"""``orch run JOB --download``: the job's data fetched into its data directory before any rank starts.

The data directory is ``--data-dir``, else ``$ORCH_DATA_DIR``, else the per-user cache
(``$XDG_CACHE_HOME/orch/data``, default ``~/.cache/orch/data``: :func:`download_dir`). The job's own
``SPEC.download(data_dir)`` fetches what is missing there (MNIST: torchvision's download of its four
files, ``jobs/_datasets.py``) and returns at once when the files are present, so ``--download`` may
always be given. A network that cannot be reached (offline, a name that does not resolve, a refused
connection, no answer in :data:`NETWORK_TIMEOUT_S`) is a :class:`DownloadError` (exit code 75), never
a traceback; the job's stdout (torchvision's "Downloading ..." lines) goes where orch's own lines go,
so ``--json`` keeps stdout for the JSON.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import urllib.error
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TextIO

from orchestrator.errors import ConfigError, DownloadError
from orchestrator.records.cache import cache_root, private_dir
from orchestrator.spec.datadir import DATA_DIR_ENV_VAR
from orchestrator.spec.job import LoadedJob

NETWORK_TIMEOUT_S = 30.0  # a connect or read that hangs longer: the network is taken as unreachable
CACHE_SUBDIR = "data"  # under the user's orch cache folder
DOCS = "docs/writing-a-job.md#getting-the-data"
# What a failed download is, by the exception (the first match wins): network errors mean offline.
NETWORK_ERRORS: tuple[type[BaseException], ...] = (urllib.error.URLError, socket.gaierror, ConnectionError,
                                                    TimeoutError)
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def download_dir(data_dir: str | None, environ: Mapping[str, str]) -> Path:
    """Where ``--download`` puts the data: ``data_dir`` (from --data-dir or $ORCH_DATA_DIR), else the
    user's private cache folder's ``data/``."""
    if data_dir:
        return Path(data_dir)
    root = cache_root(environ)
    folder = private_dir(root) if root is not None else None
    if folder is None:
        raise ConfigError("--download has no folder to download into: no --data-dir, no "
                          f"{DATA_DIR_ENV_VAR}, and no private cache folder (~/.cache/orch)",
                          hint=f"pass --data-dir DIR (or set {DATA_DIR_ENV_VAR}=DIR): the data goes there")
    return folder / CACHE_SUBDIR


def fetch_data(loaded: LoadedJob, data_dir: Path, out: TextIO) -> Path:
    """Run the job's ``download`` into ``data_dir``; ``data_dir`` when the data is there."""
    spec = loaded.spec
    if spec.download is None:
        raise ConfigError(f"job {spec.name} cannot download its data: its SPEC has no download function",
                          hint="leave out --download and pass --data-dir DIR (or give the job's SPEC "
                               "download=FUNCTION(data_dir))")
    print(f"orch: {spec.name}: data directory {data_dir} (--download: fetching what is missing)", file=out,
          flush=True)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        with _network_timeout(NETWORK_TIMEOUT_S), contextlib.redirect_stdout(out):
            spec.download(data_dir)
    except NETWORK_ERRORS as exc:
        raise DownloadError(
            f"could not download the data of job {spec.name} into {data_dir}: {_reason(exc)}; this machine "
            "seems to be offline (or the mirror is unreachable)",
            hint=f"connect to the network and run it again, or copy the files by hand into {data_dir} "
                 f"(which files, and from where: {DOCS}), then pass --data-dir") from None
    except OSError as exc:
        where = exc.filename or data_dir
        raise ConfigError(f"cannot write the data of job {spec.name} to {where}: {exc.strerror or exc}",
                          hint=("free space there" if exc.errno in NO_SPACE else "make it writable")
                          + ", or pass --data-dir DIR elsewhere") from None
    return data_dir


def _reason(exc: BaseException) -> str:
    """One line: URLError's own reason (``[Errno 111] Connection refused``), else the exception's text."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    text = str(reason).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


@contextlib.contextmanager
def _network_timeout(seconds: float) -> Iterator[None]:
    """Sockets opened without a timeout (urllib's) give up after ``seconds`` instead of hanging."""
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    try:
        yield
    finally:
        socket.setdefaulttimeout(previous)
