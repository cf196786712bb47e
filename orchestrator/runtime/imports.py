"""The task's heavy imports, timed on the start-up clock (:data:`orchestrator.records.startup.CLOCK`).

:func:`timed_import_torch` is ``import torch`` recorded as the ``import_torch`` phase;
:func:`prefetch_dynamo` imports ``torch._dynamo`` (about 900 modules, which DDP's constructor
imports) in a daemon thread while the main thread waits at the rendezvous.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from orchestrator.records.startup import CLOCK

log = logging.getLogger(__name__)


def timed_import_torch() -> None:
    """``import torch``, timed as ``import_torch`` (call it before anything else imports torch)."""
    import sys

    if "torch" in sys.modules:
        return
    began = time.perf_counter()
    import torch  # noqa: F401

    CLOCK.record("import_torch", time.perf_counter() - began)


def prefetch_dynamo() -> threading.Thread | None:
    """Import ``torch._dynamo`` in a daemon thread; the caller joins it right after the rendezvous.

    DDP's constructor reads ``torch._dynamo.utils`` and its forward is wrapped by
    ``torch._disable_dynamo``: both import ``torch._dynamo`` (seconds on a small node). The import
    runs while this rank waits at the rendezvous (``init_process_group`` spends that time in C++
    without the GIL). The caller joins the thread before it imports anything else (two threads
    importing at once can trip the import system's deadlock detection). An error in the thread is
    only logged: a failed import leaves no module behind, and DDP then imports it itself, as before.
    ``ORCH_PREFETCH_DYNAMO=0`` turns it off (the start-up benchmark compares both).
    """
    import sys

    if "torch._dynamo" in sys.modules or os.environ.get("ORCH_PREFETCH_DYNAMO") == "0":
        return None

    def target() -> None:
        try:
            import torch._dynamo  # noqa: F401
        except BaseException as exc:
            log.debug("prefetching torch._dynamo failed: %r", exc)

    thread = threading.Thread(target=target, name="orch-prefetch-dynamo", daemon=True)
    thread.start()
    return thread


def join(thread: threading.Thread | None) -> None:
    if thread is not None:
        thread.join()
