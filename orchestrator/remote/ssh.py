"""OpenSSH as orch's transport to a cluster's login node (an edge: it runs ``ssh``).

One connection per host is opened once and reused by every call of one command and by the
commands after it: an OpenSSH control master (``ControlMaster``/``ControlPersist``) whose socket
lives in a private folder (mode 0700, owned by this user; :func:`socket_dir`). Every call passes
``BatchMode=yes`` (no password or host-key prompt ever waits for a terminal) and never weakens the
host key check: an unknown or changed host key is refused with the fix. ``ConnectTimeout`` and
``ServerAlive*`` bound a dead host; :data:`OPEN_TIMEOUT` bounds the whole opening (a host that
accepts TCP but never speaks SSH), so an unreachable host, a refused key or a missing remote orch
is an :class:`~orchestrator.errors.OrchError` with a HINT within 15 s, never a hang.

The user's ``~/.ssh/config`` is honoured (ssh reads it); ``remote.ssh_config`` replaces it (``-F``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shlex
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import OrchError
from orchestrator.spec.remote import Remote

log = logging.getLogger(__name__)

SOCKET_DIR_ENV_VAR = "ORCH_SSH_DIR"  # the control sockets' folder (default: $XDG_RUNTIME_DIR/orch-ssh)
SSH_ENV_VAR = "ORCH_SSH"  # the ssh client to run (default: ssh)
CONNECT_TIMEOUT = 8  # ssh's ConnectTimeout: TCP connect and the SSH banner
OPEN_TIMEOUT = 15.0  # the whole opening of the control master (key exchange, login)
PERSIST = "10m"  # how long an idle control master stays (ControlPersist)
MISSING_ORCH = 127  # the remote wrapper's exit code when remote.orch is not there
MISSING_MARK = "orch-remote: no orch at"


class RemoteError(OrchError):
    """The cluster could not be reached or refused us (exit 1: the input may be fine)."""

    exit_code = 1


def socket_dir(environ: Mapping[str, str]) -> Path:
    """The control sockets' folder: ``$ORCH_SSH_DIR``, else ``$XDG_RUNTIME_DIR/orch-ssh``, else
    ``/tmp/orch-ssh-<uid>``; created mode 0700 and refused unless it is a directory of this user that
    no one else may enter (a socket there is a logged-in session on the cluster)."""
    base = environ.get(SOCKET_DIR_ENV_VAR)
    runtime = environ.get("XDG_RUNTIME_DIR")
    path = Path(base) if base else Path(runtime) / "orch-ssh" if runtime and os.path.isabs(runtime) \
        else Path(tempfile.gettempdir()) / f"orch-ssh-{os.getuid()}"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(path)
    except OSError as exc:
        raise RemoteError(f"cannot create the SSH socket folder {path}: {exc.strerror}",
                          hint=f"set {SOCKET_DIR_ENV_VAR} to a private folder of yours") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise RemoteError(f"the SSH socket folder {path} is not private (a directory of yours, mode 0700)",
                          hint=f"chmod 700 {path}, or set {SOCKET_DIR_ENV_VAR} to another folder")
    return path


# ssh's message -> (what happened, the fix); the first that matches ssh's stderr wins
FAILURES: tuple[tuple[str, str, str], ...] = (
    ("REMOTE HOST IDENTIFICATION HAS CHANGED", "the host key of {dest} changed since it was recorded",
     "if the cluster's admins changed it, remove the old key (ssh-keygen -R HOST) and connect once by hand; "
     "orch never accepts a changed or unknown host key"),
    ("Host key verification failed", "the host key of {dest} is unknown or does not match known_hosts",
     "check the key and record it: connect once by hand (ssh {dest}), or add it to the known_hosts file "
     "your ssh config names; orch never accepts an unknown host key"),
    ("Permission denied", "{dest} refused the login",
     "check remote.user and remote.identity_file: the key must be in the cluster's authorized_keys and "
     "usable without a prompt (ssh-add it to your agent if it has a passphrase)"),
    ("Connection refused", "{dest} refused the connection", "check remote.host and remote.port"),
    ("Could not resolve hostname", "the host name of {dest} does not resolve",
     "check remote.host (or the HostName of your ssh config)"),
    ("timed out", "no answer from {dest}", "check remote.host, remote.port, remote.proxy_jump and your VPN"),
    ("No route to host", "no route to {dest}", "check remote.host and your network (VPN?)"),
    ("Network is unreachable", "no route to {dest}", "check remote.host and your network (VPN?)"),
    ("Connection closed", "{dest} closed the connection during login",
     "check remote.host and remote.port (is an SSH server listening there?)"),
    ("Connection reset", "{dest} closed the connection during login",
     "check remote.host and remote.port (is an SSH server listening there?)"),
)


def classify(stderr: str, dest: str) -> RemoteError:
    """One clear error from ssh's stderr (the last lines of it are kept in the message)."""
    detail = " / ".join(line.strip() for line in stderr.strip().splitlines()[-3:] if line.strip())
    for needle, what, fix in FAILURES:
        if needle in stderr:
            return RemoteError(f"{what.format(dest=dest)} (ssh: {detail})", hint=fix.format(dest=dest))
    return RemoteError(f"cannot connect to {dest}" + (f" (ssh: {detail})" if detail else ""),
                       hint=f"try 'ssh {dest}' by hand; check the remote: block of the cluster file")


