"""Ship a code tree to the cluster before a remote submit: only the files that changed.

One round trip lists what the remote copy holds (path and content: the SHA-256 of each file, the target
of each link); the files whose content differs are sent (never trusting size and time: ``cp -p``,
``rsync -t`` and ``tar x`` keep both across an edit), with ``rsync`` over the same SSH connection when
rsync is installed here (``ORCH_REMOTE_SHIP=tar`` turns it off), else as a tar stream; files that left the tree are
removed there. An unchanged tree costs that one round trip and sends nothing.

The remote copy of a tree is ``<remote.workdir>/code/<10 hex digits of this host and the tree's path>/<folder
name>``: one per tree and laptop, so repeated submits only send edits.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import shlex
import shutil
import socket
import subprocess
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass

from orchestrator.remote.ssh import Connection, RemoteError, remote_path
from orchestrator.remote.tree import CodeTree

log = logging.getLogger(__name__)

SHIP_ENV_VAR = "ORCH_REMOTE_SHIP"  # "tar": never rsync


@dataclass(frozen=True)
class Shipped:
    dest: str  # the remote copy (relative: to the remote home)
    sent: int  # files sent
    removed: int  # files removed there
    method: str  # "rsync", "tar" or "none" (nothing changed)


def dest_for(workdir: str, tree: CodeTree) -> str:
    digest = hashlib.sha256(f"{socket.gethostname()}:{tree.root}".encode()).hexdigest()[:10]
    base = workdir.rstrip("/") or "/"
    base = base[2:] if base.startswith("~/") else "." if base == "~" else base
    return f"{base}/code/{digest}/{tree.root.name or 'root'}"  # the folder keeps its name (job names use it)


Signature = str  # a file's content: "f:<SHA-256 hex>", a link's: "l:<target>"
_CHUNK = 1 << 20
_HEX = frozenset("0123456789abcdef")


def local_signature(path: str) -> Signature:
    if os.path.islink(path):
        return "l:" + os.readlink(path)
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return "f:" + digest.hexdigest()


# each file as sha256sum -z prints it ("<hex>  ./name\0", names unescaped), each link as "link  ./name\0target\0"
_MANIFEST = (r"{ find . -type f -exec sha256sum -z -- {} + ; "
             r"find . -type l -printf 'link  %p\0%l\0' ; }")


def remote_manifest(conn: Connection, dest: str) -> dict[str, Signature]:
    """What the remote copy holds (created empty when missing): each file's content."""
    quoted = remote_path(dest)
    proc = conn.run(f"mkdir -p {quoted} && cd {quoted} && {_MANIFEST}")
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        raise RemoteError(f"cannot list {dest} on {conn.dest}: {err[-300:]}",
                          hint="check remote.workdir (a folder you may write on the cluster)")
    return parse_manifest(proc.stdout.decode("utf-8", "surrogateescape"))


def parse_manifest(text: str) -> dict[str, Signature]:
    """The remote listing (:data:`_MANIFEST`) as {name: signature}; what is not a record is skipped (that
    file is then sent again)."""
    parts = text.split("\0")
    found: dict[str, Signature] = {}
    i = 0
    while i < len(parts):
        field = parts[i]
        if field.startswith("link  ./") and i + 1 < len(parts):
            found[field[len("link  ./"):]] = "l:" + parts[i + 1]
            i += 2
            continue
        if len(field) > 68 and set(field[:64]) <= _HEX and field[64] == " " and field[66:68] == "./":
            found[field[68:]] = "f:" + field[:64]
        i += 1
    return found


def plan(tree: CodeTree, there: Mapping[str, Signature]) -> tuple[list[str], list[str]]:
    """(files to send, files to remove there) (pure but for the local lstat)."""
    send = [f for f in tree.files if there.get(f) != local_signature(str(tree.root / f))]
    listed = set(tree.files)
    return send, sorted(f for f in there if f not in listed)


def ship(conn: Connection, tree: CodeTree, workdir: str, environ: Mapping[str, str]) -> Shipped:
    dest = dest_for(workdir, tree)
    send, remove = plan(tree, remote_manifest(conn, dest))
    if remove:
        _remove(conn, dest, remove)
    if not send:
        return Shipped(dest, 0, len(remove), "none")
    rsync = environ.get(SHIP_ENV_VAR) != "tar" and shutil.which("rsync")
    if rsync and _rsync(conn, tree, dest, send, rsync):
        return Shipped(dest, len(send), len(remove), "rsync")
    _tar(conn, tree, dest, send)
    return Shipped(dest, len(send), len(remove), "tar")


def _remove(conn: Connection, dest: str, names: list[str]) -> None:
    listing = b"".join(name.encode("utf-8", "surrogateescape") + b"\0" for name in names)
    proc = conn.run(f"cd {remote_path(dest)} && xargs -0 rm -f --", stdin=listing)
    if proc.returncode != 0:
        log.warning("could not remove %d old files in %s: %s", len(names), dest, proc.stderr.decode(errors="replace"))


def _rsync(conn: Connection, tree: CodeTree, dest: str, names: list[str], rsync: str) -> bool:
    """True when rsync sent the files; False when it cannot run there (then the tar stream does)."""
    shell = shlex.join([*conn.ssh(), *conn.options(), "-o", "ControlMaster=no"])
    listing = b"".join(name.encode("utf-8", "surrogateescape") + b"\0" for name in names)
    # -I: never skip a file for its size and time (it is sent because its content differs)
    argv = [rsync, "-a", "-I", "--from0", "--files-from=-", "-e", shell, f"{tree.root}/", f"{conn.remote.host}:{dest}/"]
    proc = subprocess.run(argv, input=listing, capture_output=True, check=False)
    if proc.returncode == 0:
        return True
    log.info("rsync failed (%d): %s; sending a tar stream", proc.returncode, proc.stderr.decode(errors="replace"))
    return False


def _tar(conn: Connection, tree: CodeTree, dest: str, names: list[str]) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            tar.add(str(tree.root / name), arcname=name, recursive=False)
    proc = conn.run(f"cd {remote_path(dest)} && tar -xf -", stdin=buffer.getvalue())
    if proc.returncode != 0:
        raise RemoteError(f"sending the code to {conn.dest}:{dest} failed: "
                          f"{proc.stderr.decode(errors='replace').strip()[-300:]}",
                          hint="check the space and permissions of remote.workdir on the cluster")
