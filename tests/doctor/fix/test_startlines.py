"""The start line of every node, as the fixers read it (``doctor/fix/startlines.py``), is the one libcst's
``PositionProvider`` gives, node for node: on the fixtures, a script of each kind of the corpus, and code written
to be awkward (line continuations, ``\\r\\n`` and lone ``\\r`` line ends, decorators, comments before a statement,
statements on one line)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider
from real_corpus import REAL

from orchestrator.doctor.fix.startlines import start_lines

DOCTOR = Path(__file__).resolve().parents[1]
# fixtures and corpus scripts of several shapes (where this checkout has the corpus's code): a Lightning module, a
# large script, a per-node spawner, a helper
FILES = sorted(DOCTOR.glob("fixtures/*.py"))[:40] + [REAL / path for path in (
    "timm_train/train.py", "pt_imagenet/main.py", "pt_mingpt_ddp/trainer.py", "modded_nanogpt/train_gpt.py",
    "vilt_run/vilt/modules/vilt_module.py") if (REAL / path).is_file()]

AWKWARD = (
    "# a comment first\n\n@decorator(\n    1)\ndef f(a,\n      b):  # trailing\n    x = 1; y = 2\n"
    "    return (a +\n            b)\n\n\nclass C(\n        Base):\n    '''doc\n    string'''\n"
    "    def m(self): return \\\n        self.x\n\nif x:\n    pass\nelif y:\n    z = [\n        1,\n    ]\n"
    "else:\n    # comment before\n    w = {'k':\n         f(x)}\n"
)


def _provider(module: cst.Module) -> dict[cst.CSTNode, int]:
    return {node: pos.start.line
            for node, pos in MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider).items()}


@pytest.mark.parametrize("path", FILES, ids=lambda p: "/".join(p.parts[-3:]))
def test_start_lines_are_the_position_providers_on_real_code(path: Path) -> None:
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    assert start_lines(module) == _provider(module)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_start_lines_are_the_position_providers_on_awkward_code(newline: str) -> None:
    module = cst.parse_module(AWKWARD.replace("\n", newline))
    lines = start_lines(module)
    assert lines == _provider(module)
    assert max(lines.values()) == AWKWARD.count("\n")  # the last line (`f(x)}`), whatever ends the lines
