"""The one guarded reader of user Python source: :func:`parse_source` is ``ast.parse`` for orch's own
checks of a script or job file (the doctor, ``has_spec``, the sys.path reader), whose every way of giving
up is one :class:`UnreadableSource` naming the file (pure; never imports or runs the file).

CPython's parser gives up on sources that nest too deeply in several ways: ``RecursionError`` (a
100,000-term sum), ``MemoryError`` (50,000 unary minus signs), ``SyntaxError("too many nested
parentheses")`` (reported as the syntax error it is to Python); plus ``ValueError`` for null bytes.
``limit`` tells a parser limit (RecursionError, MemoryError: Python might still run the file, or fail
the same way: orch warns and goes on) from a source Python refuses (a syntax error, null bytes).

A source valid only from Python 3.12 on, whose f-strings nest strings of their own quote
(``f"{cfg["lr"]}"``, PEP 701), is read on an older Python too: on an f-string syntax error :func:`requoted` gives
each such inner string the other quote (only quote characters change: every line and column stays) and that is
parsed; the script runs on the cluster's Python, which may well be 3.12, so orch must not call it invalid.
"""

from __future__ import annotations

import ast
import sys


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
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        first = exc
    newer = requoted(source) if isinstance(first, SyntaxError) and sys.version_info < (3, 12) and (
        first.msg or "").startswith("f-string") else None
    if newer is None:
        raise _unreadable(filename, first)
    try:
        return ast.parse(newer, filename=filename)
    except SyntaxError:
        raise _unreadable(filename, first) from None  # not only PEP 701's quotes: the first error is the one to say
    except (ValueError, RecursionError, MemoryError) as exc:
        raise _unreadable(filename, exc) from None


def _unreadable(filename: str, exc: Exception) -> UnreadableSource:
    if isinstance(exc, SyntaxError):
        # "too many nested parentheses" too: Python refuses to run the file as it refuses a syntax error
        return UnreadableSource(filename, f"syntax error: {exc.msg}", limit=False, line=exc.lineno, offset=exc.offset)
    if isinstance(exc, ValueError):  # source code string cannot contain null bytes
        return UnreadableSource(filename, f"cannot parse: {exc}", limit=False)
    if isinstance(exc, RecursionError):
        return UnreadableSource(filename, "too deeply nested to parse (Python's parser ran out of recursion)",
                                limit=True)
    return UnreadableSource(filename, "too large or too deeply nested to parse (out of memory)", limit=True)


def requoted(source: str | bytes) -> str | None:
    """``source`` with each string nested in an f-string's replacement field under a quote of that f-string's own
    (valid from Python 3.12, PEP 701: ``f"{d["k"]}"``) given the other quote (``f"{d['k']}"``), as older Pythons
    need; only quote characters change, so every line and column stays. None when nothing needed the change, or it
    cannot be made: a string that holds the other quote, f-strings around it that take both, a backslash or a comment
    in a replacement field (also new in 3.12), a source that does not lex. A linear scan of its own (libcst, which
    reads PEP 701, hangs or crashes on hostile nesting that Python's parser refuses cleanly)."""
    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    lexer = _Lexer(text)
    try:
        lexer.code(0, (), field=False)
    except (_CannotRequote, RecursionError):
        return None
    if not lexer.swaps:
        return None
    chars = list(text)
    for at in lexer.swaps:
        chars[at] = "'" if chars[at] == '"' else '"'
    return "".join(chars)


class _CannotRequote(Exception):
    pass


_PREFIX_LETTERS = frozenset("rbuf")
_MAX_NESTING = 32  # f-strings and replacement fields within each other: deeper than any script needs, far below
# Python's recursion limit


