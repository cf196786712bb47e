"""A Hydra app's command line read as Hydra reads it (pure: the arguments and the config folder's listing).

``python run.py experiment=pretraining trainer=ddp trainer.devices=8 --config-name train`` picks the option
``pretraining`` of the ``experiment`` group and ``ddp`` of ``trainer`` (a key with a folder of that name in the
config folder is a group; ``null`` drops it), sets ``trainer.devices`` to 8 in the composed config (a value is
YAML, as Hydra parses it: ``8`` is a number), and composes ``train.yaml`` instead of the app's ``config_name``.
``+key=value`` adds, ``++key=value`` forces, ``~key`` deletes. What the reading cannot follow is said, not guessed:
a ``--multirun`` sweep (several runs, several configs), a comma list (a sweep, or Hydra's own error without
``--multirun``), another config folder (``--config-path``, ``--config-dir``), an argument Hydra would refuse.
``hydra.*`` keys (the run's folders and logging, orch's own overrides among them) leave the config alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

DELETE = object()  # ``~key``: the key removed from the composed config
_NAME_FLAGS = frozenset({"--config-name", "-cn"})
_UNFOLLOWED_FLAGS = frozenset({"--config-path", "-cp", "--config-dir", "-cd", "--multirun", "-m",
                               "--experimental-rerun"})
_VALUE_FLAGS = frozenset({"--cfg", "-c", "--package", "-p", "--info", "-i"})  # Hydra's flags that take a value
_HYDRA_KEYS = "hydra"  # ``hydra.run.dir=...``: Hydra's own settings, not the app's config


@dataclass
class Overrides:
    """What the command line changes: ``choices`` group -> option (None: ``null``), ``values`` key chain -> value
    (:data:`DELETE` for ``~key``) in the order given, ``name`` the config named instead, ``unfollowed`` the first
    argument whose effect is not read here ("" when every one is)."""

    choices: dict[str, str | None] = field(default_factory=dict)
    values: list[tuple[tuple[str, ...], object]] = field(default_factory=list)
    name: str | None = None
    unfollowed: str = ""


def read_overrides(args: Sequence[str], folder: Path) -> Overrides:
    """``args`` as Hydra overrides of the app whose config folder is ``folder``."""
    out = Overrides()
    i = 0
    while i < len(args):
        arg = args[i]
        flag, equals, given = arg.partition("=")
        if arg.startswith("-") and not arg.startswith("~"):
            takes = not equals and flag in (_NAME_FLAGS | _VALUE_FLAGS)
            value = args[i + 1] if takes and i + 1 < len(args) else given
            if flag in _NAME_FLAGS:
                out.name = value
            elif flag in _UNFOLLOWED_FLAGS:
                out.unfollowed = out.unfollowed or arg
            i += 2 if takes else 1
            continue
        i += 1
        _read_one(out, arg, folder)
    return out


def _read_one(out: Overrides, arg: str, folder: Path) -> None:
    key, equals, text = arg.partition("=")
    deleting = key.startswith("~")
    key = key.lstrip("+~").strip()
    if not key or (not equals and not deleting):
        out.unfollowed = out.unfollowed or arg  # Hydra refuses it (an override is key=value)
        return
    if key.split(".")[0] == _HYDRA_KEYS:
        return
    if "," in text and not text.strip().startswith(("[", "{", "'", '"')):
        out.unfollowed = out.unfollowed or arg  # a sweep
        return
    group = key.partition("@")[0]
    if (folder / group).is_dir() and "." not in group:
        out.choices[group] = None if deleting or text.strip() == "null" else text.strip()
        return
    out.values.append((tuple(key.split(".")), DELETE if deleting else _yaml_value(text)))


def _yaml_value(text: str) -> object:
    """The value as Hydra parses an override's (YAML's scalars and flow collections; a plain string otherwise)."""
    import yaml  # read only for a Hydra app's command line

    try:
        return yaml.safe_load(text) if text.strip() else ""
    except yaml.YAMLError:
        return text


def apply_values(data: dict[str, object], values: Sequence[tuple[tuple[str, ...], object]]) -> None:
    """The ``key.sub=value`` overrides set (or deleted) in the composed ``data``, in order."""
    for keys, value in values:
        target: object = data
        for key in keys[:-1]:
            if not isinstance(target, dict):
                break
            target = target.setdefault(key, {})
        if not isinstance(target, dict):
            continue
        if value is DELETE:
            target.pop(keys[-1], None)
        else:
            target[keys[-1]] = value
