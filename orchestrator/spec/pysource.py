"""The one guarded reader of user Python source: :func:`parse_source` is ``ast.parse`` for orch's own
checks of a script or job file (the doctor, ``has_spec``, the sys.path reader), whose every way of giving
up is one :class:`UnreadableSource` naming the file (pure; never imports or runs the file).

CPython's parser gives up on sources that nest too deeply in several ways: ``RecursionError`` (a
100,000-term sum), ``MemoryError`` (50,000 unary minus signs), ``SyntaxError("too many nested
parentheses")`` (reported as the syntax error it is to Python); plus ``ValueError`` for null bytes.
``limit`` tells a parser limit (RecursionError, MemoryError: Python might still run the file, or fail
the same way: orch warns and goes on) from a source Python refuses (a syntax error, null bytes).
"""

from __future__ import annotations

import ast


class UnreadableSource(Exception):
    """A Python source orch cannot read fully: ``str()`` names the file and why."""

    def __init__(self, filename: str, why: str, *, limit: bool, line: int | None = None,
                 offset: int | None = None) -> None:
        super().__init__(f"{filename}: {why}")
        self.filename, self.why, self.limit, self.line, self.offset = filename, why, limit, line, offset


def parse_source(source: str | bytes, filename: str) -> ast.Module:
    """``ast.parse(source)``; UnreadableSource (``limit``: a parser limit, not a syntax error) instead of
    SyntaxError, ValueError, RecursionError or MemoryError."""
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as exc:
        # "too many nested parentheses" too: Python refuses to run the file as it refuses a syntax error
        raise UnreadableSource(filename, f"syntax error: {exc.msg}", limit=False, line=exc.lineno,
                               offset=exc.offset) from None
    except ValueError as exc:  # source code string cannot contain null bytes
        raise UnreadableSource(filename, f"cannot parse: {exc}", limit=False) from None
    except RecursionError:
        raise UnreadableSource(filename, "too deeply nested to parse (Python's parser ran out of recursion)",
                               limit=True) from None
    except MemoryError:
        raise UnreadableSource(filename, "too large or too deeply nested to parse (out of memory)",
                               limit=True) from None


QUOTE_CHARS = 100  # how much of a quoted source line a message shows


def quote_line(name: str, lines: list[str], line: int) -> str:
    """``train.py:46: mp.spawn(train, nprocs=args.gpus)``: where (``name``: the file's name, ``line``: 1-based)
    and that line's code without its comment, shortened; just ``train.py:46`` past the end or on a blank line."""
    code = lines[line - 1].split("#", 1)[0].strip() if 0 < line <= len(lines) else ""
    return f"{name}:{line}: {code[:QUOTE_CHARS]}" if code else f"{name}:{line}"
