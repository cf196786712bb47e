"""The config files a script's values come from (``configvalues.py`` follows the names to them): the file a
literal path or a flag's default names, a Hydra app's composed config (``hydraconfig.py``), else the project's
JSON and YAML files that hold the keys read (the user passes the file): one, or several that agree, answers; several
that differ give the first, marked ``agreed`` False (a guess). Files are parsed as data, never run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from orchestrator.source.hydraconfig import (
    MAX_CONFIG_BYTES,
    UNSPELLED_FOLDERS,
    Composed,
    compose,
    compose_choices,
    config_bases,
)

_SUFFIXES = (".json", ".yaml", ".yml")
_MAX_FILES = 300  # config files looked at when the flag has no default
_MAX_SEEN = 5000  # folder entries looked at for them
_PROJECT_MARKS = (".git", "pyproject.toml", "setup.py", "setup.cfg", "LICENSE")  # a repository's root holds one


@dataclass(frozen=True)
class ConfigValue:
    """``value`` read at ``file``:``line``; ``by_default``: the script loads that file when run without flags (a
    literal path, a flag's default); ``agreed``: every candidate file says the same (always True by default);
    ``options``/``keys``: where the command line may name another file, and the keys read in it."""

    value: object
    file: Path
    line: int
    by_default: bool
    agreed: bool
    # the command-line options that name the file (``--config``, ``-c``; ``argv[1]``: the first argument), where the
    # user may pass one, and the key chain read (``configvalues.config_value`` says both)
    options: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    # a Hydra app's config folder and name, whose command line (``trainer=ddp``, ``trainer.num_nodes=2``) composes
    # another config (``hydraoverrides.py``)
    hydra: tuple[Path, str] | None = None

    @property
    def where(self) -> str:
        return f"{self.file.parent.name}/{self.file.name}:{self.line}"


def project_config(script: Path, keys: list[str], holding: frozenset[str], above: int = 0) -> ConfigValue | None:
    """The section at ``keys`` of the project's config files that holds one of ``holding`` (a config the user
    passes, ``LightningCLI``'s ``--config``): from the script's folder, else from the project's root when it is
    one of the ``above`` folders above it (the first with a ``.git``, ``pyproject.toml``, ``setup.py`` or
    ``LICENSE``: a folder outside the project is never read)."""
    folder = script.resolve().parent
    found = lookup(script, keys, holding=holding)
    root = next((p for p in list(folder.parents)[:above] if any((p / m).exists() for m in _PROJECT_MARKS)), None)
    return found if found is not None or root is None else lookup(root / script.name, keys, holding=holding)


def lookup(script: Path, keys: list[str], literal: str | None = None, hydra: tuple[Path, str] | None = None,
           holding: frozenset[str] = frozenset()) -> ConfigValue | None:
    """The value at ``keys`` of the config a script at ``script`` loads: the ``literal`` path (from the script's
    folder or the two above it), the Hydra app's ``hydra`` (config folder, name), else the project's candidate files
    (``holding``: a candidate's value is a section that holds one of these keys)."""
    folder = script.resolve().parent
    bases = config_bases(folder)
    if hydra is not None:  # config_path is from the script's folder (a built one may be from the root)
        # a folder the reader could not spell (``str(constants.HYDRA_CONFIG_PATH)``): the usual names of one
        named = [hydra[0]] if hydra[0] != Path(".") else [Path("."), *map(Path, UNSPELLED_FOLDERS)]
        return next((c for c in (_from_hydra(b / n, hydra[1], keys) for b in bases for n in named) if c), None)
    if literal is not None:
        path = next((b / literal for b in bases if (b / literal).is_file()), None)
        found = _read_value(path, keys) if path is not None else None
        return ConfigValue(found[0], path, found[1], True, True) if found is not None and path is not None else None
    values: list[tuple[Path, object, int]] = []
    for path in _candidates(folder):
        found = _read_value(path, keys)
        if found is not None and (not holding or (isinstance(found[0], dict) and holding & set(found[0]))):
            values.append((path, *found))
    if not values:
        return None
    # several files agree when they give the same values for the keys asked about (``holding``: a Trainer section's
    # layout, whatever their other settings), or the same value when no key is named
    agreed = len({repr(_held(v, holding)) for _, v, _ in values}) == 1
    path, value, line = values[0]
    return ConfigValue(value, path, line, False, agreed)


def _held(value: object, holding: frozenset[str]) -> object:
    """The part of a section that decides agreement: its ``holding`` keys (all of it when none is named)."""
    if not holding or not isinstance(value, dict):
        return value
    return sorted((str(k), repr(v)) for k, v in value.items() if k in holding)


def _from_hydra(folder: Path, name: str, keys: list[str]) -> ConfigValue | None:
    """The value at ``keys`` of the Hydra app's config run with no override; where that config leaves it out (or
    null), the value each option of its ``experiment`` group gives (``experiment=X`` picks the run): one that all
    options agree on, else the first's (``agreed`` False); neither is the config run with no argument."""
    composed = compose(folder, name)
    if composed is None:
        return None
    app = (folder.resolve(), name)
    found = _composed_value(composed, keys, True)
    if found is not None and found.value is not None:
        return replace(found, hydra=app)
    chosen = [v for c in compose_choices(folder, name) if (v := _composed_value(c, keys, False)) is not None
              and v.value is not None]
    if not chosen:
        return replace(found, hydra=app) if found is not None else None
    first = next((v for v in chosen if isinstance(v.value, dict) and "_target_" in v.value), chosen[0])  # instantiated
    return replace(first, agreed=len({repr(v.value) for v in chosen}) == 1, hydra=app)


def _composed_value(composed: Composed, keys: list[str], by_default: bool) -> ConfigValue | None:
    data: Any = composed.data
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    path = composed.files.get(keys[0], composed.main) if keys else composed.main
    if path is None:
        return None
    below = keys[1:] if path != composed.main else keys
    text = path.read_text(encoding="utf-8", errors="replace")
    return ConfigValue(data, path, _line_of(text, below) if below else 1, by_default, True)


def _candidates(folder: Path) -> list[Path]:
    """The JSON/YAML files of the script's folder and three levels below it, in a stable order: at most
    ``_MAX_FILES``, after looking at ``_MAX_SEEN`` entries (a folder of data is not walked through); hidden folders and
    caches are skipped."""
    out: list[Path] = []
    seen = 0
    for top, dirs, files in os.walk(folder):
        depth = len(Path(top).relative_to(folder).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")) and depth < 3)
        seen += len(files) + len(dirs)
        out += [Path(top) / f for f in sorted(files) if f.endswith(_SUFFIXES)]
        if len(out) >= _MAX_FILES or seen >= _MAX_SEEN:
            break
    return out[:_MAX_FILES]


def value_at(path: Path, keys: list[str]) -> object | None:
    """The value at ``keys`` in the JSON/YAML file at ``path`` (None: unreadable, or not there)."""
    found = _read_value(path, keys)
    return found[0] if found is not None else None


def _read_value(path: Path, keys: list[str]) -> tuple[object, int] | None:
    """The value at ``keys`` in the JSON/YAML file and the line of its last key (None: unreadable, not there)."""
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
        data: Any = json.loads(text) if path.suffix == ".json" else _yaml(text)
    except (OSError, ValueError, RecursionError):
        return None
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data, _line_of(text, keys)


def _yaml(text: str) -> object:
    import yaml  # read only when a script loads a YAML config

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc


def _line_of(text: str, keys: list[str]) -> int:
    """The line of the last key, found after the lines of the keys above it (1 when not found)."""
    lines = text.splitlines()
    start = 0
    for key in keys:
        marks = (f'"{key}"', f"'{key}'", f"{key}:")
        at = next((i for i in range(start, len(lines)) if lines[i].lstrip().startswith(marks)), None)
        if at is None:
            return start + 1
        start = at
    return start + 1
