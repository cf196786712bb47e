"""The docs say what the code does: the parts of a page rendered from code are up to date
(``scripts/docs_tables.py``: the torchrun table of docs/bring-your-own-script.md), and every
``orch VERB --option`` a page shows is an option that verb's parser knows. See docs/testing.md,
"The docs test"."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shlex
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel
from pydantic_core import PydanticUndefinedType
from support import ROOT
from test_docs import PAGES, Block, _prose, fenced_blocks

from orchestrator.cli import VERBS, build_parser


def _docs_tables() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_tables", ROOT / "scripts" / "docs_tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- parts rendered from code


def test_the_rendered_parts_of_the_docs_are_up_to_date() -> None:
    tables = _docs_tables()
    stale = []
    for page, name, render in tables.REGIONS:
        text = (ROOT / page).read_text(encoding="utf-8")
        if tables.rewrite(text, name, render()) != text:
            stale.append(f"{page}: the {name} region")
    assert not stale, f"out of date (run: python scripts/docs_tables.py): {stale}"


def test_the_region_rewrite_replaces_only_the_region() -> None:
    tables = _docs_tables()
    text = "a\n<!-- t:begin -->\nold\n<!-- t:end -->\nb\n"
    assert tables.rewrite(text, "t", "new\n") == "a\n<!-- t:begin -->\n\nnew\n\n<!-- t:end -->\nb\n"
    for broken in ("a\n", "<!-- t:begin -->\nold\n", text + text):
        with pytest.raises(ValueError):
            tables.rewrite(broken, "t", "new\n")


def test_the_torchrun_table_names_every_torchrun_option_orch_takes() -> None:
    """A torchrun option whose counterpart orch has must say so: no "none" for an option the verb knows."""
    from orchestrator.commands._torchrun import TORCHRUN_OPTIONS

    for verb in ("run", "submit"):
        known = _options(verb)
        for row in TORCHRUN_OPTIONS:
            other = row.counterpart(verb)
            if other is not None:
                assert other in known, f"TORCHRUN_OPTIONS: orch {verb} has no {other}"
            else:
                assert row.prefix or row.name not in known, (
                    f"TORCHRUN_OPTIONS says orch {verb} has no counterpart of {row.name}, but it takes {row.name}")


# ---------------------------------------------------------------- options the pages show

_TOP = build_parser()


def _verb_parser(verb: str) -> argparse.ArgumentParser:
    parser = build_parser(only=verb)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = sub.choices[verb]
    assert isinstance(found, argparse.ArgumentParser)
    return found


def _options(verb: str) -> dict[str, argparse.Action]:
    return {**_TOP._option_string_actions, **_verb_parser(verb)._option_string_actions}


@dataclass(frozen=True)
class Shown:
    where: str
    verb: str
    words: tuple[str, ...]  # after the verb, up to a lone "--"


ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _command(where: str, line: str) -> Shown | None:
    """The ``orch VERB ...`` command of a shell line (after ``$ `` and ``NAME=value`` prefixes), if any."""
    line = line.strip().removeprefix("$ ")
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    while words and ASSIGNMENT.match(words[0]):
        words = words[1:]
    if words[:1] != ["orch"]:
        return None
    rest = words[1:]
    # the verb: the first word that is not a top-level option
    i = next((k for k, word in enumerate(rest) if not word.startswith("-")), None)
    if i is None or rest[i] not in VERBS:
        return None
    word = rest[i]
    after = rest[:i] + rest[i + 1:]
    for stop in ("|", "||", "&&", ";", ">", ">>", "2>&1", "&"):  # the rest of a shell line
        if stop in after:
            after = after[:after.index(stop)]
    if "--" in after:
        after = after[:after.index("--")]
    return Shown(where, word, tuple(after))


def _lines(block: Block) -> Iterator[tuple[int, str]]:
    """A block's lines with ``\\`` continuations joined: (first line, text)."""
    pending, first = "", 0
    for number, raw in block.lines:
        if not pending:
            first = number
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        yield first, pending + raw
        pending = ""


def shown_commands(page: Path, text: str | None = None) -> list[Shown]:
    """Every ``orch VERB ...`` of a page's shell blocks (``bash``, ``sh``, ``console``: its ``$`` lines),
    but those of a ``bash runnable exit=N`` block with N != 0 (they show refused input on purpose, and
    run)."""
    found = []
    for block in fenced_blocks(page.read_text(encoding="utf-8") if text is None else text, page):
        kind = block.words[:1]
        if kind not in (["bash"], ["sh"], ["shell"], ["console"]) or any(w.startswith("exit=") and w != "exit=0"
                                                                         for w in block.words[1:]):
            continue
        for number, line in _lines(block):
            if kind == ["console"] and not line.startswith("$ "):
                continue
            shown = _command(f"{page.relative_to(ROOT)}:{number}", line)
            if shown is not None:
                found.append(shown)
    return found


INLINE = re.compile(r"`(orch [^`]+)`")
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def inline_commands(page: Path) -> list[Shown]:
    """The options of every ``orch VERB ...`` code span of a page's prose (synopses such as
    ``orch run [--nproc N] [--cpu]`` too: brackets and bars are not parsed, only the options)."""
    found = []
    for number, line in _prose(page):
        for match in INLINE.finditer(line):
            words = match[1].split(" -- ")[0].split()
            verb = next((w for w in words[1:] if not w.startswith("-")), None)
            if verb in VERBS:
                name = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name
                found.append(Shown(f"{name}:{number}", verb,
                                   tuple(OPTION.findall(" ".join(words[1:])))))
    return found


