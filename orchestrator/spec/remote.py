"""cluster.yaml's ``remote:`` block: submit from a laptop to this cluster over SSH (docs/remote.md).

Pure: the model only. The transport (``ssh``, the control socket, shipping the code) is
:mod:`orchestrator.remote`.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

# what may reach ssh's command line as a host, user or jump host: no option ("-oProxyCommand=..."),
# no space, no shell metacharacter
_SSH_WORD = re.compile(r"[A-Za-z0-9_.%@:,\[\]+-]+")


def _ssh_word(value: str, what: str) -> str:
    if not _SSH_WORD.fullmatch(value) or value.startswith("-"):
        raise ValueError(f"{what} {value!r} may only use letters, digits and '_.%@:,[]+-', and may not start "
                         "with '-'")
    return value


class Remote(BaseModel):
    """Where the cluster's login node is and how to reach it; every key but ``host`` is optional."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field(description="the login node (a name from your ssh config, or an address)")
    user: str | None = Field(default=None, description="the user there (default: ssh's, from its config)")
    port: int | None = Field(default=None, ge=1, le=65535, description="the SSH port (default: ssh's)")
    identity_file: str | None = Field(default=None, description="the private key to use (ssh -i)")
    proxy_jump: str | None = Field(default=None, description="jump host(s), as ssh -J takes them")
    ssh_config: str | None = Field(default=None, description="an OpenSSH client config to use instead of "
                                   "~/.ssh/config (ssh -F)")
    orch: str = Field(default="orch", description="orch on the cluster: a path, or a name on the remote PATH")
    workdir: str = Field(default="orch-remote", description="the folder on the cluster where the code is "
                         "shipped to (relative: to the remote home)")

    _v_host = field_validator("host")(lambda v: _ssh_word(v, "remote.host"))
    _v_user = field_validator("user")(lambda v: None if v is None else _ssh_word(v, "remote.user"))
    _v_jump = field_validator("proxy_jump")(lambda v: None if v is None else _ssh_word(v, "remote.proxy_jump"))

    @field_validator("orch", "workdir", "identity_file", "ssh_config")
    @classmethod
    def _v_path(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or "\n" in value or "\0" in value):
            raise ValueError("must be a non-empty path on one line")
        return value
