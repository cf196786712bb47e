"""The Jinja2 classes behind ``render.environment`` (Jinja2 is imported when they are first built).

``context_class``: ``{{ super() }}`` counts as quoted text. ``environment_class``: every template
is checked for quoting filters inside quotes (``shellctx``) as it compiles, and only then: a
template taken from the bytecode cache compiled, and so passed, before (the cache's folder name
carries ``CHECK_VERSION``), which keeps the check out of a dry run's time.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from orchestrator.errors import ConfigError

if TYPE_CHECKING:
    import jinja2

# Part of the template cache's folder name: a stricter check (a new shellctx) recompiles, and so checks,
# every template once.
CHECK_VERSION = 1


@functools.lru_cache(maxsize=1)
def context_class(shell: type[str]) -> type:
    """A Jinja2 context whose ``{{ super() }}`` counts as quoted text (``shell``): a parent block's output
    is made of the parent's own text and values that already went through a quoting filter."""
    import jinja2.runtime

    class QuotedBlock(jinja2.runtime.BlockReference):
        @property
        def super(self) -> Any:
            parent = super().super
            if isinstance(parent, jinja2.runtime.BlockReference):
                return QuotedBlock(parent.name, parent._context, parent._stack, parent._depth)
            return parent

        def __call__(self) -> Any:
            return shell(super().__call__())

    class QuotingContext(jinja2.runtime.Context):
        def super(self, name: str, current: Any) -> Any:
            block = super().super(name, current)
            if isinstance(block, jinja2.runtime.BlockReference):
                return QuotedBlock(block.name, self, block._stack, block._depth)
            return block

    return QuotingContext


def check_quoting(tokens: Any, where: str, int_names: frozenset[str]) -> None:
    """A ConfigError naming the file, the line and the fix for the first unsafe ``{{ ... }}``."""
    from orchestrator.slurm import shellctx  # only when a template compiles (a cache miss)

    unsafe = shellctx.find_unsafe(tokens, int_names)
    if unsafe is None:
        return
    opened = f" (opened on line {unsafe.opened})" if unsafe.opened != unsafe.line else ""
    raise ConfigError(
        f"template {where}, line {unsafe.line}: {{{{ {unsafe.expression[:80]} }}}} stands inside "
        f"{unsafe.description}{opened}, where the quotes a filter adds are plain text: a value holding "
        "$(...) would run",
        hint=unsafe.fix)


@functools.lru_cache(maxsize=4)
def environment_class(int_names: frozenset[str]) -> type[jinja2.Environment]:
    """A Jinja2 Environment that checks each template's quoting contexts before compiling it."""
    import jinja2

    class CheckingEnvironment(jinja2.Environment):
        def _parse(self, source: str, name: str | None, filename: str | None) -> Any:
            check_quoting(self.lex(source, name, filename), filename or name or "<string>", int_names)
            return super()._parse(source, name, filename)

    return CheckingEnvironment
