"""The shell quoting context of every ``{{ ... }}`` in a template (pure; a small bash lexer).

The quoting filters (``q``, ``sq``, ``verbatim``) make a value safe as a word of its own: their
output carries its own quotes. Inside quotes that the template itself opened, those quotes are
text, not quotes: ``"{{ x | q }}"`` with a value ``$(id)`` renders ``"'$(id)'"`` and bash runs
``id``. So before a template renders, its literal text is lexed as bash and each expression's
context is looked up: only a plain command (also inside ``$(...)`` and ``( )``, where bash parses
a fresh command), a ``#`` comment (``#SBATCH`` lines) and the body of a here-document with a
quoted delimiter (``<<'EOF'``: no expansion) may hold a quoted value. Single and double quotes,
``$'...'``, backquotes, ``${...}``, arithmetic and an unquoted here-document refuse it.

Output that cannot hold a quote or ``$`` passes anywhere: ``| envname`` and plain integers.
Jinja comments and ``{% ... %}`` tags print nothing and are skipped; both branches of an ``{% if %}``
are read as one text, in file order (a template that opens a quote in one branch and closes it in
the other reads as unbalanced: keep each branch balanced). A ``case`` pattern's ``)`` inside
``$(...)`` reads as its end (write ``(pattern)`` there); the top level has no such limit.

``find_unsafe(tokens, safe_names)`` takes Jinja's raw tokens (``Environment.lex``) and returns the
first problem, or None; ``render`` turns it into the ConfigError and caches the verdict per source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# Contexts where a filter's quoted output is one word and nothing in it runs.
SAFE = frozenset({"command", "subst", "subshell", "comment", "heredoc_quoted"})
COMMANDS = frozenset({"command", "subst", "subshell"})  # where bash parses a command
_EXPANDING = (("$((", "arith"), ("$(", "subst"), ("${", "param"), ("`", "backtick"))
# What opens a nested context inside each context, longest first.
OPENERS: dict[str, tuple[tuple[str, str], ...]] = {
    "command": (("$((", "arith"), ("$(", "subst"), ("${", "param"), ("$'", "ansi"), ("((", "arith"),
                ("'", "single"), ('"', "double"), ("`", "backtick"), ("(", "subshell")),
    "double": _EXPANDING,
    "heredoc": _EXPANDING,
    "param": (*_EXPANDING, ("'", "single"), ('"', "double")),
    "arith": _EXPANDING,
}
OPENERS["subst"] = OPENERS["subshell"] = OPENERS["command"]
CLOSERS = {"single": "'", "ansi": "'", "double": '"', "backtick": "`", "param": "}", "subst": ")",
           "subshell": ")"}
ESCAPING = frozenset({"command", "subst", "subshell", "double", "ansi", "backtick", "param", "heredoc", "arith"})
WORD_BREAKS = frozenset(" \t\n;&|()<>")
_COMMAND_CHARS = "\\\\'\"`$()#<\n"
# The characters that may change each context; runs of others are skipped in one step.
INTERESTING = {kind: re.compile(f"[{chars}]") for kind, chars in {
    "command": _COMMAND_CHARS, "subst": _COMMAND_CHARS, "subshell": _COMMAND_CHARS, "comment": "\n",
    "single": "'", "ansi": "\\\\'", "double": "\\\\\"`$", "backtick": "\\\\`", "param": "\\\\}$`'\"",
    "arith": "\\\\$`()\n", "heredoc": "\\\\$`\n", "heredoc_quoted": "\n"}.items()}
DESCRIPTIONS = {
    "single": "single quotes", "ansi": "$'...' quotes", "double": "double quotes", "backtick": "backquotes",
    "param": "a ${...} expansion", "arith": "an arithmetic expression", "heredoc":
        "a here-document whose delimiter is not quoted (its text is expanded)",
}
FIXES = {
    "backtick": "use $(...) instead of backquotes, and write the value as a word of its own there",
    "heredoc": "quote the here-document's delimiter (<<'EOF') or print the value outside it",
}
DEFAULT_FIX = ("write {{ x | q }} without surrounding quotes, as a word of its own (echo \"text:\" {{ x | q }}): "
               "q and sq add the quotes themselves")


@dataclass
class Frame:
    kind: str
    line: int
    delimiter: str = ""  # here-documents
    strip_tabs: bool = False  # <<-
    depth: int = 0  # arithmetic: open parentheses


@dataclass(frozen=True)
class Unsafe:
    """An expression in a context where quoting filters do not protect it."""

    line: int
    expression: str
    context: str
    opened: int  # the line that opened the context

    @property
    def description(self) -> str:
        return DESCRIPTIONS.get(self.context, self.context)

    @property
    def fix(self) -> str:
        return FIXES.get(self.context, DEFAULT_FIX)


@dataclass
class Lexer:
    """bash's quoting contexts over text fed piece by piece (expressions in between)."""

    stack: list[Frame] = field(default_factory=lambda: [Frame("command", 1)])
    line: int = 1
    prev: str = "\n"  # the character before (an expression's output counts as a word character)
    pending: list[Frame] = field(default_factory=list)  # here-documents that start after this line
    at_line_start: bool = True

    @property
    def top(self) -> Frame:
        return self.stack[-1]

    def feed(self, text: str) -> None:
        i = 0
        while i < len(text):
            i = self._step(text, i)

    def word(self) -> None:
        """An expression's output: one word, no newline."""
        self.prev, self.at_line_start = "x", False

    def _step(self, text: str, i: int) -> int:
        frame, ch = self.top, text[i]
        if frame.kind.startswith("heredoc") and self.at_line_start:
            end = text.find("\n", i)
            line = text[i:] if end < 0 else text[i:end]
            if (line.lstrip("\t") if frame.strip_tabs else line) == frame.delimiter:
                self.stack.pop()
                # an empty line ends a here-document with an empty delimiter: its newline is read next
                return self._advance(text, i, len(line)) if line else i
        if not INTERESTING[frame.kind].match(text, i):
            found = INTERESTING[frame.kind].search(text, i)
            return self._advance(text, i, (found.start() if found else len(text)) - i)
        if ch == "\\" and frame.kind in ESCAPING:
            return self._advance(text, i, 2)
        if frame.kind == "comment":
            if ch == "\n":
                self.stack.pop()
                return self._newline(i)
            return self._advance(text, i, 1)
        closer = CLOSERS.get(frame.kind)
        if closer is not None and text.startswith(closer, i):
            self.stack.pop()
            return self._advance(text, i, len(closer))
        if frame.kind == "arith":
            return self._arith(text, i, frame)
        for opener, kind in OPENERS.get(frame.kind, ()):
            if text.startswith(opener, i):
                self.stack.append(Frame(kind, self.line, depth=2 if kind == "arith" else 0))
                return self._advance(text, i, len(opener))
        if frame.kind in COMMANDS:
            if ch == "#" and self.prev in WORD_BREAKS:
                self.stack.append(Frame("comment", self.line))
                return self._advance(text, i, 1)
            if text.startswith("<<", i) and not text.startswith("<<<", i):
                return self._heredoc(text, i)
        if ch == "\n":
            return self._newline(i)
        return self._advance(text, i, 1)

    def _advance(self, text: str, i: int, n: int) -> int:
        chunk = text[i:i + n]
        self.line += chunk.count("\n")
        if chunk:
            self.prev, self.at_line_start = chunk[-1], chunk.endswith("\n")
        return i + max(n, 1)

    def _newline(self, i: int) -> int:
        self.line += 1
        self.prev, self.at_line_start = "\n", True
        if self.pending and self.top.kind in COMMANDS:
            self.stack.extend(reversed(self.pending))
            self.pending.clear()
        return i + 1

    def _arith(self, text: str, i: int, frame: Frame) -> int:
        for opener, kind in OPENERS["arith"]:
            if text.startswith(opener, i):
                self.stack.append(Frame(kind, self.line, depth=2 if kind == "arith" else 0))
                return self._advance(text, i, len(opener))
        if text[i] == "(":
            frame.depth += 1
        elif text[i] == ")":
            frame.depth -= 1
            if frame.depth <= 0:
                self.stack.pop()
        elif text[i] == "\n":
            return self._newline(i)
        return self._advance(text, i, 1)

    def _heredoc(self, text: str, i: int) -> int:
        j = i + 2
        strip = j < len(text) and text[j] == "-"
        j += strip
        while j < len(text) and text[j] in " \t":
            j += 1
        start = j
        while j < len(text) and text[j] not in WORD_BREAKS:
            j += 1
        word = text[start:j]
        if word:
            quoted = any(c in word for c in "'\"\\")
            delimiter = "".join(c for c in word if c not in "'\"\\")
            self.pending.append(Frame("heredoc_quoted" if quoted else "heredoc", self.line, delimiter, strip))
        return self._advance(text, i, j - i)


