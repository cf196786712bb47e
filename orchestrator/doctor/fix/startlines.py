"""Each node's start line in a libcst module, as libcst's ``PositionProvider`` gives it (``.start.line``), at a
fifth of its cost: one code generation that counts lines only, where the provider builds a line-and-column
range for every node. The fixers need the start line alone, and ``--fix`` reads the module again after each
fix.

The same hooks as the provider's own state (libcst's ``CodegenState``): a node's start is the line when its
code generation begins, or, where the node records its syntactic position (the leading whitespace and
comments it owns left out), the line there, or that of the child it names (``start_node``).
tests/doctor/fix/test_startlines.py checks it against the provider, node for node."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.internal import CodegenState

_NEWLINE = re.compile(r"\r\n?|\n")  # the provider's: \r\n, \r and \n each end a line


@dataclass(frozen=False)
class _LineState(CodegenState):
    line: int = 1  # one-based
    starts: dict[cst.CSTNode, int] = field(default_factory=dict)
    _open: list[int] = field(default_factory=list)  # the start line of each node whose code is being written

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            self.line += len(_NEWLINE.findall(value))

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._open.append(self.line)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._open.pop()
        self.starts.setdefault(node, start)  # a syntactic position recorded inside comes first

    @contextmanager
    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> Iterator[None]:
        start = self.line
        try:
            yield
        finally:
            self.starts[node] = self.starts[start_node] if start_node is not None else start


def start_lines(module: cst.Module) -> dict[cst.CSTNode, int]:
    """Every node of ``module`` (each held once: a module just parsed) and the line it starts on."""
    state = _LineState(default_indent=module.default_indent, default_newline=module.default_newline)
    module._codegen(state)
    return state.starts