class _Lexer:
    """Python's strings and f-strings as 3.12 lexes them, enough to find the quotes to swap (``swaps``)."""

    def __init__(self, text: str) -> None:
        self.text, self.swaps, self.nesting = text, list[int](), 0

    def code(self, i: int, around: tuple[str, ...], *, field: bool) -> int:
        """Code from ``i`` to the end (``field``: to the ``}`` closing an f-string's replacement field, whose index
        past it is returned); ``around``: the closing quotes of the f-strings it is inside."""
        t, n, depth = self.text, len(self.text), 0
        self.nesting += field
        if self.nesting > _MAX_NESTING:
            raise _CannotRequote
        while i < n:
            c = t[i]
            if c == "#":
                if field:
                    raise _CannotRequote
                end = t.find("\n", i)
                i = n if end < 0 else end
            elif c in "'\"":
                i = self.string(i, i, around)
            elif c.isalpha() or c == "_":
                j = i
                while j < n and (t[j].isalnum() or t[j] == "_"):
                    j += 1
                is_prefix = j < n and t[j] in "'\"" and j - i <= 2 and set(t[i:j].lower()) <= _PREFIX_LETTERS
                i = self.string(i, j, around) if is_prefix else j
            elif c == "\\":
                if field:
                    raise _CannotRequote
                i += 2
            elif field and c in "([{":
                depth, i = depth + 1, i + 1
            elif field and c in ")]}":
                if depth == 0:
                    if c != "}":
                        raise _CannotRequote
                    self.nesting -= 1
                    return i + 1
                depth, i = depth - 1, i + 1
            elif field and depth == 0 and c == ":":
                end = self.literal(i + 1, around, "", spec=True)
                self.nesting -= 1
                return end
            else:
                i += 1
        if field:
            raise _CannotRequote
        return n

    def string(self, start: int, quote_at: int, around: tuple[str, ...]) -> int:
        """The string whose prefix starts at ``start`` and quote at ``quote_at``; the index past it."""
        t = self.text
        prefix, q = t[start:quote_at].lower(), t[quote_at]
        close = q * 3 if t.startswith(q * 3, quote_at) else q
        body_at = quote_at + len(close)
        swap = any(_clashes(close, outer) for outer in around)
        if swap:
            close_as = ("'" if q == '"' else '"') * len(close)
            if any(_clashes(close_as, outer) for outer in around):
                raise _CannotRequote
        else:
            close_as = close
        if "f" in prefix:
            self.nesting += 1
            if self.nesting > _MAX_NESTING:
                raise _CannotRequote
            end = self.literal(body_at, (*around, close_as), close)
            self.nesting -= 1
        else:
            end = self.plain(body_at, close)
            if swap and close_as[0] in t[body_at:end - len(close)]:
                raise _CannotRequote
        if swap:
            self.swaps += [*range(quote_at, body_at), *range(end - len(close), end)]
        return end

    def plain(self, i: int, close: str) -> int:
        """A string's body from ``i``; the index past its closing quote."""
        t, n = self.text, len(self.text)
        while i < n:
            if t.startswith(close, i):
                return i + len(close)
            if t[i] == "\\":
                i += 2
                continue
            if t[i] == "\n" and len(close) == 1:
                break
            i += 1
        raise _CannotRequote

    def literal(self, i: int, around: tuple[str, ...], close: str, *, spec: bool = False) -> int:
        """An f-string's literal text from ``i`` (``spec``: a replacement field's format spec, to the field's closing
        ``}``); the index past its closing quote (or brace). ``around[-1]`` is the quote it will close with."""
        t, n = self.text, len(self.text)
        while i < n:
            c = t[i]
            if spec and c == "}":
                return i + 1
            if not spec and t.startswith(close, i):
                return i + len(close)
            if c == "{" and not (not spec and t.startswith("{{", i)):
                i = self.code(i + 1, around, field=True)
                continue
            if not spec and (t.startswith("{{", i) or t.startswith("}}", i)):
                i += 2
                continue
            if c == "}" or (c == "\n" and len(close) == 1 and not spec):
                raise _CannotRequote
            if around and c == around[-1][0] and around[-1] != close and not spec:
                raise _CannotRequote  # the f-string's own text holds the quote it is to be given
            i += 2 if c == "\\" and t[i + 1:i + 2] not in ("{", "}") else 1  # \{ is a backslash, then a field
        raise _CannotRequote


def _clashes(inner: str, around: str) -> bool:
    """Whether a string closed by ``inner`` ends, for an older Python's tokenizer, the f-string closed by
    ``around``: the same quote character, unless the f-string's is a triple quote and the string's a single one."""
    return inner[0] == around[0] and (len(around) == 1 or len(inner) == 3)


QUOTE_CHARS = 100  # how much of a quoted source line a message shows


def quote_line(name: str, lines: list[str], line: int) -> str:
    """``train.py:46: mp.spawn(train, nprocs=args.gpus)``: where (``name``: the file's name, ``line``: 1-based)
    and that line's code without its comment, shortened; just ``train.py:46`` past the end or on a blank line."""
    code = lines[line - 1].split("#", 1)[0].strip() if 0 < line <= len(lines) else ""
    return f"{name}:{line}: {code[:QUOTE_CHARS]}" if code else f"{name}:{line}"