def remote_path(path: str) -> str:
    """``path`` for the remote shell, quoted; a leading ``~/`` stays the remote home."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


@dataclass
class Connection:
    """The connection to one cluster's login node (opened lazily, reused through the control socket)."""

    remote: Remote
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    _open: bool = False

    @property
    def dest(self) -> str:
        user = f"{self.remote.user}@" if self.remote.user else ""
        port = f":{self.remote.port}" if self.remote.port else ""
        return f"{user}{self.remote.host}{port}"

    def options(self) -> list[str]:
        """ssh's options for every call (also rsync's ``-e``): config, login, the control socket, bounds."""
        r = self.remote
        opts: list[str] = ["-F", str(Path(r.ssh_config).expanduser())] if r.ssh_config else []
        opts += ["-o", "BatchMode=yes", "-o", f"ControlPath={self.control_path()}",
                 "-o", f"ConnectTimeout={CONNECT_TIMEOUT}", "-o", "ServerAliveInterval=5",
                 "-o", "ServerAliveCountMax=3"]
        if r.port:
            opts += ["-p", str(r.port)]
        if r.user:
            opts += ["-l", r.user]
        if r.identity_file:
            opts += ["-i", str(Path(r.identity_file).expanduser()), "-o", "IdentitiesOnly=yes"]
        if r.proxy_jump:
            opts += ["-J", r.proxy_jump]
        return opts

    def control_path(self) -> Path:
        """The control socket: one per destination and per way of reaching it (another config, key
        or jump host never reuses a connection that was checked with this one's)."""
        r = self.remote
        key = repr((r.host, r.port, r.user, r.ssh_config, r.identity_file, r.proxy_jump))
        return socket_dir(self.environ) / hashlib.sha256(key.encode()).hexdigest()[:20]

    def ssh(self) -> list[str]:
        return [self.environ.get(SSH_ENV_VAR) or "ssh"]

    def argv(self, command: str, *extra: str) -> list[str]:
        """The ssh command line that runs ``command`` (one shell line) on the login node."""
        return [*self.ssh(), *self.options(), "-o", "ControlMaster=no", *extra, self.remote.host, command]

    def master_pid(self) -> int | None:
        """The pid of the running control master (``ssh -O check``: local, no network), or None."""
        proc = subprocess.run([*self.ssh(), *self.options(), "-O", "check", self.remote.host],
                              capture_output=True, text=True, timeout=5, check=False, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            return None
        text = proc.stderr + proc.stdout  # "Master running (pid=1234)"
        digits = text.partition("pid=")[2].partition(")")[0]
        return int(digits) if digits.isdigit() else 0

    def open(self, *, check: bool = False) -> None:
        """Make sure the control master runs: start it (bounded by :data:`OPEN_TIMEOUT`) when not.
        Without ``check``, an existing socket is trusted (no extra process: a killed master's socket
        is removed by :meth:`forget_stale` after the call that found it dead)."""
        if self._open or (not check and self.control_path().exists()):
            self._open = True
            return
        sockets = socket_dir(self.environ)
        with open(sockets / ".lock", "a") as lock:  # two orch commands at once start one master
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.master_pid() is None:
                with contextlib.suppress(FileNotFoundError):  # a master that was killed leaves its socket
                    self.control_path().unlink()
                self._start_master()
        self._open = True

    def _start_master(self) -> None:
        argv = [*self.ssh(), *self.options(), "-o", "ControlMaster=yes", "-o", f"ControlPersist={PERSIST}",
                "-N", "-f", self.remote.host]
        log.debug("opening %s", shlex.join(argv))
        # stderr to a file, not a pipe: the master stays in the background with it open
        with tempfile.TemporaryFile(mode="w+") as err:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
            try:
                code = proc.wait(timeout=OPEN_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise RemoteError(f"no SSH connection to {self.dest} within {OPEN_TIMEOUT:.0f} s",
                                  hint="check remote.host, remote.port and remote.proxy_jump (is the host up? "
                                       "a VPN needed?)") from None
            except FileNotFoundError:
                raise RemoteError("the ssh client is not installed",
                                  hint="install OpenSSH's client (Debian: apt-get install openssh-client)") from None
            err.seek(0)
            text = err.read(64 * 1024)
        if code != 0:
            raise classify(text, self.dest)

    def forget_stale(self, stderr: bytes) -> bytes:
        """ssh's stderr without its note on a dead control socket; that socket is removed, so the next
        call opens a new master (ssh itself fell back to a connection of its own)."""
        if b"Control socket connect(" not in stderr:
            return stderr
        with contextlib.suppress(FileNotFoundError):
            self.control_path().unlink()
        return b"".join(line for line in stderr.splitlines(keepends=True) if b"Control socket connect(" not in line)

    def run(self, command: str, *, stdin: bytes | None = None, capture: bool = True,
            timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run one shell line there (the connection opened first); capture: stdout and stderr kept."""
        self.open()
        out = subprocess.PIPE if capture else None
        proc = subprocess.run(self.argv(command), input=stdin if stdin is not None else b"",
                              stdout=out, stderr=out, timeout=timeout, check=False)
        return proc

    def close(self) -> None:
        """Stop the control master (``ssh -O exit``); tests and ``orch`` never need it otherwise."""
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run([*self.ssh(), *self.options(), "-O", "exit", self.remote.host],
                           capture_output=True, timeout=5, check=False)
        self._open = False


def orch_command(remote: Remote, argv: Sequence[str], *, cwd: str | None = None, prelude: str = "") -> str:
    """The remote shell line that runs the cluster's orch with ``argv`` (in ``cwd``, relative to the
    remote home unless absolute), after ``prelude``; exit :data:`MISSING_ORCH` with a marker line when
    ``remote.orch`` is not there."""
    orch = remote_path(remote.orch)
    check = (f'command -v {orch} >/dev/null 2>&1 || {{ echo "{MISSING_MARK} "{orch} >&2; exit {MISSING_ORCH}; }}; ')
    where = f"cd {remote_path(cwd)} && " if cwd else ""
    return f"{check}{prelude}{where}exec {orch} {shlex.join(argv)}"


def missing_orch(code: int, stderr: str, remote: Remote, dest: str) -> RemoteError | None:
    if code == MISSING_ORCH and MISSING_MARK in stderr:
        return RemoteError(f"there is no orch at {remote.orch!r} on {dest}",
                           hint="install orch on the cluster and set remote.orch in the cluster file to its path "
                                "(e.g. ~/venv/bin/orch)")
    return None

