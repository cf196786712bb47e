"""A local HTTP mirror of MNIST's files for the download tests (tests/local/test_download.py,
tests/docs/test_demo.py): python's http.server on 127.0.0.1, never the internet.

``MNIST_DIR``: where the real files are (``$ORCH_DATA_DIR``, else ``../shared/data`` beside the
checkout); tests that serve them skip with ``NO_MNIST`` as the reason when ``HAVE_MNIST`` is false.
"""

from __future__ import annotations

import functools
import http.server
import os
import socket
import threading
from pathlib import Path

from support import ROOT

MNIST_DIR = Path(os.environ.get("ORCH_DATA_DIR") or ROOT.parent / "shared" / "data")
MNIST_NAMES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
               "t10k-labels-idx1-ubyte.gz")
HAVE_MNIST = all((MNIST_DIR / "MNIST" / "raw" / name).is_file() for name in MNIST_NAMES)
NO_MNIST = f"MNIST files not found under {MNIST_DIR}/MNIST/raw (set ORCH_DATA_DIR to the folder holding MNIST/)"


class Mirror:
    """A local HTTP mirror of a folder; ``requests`` counts the files asked for."""

    def __init__(self, folder: Path) -> None:
        self.requests: list[str] = []
        mirror = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                mirror.requests.append(self.path)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler,
                                                                                          directory=str(folder)))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port_url() -> str:
    """A URL nothing listens on (a refused connection: the machine is offline for the download)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"
