"""A real OpenSSH server for the remote tests (plain module: ``from sshd import start_sshd``).

``/usr/sbin/sshd -f CONFIG -D -e`` as whoever runs the tests (root, or the test cluster's unprivileged user: an
unprivileged sshd lets only its own user in) on ``127.0.0.1:<free port>`` with a throwaway host key,
``AuthorizedKeysFile`` holding a throwaway user key, its own ``PidFile`` and ``SetEnv`` lines (e.g.
``SLURM_CONF`` for the Slurm tests). The client side is an ssh config file (``Host orchtest``) with
the user key and a known_hosts file holding the host key: the ssh client reads ``~/.ssh/config`` from
the passwd home, not ``$HOME``, so tests pass the file (cluster.yaml's ``remote.ssh_config``).

Debian's ``openssh-server`` is installed on demand like the Slurm packages (tests/slurm/cluster.sh):
as root with apt-get, without starting Debian's own ssh service (``policy-rc.d`` says 101);
``ORCH_SSH_NO_INSTALL=1`` never installs. When it cannot be had, :func:`sshd_or_skip` skips with the reason.
``scripts/test.sh`` installs it first, as root (``python3 tests/sshd.py install``), beside Slurm's packages: the
end-to-end pass runs as the cluster's unprivileged user, who cannot install it, beside the first pass that would.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"
HOST = "orchtest"  # the Host of the client config


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def install() -> str | None:
    """None when sshd is there (installed now if needed), else why not."""
    if os.path.exists(SSHD) and shutil.which("ssh-keygen") and shutil.which("ssh"):
        return None
    if os.environ.get("ORCH_SSH_NO_INSTALL") == "1" or os.geteuid() != 0 or not shutil.which("apt-get"):
        return ("no OpenSSH server: install it with 'apt-get install -y --no-install-recommends openssh-server "
                "openssh-client' (as root; the tests install it themselves when run as root with apt-get)")
    policy = Path("/usr/sbin/policy-rc.d")
    made = not policy.exists()
    if made:  # never start Debian's ssh service
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
    try:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for argv in (["apt-get", "-o", "DPkg::Lock::Timeout=300", "update", "-qq"],
                     ["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "-qq", "--no-install-recommends",
                      "openssh-server", "openssh-client"]):
            proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
            if proc.returncode != 0:
                return f"{' '.join(argv)} failed: {proc.stderr.strip()[-300:]}"
    finally:
        if made:
            policy.unlink()
    return None if os.path.exists(SSHD) else "openssh-server installed no /usr/sbin/sshd"


@dataclass
class Sshd:
    folder: Path
    port: int
    ssh_config: Path  # the client's config: Host orchtest
    known_hosts: Path
    identity: Path
    proc: subprocess.Popen[bytes]

    def children(self) -> list[int]:
        """The pids of sshd's session processes (one per connection): killing one drops that connection."""
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True, check=False)
        return [int(pid) for pid in out.stdout.split()]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "orch-test", "-f", str(path)], check=True)


def write_client_config(sshd_folder: Path, port: int, *, identity: Path, known_hosts: Path, name: str) -> Path:
    path = sshd_folder / name
    path.write_text(f"Host {HOST}\n  HostName 127.0.0.1\n  Port {port}\n  User {_user()}\n"
                    f"  IdentityFile {identity}\n  IdentitiesOnly yes\n  UserKnownHostsFile {known_hosts}\n"
                    "  GlobalKnownHostsFile /dev/null\n  LogLevel ERROR\n")
    return path


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


@contextmanager
def start_sshd(folder: Path, setenv: Mapping[str, str] | None = None) -> Iterator[Sshd]:
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    for name in ("host_key", "user_key"):
        _keygen(folder / name)
    (folder / "authorized_keys").write_text((folder / "user_key.pub").read_text())
    port = free_port()
    host_pub = (folder / "host_key.pub").read_text().split()
    known = folder / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    env_line = " ".join(f"{k}={v}" for k, v in (setenv or {}).items())
    config = folder / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\nPidFile {folder / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n"
        "MaxSessions 50\nMaxStartups 50\nLogLevel ERROR\n" + (f"SetEnv {env_line}\n" if env_line else ""))
    if os.geteuid() == 0:  # as root, sshd separates privileges into this folder; as a user it runs as is
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    log = open(folder / "sshd.log", "wb")  # noqa: SIM115  # closed below
    proc = subprocess.Popen([SSHD, "-f", str(config), "-D", "-e"], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"sshd did not start: {(folder / 'sshd.log').read_text()[-500:]}") from None
                time.sleep(0.05)
        client = write_client_config(folder, port, identity=folder / "user_key", known_hosts=known,
                                     name="ssh_config")
        yield Sshd(folder, port, client, known, folder / "user_key", proc)
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@contextmanager
def sshd_or_skip(folder: Path, setenv: Mapping[str, str] | None = None) -> Iterator[Sshd]:
    import pytest  # only here: ``python3 tests/sshd.py install`` runs before the test environment exists

    why = install()
    if why is not None:
        pytest.skip(why)
    with start_sshd(folder, setenv) as server:
        yield server


def short_socket_dir() -> Path:
    """A control socket folder with a short path (a Unix socket path has at most 107 bytes)."""
    return Path(tempfile.mkdtemp(prefix="osh", dir="/tmp"))


def orch_wrapper(path: Path, orch: str, env: Mapping[str, str]) -> Path:
    """An executable that runs ``orch`` with ``env`` set: the cluster's orch as remote.orch names it."""
    exports = "".join(f"export {k}='{v}'\n" for k, v in env.items())
    path.write_text(f"#!/bin/sh\n{exports}exec '{orch}' \"$@\"\n")
    path.chmod(0o755)
    return path


if __name__ == "__main__":  # python3 tests/sshd.py install: what scripts/test.sh runs as root
    import sys

    if sys.argv[1:] != ["install"]:
        sys.exit("usage: python3 tests/sshd.py install")
    reason = install()
    print(f"orch test: OpenSSH for the remote tests: {reason or 'ready'}")
