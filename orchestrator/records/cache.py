"""The user's cache folder for the CLI's start-up (an edge: it reads the environment).

``$XDG_CACHE_HOME/orch`` (default ``~/.cache/orch``), created mode 0700. A folder that is not a
directory owned by this user, or that group or others may write, is never used: a planted cache
must not change what orch renders. Every failure (read-only home, full disk) means "no cache",
never an error; a cache only saves time.

:func:`template_bytecode_cache` is Jinja2's bytecode cache for the sbatch templates. Jinja2 keys
each entry by the template's name and file path and stores the SHA-1 of its source next to the
code: an edited template (built-in or ``--templates DIR``) is compiled again, never taken stale.
The folder name adds the orch and Jinja2 versions and the environment's settings, which change
the generated code.

:func:`find_cluster` / :func:`load_cluster`: the cluster.yaml in use, loaded, with its parse (not the
validation, which :mod:`orchestrator.spec.clusterparse` owns) cached here: a dry run then skips the YAML parser.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator import __version__
from orchestrator.errors import ConfigError
from orchestrator.records.atomic import write_text_atomic
from orchestrator.spec import cluster, clusterfiles, clusterparse

if TYPE_CHECKING:
    import jinja2.bccache

log = logging.getLogger(__name__)

CACHE_ENV_VAR = "ORCH_CACHE_DIR"  # overrides $XDG_CACHE_HOME/orch; "off" (or empty) disables the cache


def cache_root(environ: Mapping[str, str]) -> Path | None:
    """Where orch may cache: ``$ORCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/orch``, else ``~/.cache/orch``."""
    if CACHE_ENV_VAR in environ:
        value = environ[CACHE_ENV_VAR]
        return None if value in ("", "off", "0") else Path(value).expanduser()
    base = environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):  # the XDG spec: relative values are invalid and ignored
        home = environ.get("HOME") or os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "orch"


def private_dir(path: Path) -> Path | None:
    """``path`` created (mode 0700, parents as needed) and checked: a directory (not a link) owned by
    this user that neither group nor others may write; else None."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(path)
    except OSError as exc:
        log.debug("no cache in %s: %s", path, exc)
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        log.debug("no cache in %s: not a private directory of this user", path)
        return None
    return path


def template_bytecode_cache(settings: Mapping[str, Any], environ: Mapping[str, str] | None = None
                            ) -> jinja2.bccache.BytecodeCache | None:
    """A Jinja2 bytecode cache for an environment with these ``settings`` (``environ``: default
    ``os.environ``); None when there is no safe folder."""
    import jinja2
    import jinja2.bccache

    root = cache_root(os.environ if environ is None else environ)
    if root is None or private_dir(root) is None:
        return None
    digest = hashlib.sha256(repr(sorted(settings.items())).encode()).hexdigest()[:12]
    folder = private_dir(root / f"templates-{__version__}-jinja{jinja2.__version__}-{digest}")
    if folder is None:
        return None

    class QuietCache(jinja2.bccache.FileSystemBytecodeCache):
        """Jinja2's file cache, but a cache that cannot be read or written is just a miss."""

        def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().load_bytecode(bucket)
            except Exception as exc:  # a truncated or foreign file: compile the template instead
                log.debug("template cache entry unreadable: %s", exc)
                bucket.reset()

        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError as exc:
                log.debug("template cache not written: %s", exc)

    return QuietCache(str(folder), "%s.jinja")


def _parsed_file(text: str, environ: Mapping[str, str]) -> Path | None:
    """The cache entry of a file whose content is ``text``: keyed by the SHA-256 of the content and
    orch's version (an edit that keeps the size and the times, ``cp -p``, ``rsync -t``, ``tar x``, still
    changes the key); None when there is no safe folder."""
    root = cache_root(environ)
    if root is None or private_dir(root) is None:
        return None
    folder = private_dir(root / "parsed")
    if folder is None:
        return None
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
    key = f"{digest}|{__version__}"
    return folder / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")


def load_parsed(text: str, environ: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """What :func:`store_parsed` kept for a file with the content ``text``, else None."""
    entry = _parsed_file(text, os.environ if environ is None else environ)
    if entry is None:
        return None
    import json

    try:
        data = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def store_parsed(text: str, data: Any, environ: Mapping[str, str] | None = None) -> None:
    """Keep ``data`` (the parse of a YAML file whose content is ``text``), if JSON gives back exactly the
    same values (plain mappings with text keys, lists, text, numbers, booleans, null; no dates or NaN)."""
    if not _plain(data) or not isinstance(data, dict):
        return
    entry = _parsed_file(text, os.environ if environ is None else environ)
    if entry is None:
        return
    import json

    try:
        write_text_atomic(entry, json.dumps(data), mode=0o600, fsync=False)  # a cache only saves time
    except OSError as exc:
        log.debug("parsed file not cached: %s", exc)


def _plain(value: Any) -> bool:
    if isinstance(value, dict):
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if type(value) is float:
        return value == value and value not in (float("inf"), float("-inf"))
    return value is None or type(value) in (str, int, bool)


# --- cluster.yaml, found and loaded with its parse cached --------------------------------------

def find_cluster(explicit: str | Path | None, environ: Mapping[str, str], cwd: Path, *,
                 required: bool = True) -> cluster.Cluster | None:
    """The cluster.yaml in use, loaded: ``explicit`` (--cluster), ``$ORCH_CLUSTER``, ``./cluster.yaml``.

    ``required=False``: None when none was named and ./cluster.yaml does not exist (the follow-up
    verbs and local runs work without one); a named file that is missing or invalid stays an error.
    """
    named = str(explicit) if explicit else None
    try:
        path = clusterfiles.find_cluster_file(named, environ, cwd)
    except ConfigError:
        if required or named or environ.get(clusterfiles.CLUSTER_ENV_VAR):
            raise
        return None
    return load_cluster(path)


def load_cluster(path: Path) -> cluster.Cluster:
    """Check (only you or root can have written it: :mod:`orchestrator.records.codetrust`), read,
    parse and validate ``path``. The parse (not the validation) is cached per user, keyed by the
    digest of the file's content (this module): a dry run then skips the YAML parser."""
    from orchestrator.records.codetrust import check_config

    check_config(path, "the cluster file")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}",
                          hint="check the path and its permissions") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                          hint="save the file as UTF-8") from None
    data = load_parsed(text)
    if data is None:
        data = clusterparse.parse_yaml(text, str(path))
        store_parsed(text, data)
    return clusterparse.validate_cluster(data, str(path))
