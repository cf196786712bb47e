"""The config a Hydra app starts with when run without overrides (pure reader: YAML parsed as data).

``@hydra.main(config_path="configs", config_name="config")`` reads ``configs/config.yaml`` and its ``defaults:``
list: ``- trainer: default`` puts ``configs/trainer/default.yaml`` under ``trainer`` (a group file's own
``defaults:`` are read from its group's folder; one under ``# @package _global_`` gives the config its own keys);
``_self_`` and a ``null`` choice add nothing; a mapping over a mapping merges key by key. Each top-level key
remembers the file it came from, so that a value is shown where it is written. Interpolations (``${...}``) are
kept as written (not resolved). :func:`compose_choices` composes each option of the ``experiment`` group a run picks.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.source.exprnames import FunctionNode
from orchestrator.source.names import Module
from orchestrator.source.walk import walk
from orchestrator.spec.hydra import main_config

MAX_CONFIG_BYTES = 256 << 10  # a config file larger than this is not read (here and in configvalues.py)
# where a Hydra app's configs are looked for when its config_path has no string to read (a project constant:
# ``config_path=str(constants.HYDRA_CONFIG_PATH)``): its config_name's file in one of these, from the script's folder
# or one above it
UNSPELLED_FOLDERS = ("config", "configs", "conf")
_DEPTH = 4
EXPERIMENTS = "experiment"  # the config group a run is picked from on the command line (the Lightning-Hydra template)
_MAX_OPTIONS = 40  # its options composed, at most


@dataclass
class Composed:
    data: dict[str, Any] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)  # top-level key -> the file that set it
    main: Path | None = None
    # the group options a command line chose (``trainer=ddp``; None: ``null``), over every defaults list's choice
    # of that group; a group no defaults list names is added after the main config (``+experiment=x``)
    choices: dict[str, str | None] = field(default_factory=dict)
    chosen: set[str] = field(default_factory=set)  # the groups of ``choices`` a defaults list named


def hydra_main(module: Module, function: FunctionNode) -> tuple[Path, str] | None:
    """The config folder (relative to the script's folder, or to a folder above it) and name of a ``@hydra.main``
    function, or None. A folder built from a path (``str(root / "configs")``, ``os.path.join(here, "..", "conf")``)
    is its string parts joined; a name not given (or not a literal) is "": the user passes ``--config-name``."""
    for decorator in function.decorator_list:
        if isinstance(decorator, ast.Call) and module.qualname(decorator.func) == "hydra.main":
            path, name = main_config(decorator)
            return Path(path if path is not None else built_path(decorator)), name or ""
    return None


def built_path(call: ast.Call, keyword: str = "config_path") -> str:
    """The string parts of a ``config_path`` (or ``keyword``) that is not a literal, joined ("." when it has none):
    ``str(ROOT / "conf")`` -> ``conf``, read from the script's folder or one above it (:func:`config_bases`)."""
    given = next((k.value for k in call.keywords if k.arg == keyword), call.args[0] if call.args else None)
    found = [n for n in walk(given) if isinstance(n, ast.Constant) and isinstance(n.value, str)] if given else []
    parts = [str(n.value).strip("/") for n in sorted(found, key=lambda n: (n.lineno, n.col_offset))]
    return "/".join(p for p in parts if p) or "."


def config_bases(folder: Path) -> list[Path]:
    """Where a config folder named from a built path may start: the script's folder and the two above it (a root
    the script computes is most often its repository's or its package's)."""
    return [folder, *list(folder.parents)[:2]]


def named_folder(folder: Path, call: ast.Call, keyword: str) -> Path | None:
    """The folder that ``call``'s ``keyword`` (``config_path=``) names in a file of ``folder``: a literal, relative to
    it; one built from a root the script computes, by its literal parts from it or a folder above
    (:func:`config_bases`); None when it names none that exists."""
    value = next((k.value for k in call.keywords if k.arg == keyword), None)
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        candidates = [folder / value.value]
    elif value is not None and not isinstance(value, ast.Constant) and (built := built_path(call, keyword)) != ".":
        candidates = [base / built for base in config_bases(folder)]
    else:
        return None
    return next((c.resolve() for c in candidates if c.is_dir()), None)


def compose(folder: Path, name: str, choices: dict[str, str | None] | None = None) -> Composed | None:
    """The composed config of ``name`` in ``folder`` (None when its file, or a group option ``choices`` names,
    cannot be read)."""
    out = Composed(choices=dict(choices or {}))
    main = _file(folder, name)
    if main is None or not _merge(out, folder, main, None, 0):
        return None
    for group, choice in out.choices.items():
        found = _file(folder / group, choice) if choice is not None else None
        if choice is not None and found is None:
            return None  # Hydra stops: no such option
        if found is not None and group not in out.chosen and "/" not in group and not _merge(out, folder, found,
                                                                                             group, 1):
            return None
    out.main = main
    return out


def _file(folder: Path, name: str) -> Path | None:
    for candidate in (folder / name, folder / f"{name}.yaml", folder / f"{name}.yml"):
        if candidate.is_file() and candidate.suffix in (".yaml", ".yml"):
            return candidate
    return None


def _read(path: Path) -> dict[str, Any] | None:
    import yaml  # read only for a Hydra app's config

    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            return None
        data = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, yaml.YAMLError, RecursionError, ValueError):
        return None
    return data if isinstance(data, dict) else {} if data is None else None