def unknown_options(shown: Shown) -> list[str]:
    """The options of ``shown`` that orch's parser for its verb does not know."""
    known = _options(shown.verb)
    unknown = []
    words = list(shown.words)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-") or word == "-" or re.fullmatch(r"-\d[\d.]*", word):
            continue
        name = word.split("=", 1)[0]
        action = known.get(name)
        if action is None:
            unknown.append(word)
        elif "=" not in word and action.nargs != 0:  # its value may look like an option (--sbatch-arg=-x)
            i += 1
    return unknown


COMMANDS = [shown for page in PAGES for shown in shown_commands(page)]
INLINE_COMMANDS = [shown for page in PAGES for shown in inline_commands(page)]


def test_the_pages_show_orch_commands() -> None:
    assert len(COMMANDS) > 50 and {s.verb for s in COMMANDS} >= {"submit", "run", "status", "logs", "doctor"}


def test_every_option_the_pages_show_is_one_orch_knows() -> None:
    assert len(INLINE_COMMANDS) > 100, "the prose's orch commands are no longer found"
    wrong = [f"{s.where}: orch {s.verb} has no {', '.join(bad)}" for s in [*COMMANDS, *INLINE_COMMANDS]
             if (bad := unknown_options(s))]
    assert not wrong, "\n".join(wrong)


def test_the_option_check_sees_an_unknown_option() -> None:
    text = ("```bash\norch submit smoke --nodes 2 --nproc 4 \\\n  --dry-run -- --lr 0.1\n"
            "ORCH_CLUSTER=x orch -v run smoke --gpus 2 | tee out\necho orch run --no-such\n```\n"
            "```console\n$ orch logs 12 -f --tail 5\norch status --not-a-command-line\n```\n"
            "```bash runnable exit=2\norch run train.py --nproc-per-node 2\n```\n")
    found = [(s.where, s.verb, unknown_options(s)) for s in shown_commands(ROOT / "docs" / "probe.md", text)]
    assert found == [("docs/probe.md:2", "submit", ["--nproc"]), ("docs/probe.md:4", "run", ["--gpus"]),
                     ("docs/probe.md:8", "logs", ["--tail"])]


def test_the_option_check_reads_the_prose_too(tmp_path: Path) -> None:
    text = ("Run `orch run [JOB] [--nproc N] [--cpu|--gpu]` or `orch submit x.py --dry-run -- --lr 1`;\n"
            "`orch frobnicate --x` is no verb.\n```bash\n`orch run --not-prose`\n```\n")
    probe = tmp_path / "probe.md"
    probe.write_text(text, encoding="utf-8")
    found = [(s.where, s.verb, unknown_options(s)) for s in inline_commands(probe)]
    assert found == [("probe.md:1", "run", ["--gpu"]), ("probe.md:1", "submit", [])]


# ---------------------------------------------------------------- cluster.yaml's keys and defaults


def _leaves(model: type[BaseModel], prefix: str) -> Iterator[tuple[str, object]]:
    """(dotted key as cluster.yaml spells it, default) of every leaf field of a config model."""
    for name, field in model.model_fields.items():
        key = prefix + (field.alias or name)
        kind = field.annotation
        nested = next((t for t in (kind, *typing.get_args(kind)) if isinstance(t, type) and issubclass(t, BaseModel)),
                      None)
        if nested is not None:
            yield from _leaves(nested, f"{key}[]." if typing.get_origin(kind) is list else f"{key}.")
        else:
            yield key, field.get_default(call_default_factory=True)


def _shown_default(value: object) -> set[str]:
    """How the table may write a default: ``true``/``on``, ``[29500, 39499]``, ``{}``, ``120``."""
    if isinstance(value, bool):
        return {"true", "on"} if value else {"false", "off"}
    if isinstance(value, (list, tuple)):
        return {"[" + ", ".join(map(str, value)) + "]"}
    return {str(value)}


def cluster_yaml_table() -> dict[str, str]:
    """key -> the default column of docs/cluster-yaml.md's table of keys (its first word)."""
    rows: dict[str, str] = {}
    for _, line in _prose(ROOT / "docs" / "cluster-yaml.md"):
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")] if line.startswith("| `") else []
        if len(cells) == 3:
            default = re.sub(r"\s*\(.*$", "", cells[2]).strip("`")
            for key in re.findall(r"`([\w.\[\]]+)`", cells[0]):
                rows[key] = default
    return rows


def test_the_cluster_yaml_page_names_every_key_with_its_default() -> None:
    from orchestrator.spec.cluster import Cluster
    from orchestrator.spec.remote import Remote

    table = cluster_yaml_table()
    keys = [*_leaves(Cluster, ""), *_leaves(Remote, "remote.")]
    # a key is named by its own row or by its parent's (partitions[].expect names its fields)
    missing = [key for key, _ in keys
               if key != "remote" and not any(key == k or key.startswith(k + ".") for k in table)]
    assert not missing, f"docs/cluster-yaml.md's table has no row for {missing}"
    wrong = [f"{key}: the page says {table[key]!r}, the code {default!r}" for key, default in keys
             if key in table and default is not None and not isinstance(default, PydanticUndefinedType)
             and table[key] not in _shown_default(default)]
    assert not wrong, "\n".join(wrong)