def _expression(tokens: list[tuple[str, str]]) -> str:
    return "".join(value for _, value in tokens).strip()


def always_safe(tokens: list[tuple[str, str]], int_names: frozenset[str]) -> bool:
    """Output that holds no quote and no ``$``: ``| envname`` last, or a plain integer."""
    words = [(kind, value) for kind, value in tokens if kind != "whitespace"]
    if len(words) >= 2 and words[-2] == ("operator", "|") and words[-1] == ("name", "envname"):
        return True
    return len(words) == 1 and (words[0][0] == "integer" or (words[0][0] == "name" and words[0][1] in int_names))


def find_unsafe(tokens: Iterable[tuple[int, str, str]], int_names: frozenset[str] = frozenset()) -> Unsafe | None:
    """The first ``{{ ... }}`` that sits where its quotes would not protect it (None: all are safe)."""
    lexer = Lexer()
    expression: list[tuple[str, str]] | None = None
    skipping = False  # inside {% ... %} or {# ... #}: prints nothing
    for lineno, kind, value in tokens:
        if kind in ("block_begin", "comment_begin"):
            skipping = True
        elif kind in ("block_end", "comment_end"):
            skipping = False
        elif kind == "variable_begin":
            expression = []
            lexer.line = lineno
        elif kind == "variable_end" and expression is not None:
            frame = lexer.top
            if frame.kind not in SAFE and not always_safe(expression, int_names):
                return Unsafe(line=lexer.line, expression=_expression(expression), context=frame.kind,
                              opened=frame.line)
            lexer.word()
            expression = None
        elif expression is not None:
            expression.append((kind, value))
        elif kind == "data" and not skipping:
            lexer.line = lineno
            lexer.feed(value)
    return None