def compose_choices(folder: Path, name: str, group: str = EXPERIMENTS) -> list[Composed]:
    """The config of ``name`` composed with each option of its ``experiment`` group, the Lightning-Hydra template's
    way to pick a run (``python train.py experiment=hg38/hg38``, ``+experiment=train_GATsSPG``): the option's
    ``# @package _global_`` keys merged over the main config's, its ``/group: choice`` defaults read from the config
    folder. Empty when the folder has no such group."""
    options = sorted((folder / group).rglob("*.y*ml"))[:_MAX_OPTIONS] if (folder / group).is_dir() else []
    out: list[Composed] = []
    for option in options:
        composed = compose(folder, name)
        if composed is not None and _merge(composed, folder, option, None, 1):
            out.append(composed)
    return out


def _package_global(path: Path) -> bool:
    """A group's file whose keys are the config's own (``# @package _global_`` in its header)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            head = f.read(1024)
    except OSError:
        return False
    return any(line.strip().startswith("#") and "@package _global_" in line for line in head.splitlines())


def _deep_update(target: dict[str, Any], own: dict[str, Any]) -> None:
    """Hydra's merge: a mapping over a mapping merges key by key, anything else replaces."""
    for key, value in own.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = value


def _merge(out: Composed, root: Path, path: Path, group: str | None, depth: int) -> bool:
    """Read ``path`` into ``out`` (under ``group`` when it is a group's file not of the global package): its defaults
    in order, itself where ``_self_`` stands among them (last when it does not: Hydra's order)."""
    data = _read(path)
    if data is None or depth > _DEPTH:
        return False
    if group is not None and _package_global(path):
        group = None
    listed = data.get("defaults")
    defaults: list[Any] = listed if isinstance(listed, list) else []
    for entry in defaults if "_self_" in defaults else [*defaults, "_self_"]:
        if entry == "_self_":
            _own(out, path, {k: v for k, v in data.items() if k != "defaults"}, group)
        elif isinstance(entry, str):
            found = _file(path.parent, entry)
            if found is not None:
                _merge(out, root, found, group, depth + 1)
        elif isinstance(entry, dict) and len(entry) == 1:
            ((key, choice),) = entry.items()
            key = str(key).removeprefix("override ").removeprefix("optional ").strip().lstrip("/")
            if key in out.choices:
                choice = out.choices[key]
                out.chosen.add(key)
            if isinstance(choice, str) and key and "/" not in key and group is None:
                found = _file(root / key, choice)
                if found is not None:
                    _merge(out, root, found, key, depth + 1)
    return True


def _own(out: Composed, path: Path, own: dict[str, Any], group: str | None) -> None:
    """A file's own keys merged into ``out`` (under ``group`` for a group's file), each remembering the file."""
    if group is None:
        _deep_update(out.data, copy.deepcopy(own))
        out.files.update(dict.fromkeys(own, path))
    else:
        target = out.data.setdefault(group, {})
        if isinstance(target, dict):
            _deep_update(target, copy.deepcopy(own))
            out.files[group] = path
