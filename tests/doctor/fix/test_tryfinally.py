"""The ``finally`` that destroys the process group: what follows the init wrapped (or a ``try`` there given
its ``finally``), and each structure it refuses, with the reason."""

from __future__ import annotations

import libcst as cst
import pytest

from orchestrator.doctor.fix.cst import Source
from orchestrator.doctor.fix.tryfinally import NoFix, wrap


def _wrapped(text: str, function: str | None = "main") -> str:
    src = Source(cst.parse_module(text))
    scope = next((f for f in src.nodes(cst.FunctionDef) if isinstance(f, cst.FunctionDef)
                  and f.name.value == function), None)
    fixed = wrap(src, scope, "dist.destroy_process_group()").code
    compile(fixed, "train.py", "exec")
    return fixed


def test_a_destroy_then_return_at_the_end_moves_into_the_finally_and_the_return_stays_after_it() -> None:
    text = ("def main():\n    dist.init_process_group('gloo')\n    train()\n    dist.destroy_process_group()\n"
            "    return 0\n")
    assert _wrapped(text) == ("def main():\n    dist.init_process_group('gloo')\n    try:\n        train()\n"
                              "    finally:\n        dist.destroy_process_group()\n    return 0\n")


def test_a_cleanup_helper_at_the_end_is_what_the_finally_calls() -> None:
    text = ("def cleanup():\n    dist.destroy_process_group()\n\n\ndef main():\n    dist.init_process_group('gloo')\n"
            "    train()\n    cleanup()\n")
    assert _wrapped(text).endswith("    try:\n        train()\n    finally:\n        cleanup()\n")


def test_a_finally_there_gets_the_destroy_appended() -> None:
    text = ("def main():\n    dist.init_process_group('gloo')\n    try:\n        train()\n    finally:\n"
            "        log.close()\n")
    assert _wrapped(text).endswith("    finally:\n        log.close()\n        dist.destroy_process_group()\n")


@pytest.mark.parametrize(("text", "function", "why"), [
    ("def main():\n    if ddp:\n        dist.init_process_group('gloo')\n    train()\n", "main",
     "init_process_group is under a condition or in a try in main()"),
    ("def main():\n    setup()\n    train()\n", "main", "init_process_group is not called in main()"),
    ("def main():\n    dist.init_process_group('gloo')\n", "main", "nothing follows init_process_group in main()"),
    ("def main():\n    dist.init_process_group('gloo')\n    for b in data:\n        yield b\n", "main",
     "main() is a generator"),
    ("dist.init_process_group('gloo')\ndef train():\n    pass\ntrain()\n", None,
     "a function or class is defined after the module-level init_process_group"),
    ("def main():\n    dist.init_process_group('gloo')\n    if bad:\n        dist.destroy_process_group()\n"
     "    train()\n", "main", "main() destroys the group elsewhere too"),
    ("def main():\n    dist.init_process_group('gloo')\n    try:\n        train()\n    finally:\n"
     "        dist.destroy_process_group()\n", "main", "its finally destroys the group already"),
    ("def main():\n    dist.init_process_group('gloo')\n    try:\n        train()\n    except Exception:\n"
     "        dist.destroy_process_group()\n        raise\n", "main", "destroys the group in its body or handlers"),
], ids=["conditional-init", "no-init", "nothing-after", "generator", "def-after", "destroy-elsewhere",
        "finally-destroys", "handler-destroys"])
def test_what_cannot_be_wrapped_safely_is_refused_with_the_reason(text: str, function: str | None, why: str) -> None:
    with pytest.raises(NoFix, match=why.replace("(", r"\(").replace(")", r"\)")):
        _wrapped(text, function)
