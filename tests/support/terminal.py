"""A real terminal: tmux (orch top's terminal tests; tests/slurm/cluster.sh installs tmux)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any


class Tmux:
    """One tmux server of its own (``-L``: a private socket) running one command in a 200x50 pane."""

    SIZE = (200, 50)

    def __init__(self, name: str, command: str, env: dict[str, str], cwd: Path) -> None:
        tmux = shutil.which("tmux")
        assert tmux is not None, "tmux is not installed: tests/slurm/cluster.sh installs it (apt-get install tmux)"
        # CI runs showed the table drawn 80x24 (columns cut, "3/10" never shown). Both ways to get that are closed:
        # COLUMNS and LINES in the program's environment come before the terminal's size for
        # shutil.get_terminal_size (Textual's): COLUMNS=80 LINES=24 draw 80x24 in a 200x50 pane; and the pane's
        # own size is checked below before the program starts in it.
        env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
        width, height = self.SIZE
        # The size is the server's own setting from its start (a config file of its own, never the user's), then
        # manual once the session exists (a window without a client keeps it; window-size manual in the config
        # file crashes tmux 3.3a's server at new-session).
        conf = cwd / f".tmux-{name}.conf"
        conf.write_text(f"set -g default-size {width}x{height}\n", encoding="utf-8")
        self.argv = [tmux, "-L", f"{name}-{os.getpid()}", "-f", str(conf)]
        self.env = {**env, "TERM": "xterm-256color"}
        # a placeholder first (cat waits on the pane's terminal): the command starts only in a pane of that size
        self.run("new-session", "-d", "-x", str(width), "-y", str(height), "-s", "main", "cat", cwd=cwd)
        self.run("set-option", "-g", "window-size", "manual")
        self.run("resize-window", "-t", "main", "-x", str(width), "-y", str(height))
        size = self.run("display-message", "-p", "-t", "main", "#{pane_width}x#{pane_height}").strip()
        if size != f"{width}x{height}":
            self.close()
            version = self.run_text("-V")
            raise AssertionError(f"tmux gave the pane {size}, not {width}x{height} ({version}): the screen "
                                 "checks below would read a cut table")
        self.run("respawn-pane", "-k", "-t", "main", "-c", str(cwd), command)

    def run(self, *args: str, cwd: Path | None = None) -> str:
        proc = subprocess.run([*self.argv, *args], capture_output=True, text=True, env=self.env, cwd=cwd,
                              timeout=30, check=False)
        assert proc.returncode == 0, f"tmux {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    def run_text(self, *args: str) -> str:
        """tmux's output, whatever its exit status."""
        proc = subprocess.run([*self.argv, *args], capture_output=True, text=True, env=self.env, timeout=30,
                              check=False)
        return (proc.stdout or proc.stderr).strip()

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "main")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "main", *keys)

    def wait_for(self, test: Any, timeout: float = 60, what: str = "the expected screen") -> str:
        """The screen once ``test(screen)`` is true; an AssertionError with the last screen otherwise."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if test(screen):
                return screen
            time.sleep(0.3)
        raise AssertionError(f"{what} did not show within {timeout:.0f} s; the screen:\n{screen}")

    def close(self) -> None:
        subprocess.run([*self.argv, "kill-server"], capture_output=True, env=self.env, timeout=30, check=False)


def screen_row(screen: str, name: str) -> str:
    """The line of the table that shows the job ``name`` (empty when none does)."""
    return next((line for line in screen.splitlines() if f" {name} " in f" {line} "), "")
