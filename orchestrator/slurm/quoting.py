"""The quoting filters of orch's sbatch templates, the only way a template prints a value.

Quoting is not left to the template author. Every ``{{ value }}`` must go through one of four
filters, and a Jinja2 ``finalize`` hook (:func:`finalize`) refuses anything else (integers excepted),
so a built-in template and a user's own (``--templates DIR``) cannot forget it:

``q``        bash: :func:`shlex.quote`, for values in shell code (paths, exports, signal names).
``sq``       sbatch's own ``#SBATCH`` parser, which is not bash: double quotes with backslash
             escapes (sbatch honours ``\\`` everywhere, even inside single quotes), and the
             substrings ``packjob``/``hetjob`` broken up by a backslash, because sbatch blanks them
             out of the raw line before parsing it.
``envname``  an environment variable name (checked against ``[A-Za-z_][A-Za-z0-9_]*``).
``verbatim`` the user's own shell code (``launcher.setup`` lines), inserted as written, on purpose;
             any other value is refused.

``q`` and ``sq`` are each safe in the other's context too: whatever a value holds, it stays one
argument in both sbatch's and bash's parsers, and nothing in it runs.
"""

from __future__ import annotations

import re
import shlex

from orchestrator.errors import ConfigError

_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SBATCH_SAFE_RE = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_SBATCH_MAGIC_RE = re.compile(r"packjob|hetjob", re.IGNORECASE)
_DQUOTE_SPECIAL_RE = re.compile(r'[\\"$`]')  # special inside bash double quotes (scripts: no "!")


class Shell(str):
    """Text that a quoting filter produced: the only strings a template may output."""

    __slots__ = ()


def shell_quote(value: object) -> Shell:
    """Quote for bash; also one argument, with the same bytes, on an ``#SBATCH`` line (see below)."""
    text = _text(value)
    cuts = [m.start() + 1 for m in _SBATCH_MAGIC_RE.finditer(text)]
    if not cuts:
        return _shell_quote(text)
    # sbatch blanks packjob/hetjob out of the raw line (a value could then split into options):
    # quote the pieces apart, so the line never holds the word and both parsers join the pieces.
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    return Shell("".join(_force_quote(piece) for piece in pieces))


def _force_quote(text: str) -> str:
    """Like shell_quote, but always quoted (a bare piece next to a quoted one draws SC1011)."""
    if text.startswith("~") and len(text) > 1:
        return "\\~" + _force_quote(text[1:])
    quoted = _shell_quote(text)
    return quoted if quoted[:1] in ("'", '"') else "'" + text + "'"


def _shell_quote(value: object) -> Shell:
    """Quote for bash (``shlex.quote``); the result is one word whatever the value holds.

    Exact in bash either way, but some of shlex's forms trip shellcheck, so three cases differ:
    a value with a backslash gets double quotes, with backslash, double quote, dollar and backquote
    escaped (shlex's backslash before a closing single quote reads as an escaped quote, SC1003); a
    leading ``=`` is quoted (``NAME==x`` reads as a comparison, SC1097); a leading ``~`` is written
    ``\\~`` (a quoted ``'~/x'`` draws "tilde does not expand in quotes", SC2088).
    """
    text = _text(value)
    if text.startswith("~") and len(text) > 1:  # '~/x' is right, but shellcheck warns (SC2088)
        return Shell("\\~" + shell_quote(text[1:]))
    if "\\" in text:
        return Shell('"' + _DQUOTE_SPECIAL_RE.sub(r"\\\g<0>", text) + '"')
    if text.startswith("="):  # shlex leaves "=x" bare; shellcheck reads NAME==x as a comparison (SC1097)
        return Shell("'" + text.replace("'", "'\"'\"'") + "'")
    return Shell(shlex.quote(text))


def sbatch_quote(value: object) -> Shell:
    """Quote for sbatch's ``#SBATCH`` line parser (src/sbatch/opt.c ``_get_argument``), safe in bash too.

    Double quotes with ``\\``, ``"``, ``$`` and backquote escaped by a backslash: sbatch drops the
    backslash before any character and bash before exactly these, so both read the same bytes, and
    a template that prints ``{{ x | sq }}`` in shell code runs nothing. ``packjob``/``hetjob`` are
    split by an empty ``""`` (both parsers join the pieces; sbatch blanks the words in the raw line).
    """
    text = _text(value)
    if not _SBATCH_SAFE_RE.fullmatch(text):
        text = '"' + _DQUOTE_SPECIAL_RE.sub(r"\\\g<0>", text) + '"'
    return Shell(_SBATCH_MAGIC_RE.sub(lambda m: m.group(0)[0] + '""' + m.group(0)[1:], text))


def env_name(value: object) -> Shell:
    text = _text(value)
    if not _ENV_NAME_RE.fullmatch(text):
        raise ConfigError(f"{text!r} is not a valid environment variable name",
                          hint="use letters, digits and '_', not starting with a digit")
    return Shell(text)


class SetupLine(str):
    """One ``launcher.setup`` line: the only text ``verbatim`` accepts."""

    __slots__ = ()


def verbatim(value: object) -> Shell:
    """The user's own shell code, inserted unquoted: only ``launcher.setup`` lines (any other value
    would be run as code, so it is refused)."""
    text = _text(value)  # None and booleans: no text form (the same error as every filter)
    if not isinstance(value, SetupLine):
        raise ConfigError(f"a template prints {text[:60]!r} through verbatim, which is only for the "
                          "lines of launcher.setup",
                          hint="quote other values with | q (shell code) or | sq (#SBATCH lines)")
    return Shell(value)


def _text(value: object) -> str:
    if value is None or isinstance(value, bool):
        raise ConfigError(f"a template quoted {value!r}, which has no text form",
                          hint="test optional values with {% if name %} before quoting them")
    return str(value)


def finalize(value: object) -> object:
    """Jinja2 calls this on every ``{{ ... }}`` result: only quoted text and integers pass."""
    if isinstance(value, Shell) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ConfigError(
        f"a template outputs {value!r} without a quoting filter",
        hint="write {{ value | q }} in shell code, {{ value | sq }} on #SBATCH lines "
             "(| envname for variable names, | verbatim for your own shell code)",
    )


FILTERS = {"q": shell_quote, "sq": sbatch_quote, "envname": env_name, "verbatim": verbatim}
