"""The one exception type users see: a message plus a hint that names the fix."""

from __future__ import annotations


class OrchError(Exception):
    """A user-facing error. ``str()`` gives the message; ``hint`` says how to fix it.

    The CLI prints ``orch: error: <message>`` and ``HINT: <hint>`` and exits with ``exit_code``
    (2 for bad input, which is what argparse uses too). No traceback is shown.
    """

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        text = f"orch: error: {self.message}"
        if self.hint:
            text += f"\nHINT: {self.hint}"
        return text


class ConfigError(OrchError):
    """cluster.yaml, a job spec or an override is invalid."""


class DownloadError(OrchError):
    """A job's data could not be downloaded (``orch run JOB --download``): the machine is offline or the
    mirror cannot be reached. Exit code 75 (``EX_TEMPFAIL`` of sysexits.h: a temporary failure), so a
    script tells it from bad input (2) and a failed run; ``scripts/demo.sh`` then runs the smoke job."""

    exit_code = 75


class SlurmError(OrchError):
    """Slurm refused a request or is not reachable."""

    exit_code = 1


class DistEnvError(OrchError):
    """The distributed environment of a task is missing or inconsistent."""


class RendezvousTimeout(DistEnvError):
    """A rank gave up waiting for the others at the rendezvous (``launcher.init_timeout``): like a
    collective that timed out, most likely another rank's problem (exit code 3, as launch's peer failures)."""

    exit_code = 3

    def __init__(self, message: str, hint: str | None = None, *, timeout_s: int) -> None:
        super().__init__(message, hint)
        self.timeout_s = timeout_s
