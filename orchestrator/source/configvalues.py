"""Values from the config files a script loads: ``h = AttrDict(json.loads(open(args.config).read()))`` then
``init_process_group(init_method=h.dist_config["dist_url"])`` reads ``tcp://localhost:54321`` from the JSON file.

A pure reader: the script is never imported or run, the config files are parsed as data (JSON, YAML). The name
that holds a config is followed through assignments, the common wrappers (``AttrDict``, ``EasyDict``,
``SimpleNamespace(**d)``, ``OmegaConf.create``) and the parameters of the functions it is passed to (a call, an
``mp.spawn(fn, args=(...))``, the script's call of a helper module's function). The file is the literal path, or the
default of the flag that names it (``--config``), resolved from the script's folder and the folders above it; a flag
with no default (the user must pass one) is answered by the project's config files that hold the key chain read:
one file, or several that agree on the value, say it (``by_default`` False: the user picks the file); several that
differ give the first, marked ``agreed`` False (a guess). A loader is ``json.load``, ``yaml.safe_load``/``load``,
``OmegaConf.load`` or a project function whose own body loads its first parameter (``load_config(path)``); the
parameter of a ``@hydra.main`` function is the app's composed config (``hydraconfig.py``).
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from orchestrator.source.hydraconfig import MAX_CONFIG_BYTES, compose, hydra_main
from orchestrator.source.names import Module, dotted, last_name

_LOADERS = frozenset({"json.load", "json.loads", "yaml.load", "yaml.safe_load", "yaml.full_load",
                      "yaml.unsafe_load", "OmegaConf.load", "omegaconf.OmegaConf.load"})
# a config wrapped for attribute access: the first argument (or ``**d``) is the config
_WRAPPERS = frozenset({"AttrDict", "EasyDict", "edict", "Munch", "munchify", "DotMap", "Box", "SimpleNamespace",
                       "Namespace", "create", "DictConfig", "ConfigDict", "dict", "deepcopy", "copy"})
_SUFFIXES = (".json", ".yaml", ".yml")
_MAX_FILES = 300  # config files looked at when the flag has no default
_MAX_SEEN = 5000  # folder entries looked at for them
_DEPTH = 12
# a project module's function for a call (None: not one): where a project function that loads a config is read
Definitions = Callable[[ast.Call], tuple[Module, ast.FunctionDef | ast.AsyncFunctionDef] | None]


@dataclass(frozen=True)
class ConfigValue:
    """``value`` read at ``file``:``line``; ``by_default``: the script loads that file when run without flags (a
    literal path, a flag's default); ``agreed``: every candidate file says the same (always True by default)."""

    value: object
    file: Path
    line: int
    by_default: bool
    agreed: bool

    @property
    def where(self) -> str:
        return f"{self.file.parent.name}/{self.file.name}:{self.line}"


@dataclass(frozen=True)
class _Path:
    literal: str | None  # a path written in (or a flag's default)
    flag: str | None  # the flag that names it, when it has no default
    hydra: tuple[Path, str] | None = None  # a Hydra app's config folder (from the script's folder) and name


@dataclass(frozen=True)
class _Context:
    outer: Module | None  # the script's module when the module read is a helper it calls
    definitions: Definitions | None


def config_value(module: Module, script: Path | None, expr: ast.expr,
                 outer: Module | None = None, definitions: Definitions | None = None) -> ConfigValue | None:
    """The config file's value that ``expr`` (``cfg.trainer.num_nodes``, ``h.dist_config["dist_url"]``) reads, or
    None when ``expr`` does not read a config file this reader finds. ``script``: the script's path (relative paths
    start there); ``outer``: the script's module when ``module`` is a helper module it calls; ``definitions``: a
    project module's function a call reaches (``cfg = load_config(args.config)``, its body a loader of its first
    parameter)."""
    chain = _chain(expr)
    if chain is None or script is None:
        return None
    base, keys = chain
    where = _source_of_name(module, base, _Context(outer, definitions), 0)
    if where is None:
        return None
    return _lookup(where, keys, script)


def _chain(expr: ast.expr) -> tuple[ast.Name, list[str]] | None:
    keys: list[str] = []
    current = expr
    while True:
        if isinstance(current, ast.Attribute):
            keys.append(current.attr)
            current = current.value
        elif isinstance(current, ast.Subscript) and isinstance(current.slice, ast.Constant) and isinstance(
                current.slice.value, str):
            keys.append(current.slice.value)
            current = current.value
        elif (isinstance(current, ast.Call) and isinstance(current.func, ast.Attribute) and current.func.attr == "get"
              and current.args and isinstance(key := current.args[0], ast.Constant) and isinstance(key.value, str)):
            keys.append(key.value)
            current = current.func.value
        else:
            break
    return (current, keys[::-1]) if isinstance(current, ast.Name) and keys else None


def _source_of_name(module: Module, name: ast.Name, ctx: _Context, depth: int) -> _Path | None:
    if depth > _DEPTH:
        return None
    found, value = module.resolve(name.id, name)
    if value is not None:
        return _source_of_value(module, value, ctx, depth + 1)
    if not found:
        return None
    function = module.function_of(name)
    if function is None:
        return None
    hydra = hydra_main(module, function)
    if hydra is not None:
        return _Path(None, None, hydra)
    for passed_module, passed in _passed(module, function, name.id, ctx.outer):
        source = _source_of_value(passed_module, passed, ctx if passed_module is module else replace(ctx, outer=None),
                                  depth + 1)
        if source is not None:
            return source
    return None


def _passed(module: Module, function: ast.FunctionDef | ast.AsyncFunctionDef, param: str,
            outer: Module | None) -> list[tuple[Module, ast.expr]]:
    """What is passed for ``param``: this file's calls, ``spawn(function, args=(...))`` (the spawn index comes
    first), and the script's calls of this helper's function."""
    params = [p.arg for p in (*function.args.posonlyargs, *function.args.args)]
    if param not in params:
        return []
    index = params.index(param)
    out = [(module, v) for v in module.argument_for(function, param)]
    for where in (module, outer) if outer is not None else (module,):
        for node in where.nodes:
            if not isinstance(node, ast.Call):
                continue
            if last_name(node.func) == "spawn" and node.args and last_name(node.args[0]) == function.name:
                spawned = next((k.value for k in node.keywords if k.arg == "args"), None)
                if isinstance(spawned, ast.Tuple) and 0 < index <= len(spawned.elts):
                    out.append((where, spawned.elts[index - 1]))
            elif where is outer and last_name(node.func) == function.name and index < len(node.args):
                out.append((where, node.args[index]))
    return out


def _source_of_value(module: Module, value: ast.expr, ctx: _Context, depth: int) -> _Path | None:
    if depth > _DEPTH:
        return None
    if isinstance(value, ast.Name):
        return _source_of_name(module, value, ctx, depth)
    if not isinstance(value, ast.Call):
        return None
    qual = module.qualname(value.func) or dotted(value.func) or ""
    if qual in _LOADERS or qual.endswith(".OmegaConf.load"):
        return _path_of(module, value.args[0], depth + 1) if value.args else None
    if (last_name(value.func) or "") in _WRAPPERS:
        inner = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg is None), None)
        return _source_of_value(module, inner, ctx, depth + 1) if inner is not None else None
    if value.args and _loader_function(module, value, ctx.definitions):
        return _path_of(module, value.args[0], depth + 1)
    return None


def _loader_function(module: Module, call: ast.Call, definitions: Definitions | None) -> bool:
    """``call`` is of a project function (this file's, else a project module's) whose own body loads a config from
    its first parameter: ``def load_config(path): with open(path) as f: return yaml.safe_load(f)``."""
    local = module.local_function(call)
    found = (module, local) if local is not None else definitions(call) if definitions is not None else None
    if found is None:
        return False
    where, function = found
    params = [p.arg for p in (*function.args.posonlyargs, *function.args.args) if p.arg not in ("self", "cls")]
    if not params:
        return False
    for inner in where.calls_in(function):
        qual = where.qualname(inner.func) or dotted(inner.func) or ""
        if (qual in _LOADERS or qual.endswith(".OmegaConf.load")) and inner.args and _reads_param(where, inner.args[0],
                                                                                                   params[0]):
            return True
    return False


def _reads_param(module: Module, expr: ast.expr, param: str) -> bool:
    """``expr`` (a loader's argument) comes from ``param``: the name itself, ``open(param)``, the file of
    ``with open(param) as f``, ``f.read()``."""
    names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    if param in names:
        return True
    for name in names:
        opened = [item.context_expr for item in (n for n in module.nodes if isinstance(n, ast.withitem))
                  if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name]
        if any(param in {n.id for n in ast.walk(o) if isinstance(n, ast.Name)} for o in opened):
            return True
    return False


def _path_of(module: Module, expr: ast.expr, depth: int) -> _Path | None:
    """The path a loader's argument reads: ``open(P)``, ``f`` of ``with open(P) as f``, ``f.read()``, ``data``."""
    if depth > _DEPTH:
        return None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return _Path(expr.value, None)
    if isinstance(expr, ast.Call):
        if last_name(expr.func) == "open" and expr.args:
            return _path_of(module, expr.args[0], depth + 1)
        if isinstance(expr.func, ast.Attribute) and expr.func.attr in ("read", "read_text"):
            return _path_of(module, expr.func.value, depth + 1)
        if last_name(expr.func) == "Path" and expr.args:
            return _path_of(module, expr.args[0], depth + 1)
        return None
    if isinstance(expr, ast.Attribute):
        return _flag_path(module, expr.attr)
    if isinstance(expr, ast.Name):
        found, value = module.resolve(expr.id, expr)
        if value is not None:
            return _path_of(module, value, depth + 1)
        opened = next((item.context_expr for item in (n for n in module.nodes if isinstance(n, ast.withitem))
                       if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == expr.id
                       and module.function_of(item) is module.function_of(expr)), None)
        return _path_of(module, opened, depth + 1) if found and opened is not None else None
    return None


def _flag_path(module: Module, dest: str) -> _Path | None:
    """``args.config``: the default of ``add_argument("--config", ...)`` (no default or an empty one: the flag)."""
    for node in module.nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            flags = [x.value for x in node.args if isinstance(x, ast.Constant) and isinstance(x.value, str)]
            named = [f for f in flags if f.startswith("--")]
            if named and named[0].lstrip("-").replace("-", "_") == dest:
                default = next((k.value for k in node.keywords if k.arg == "default"), None)
                if isinstance(default, ast.Constant) and isinstance(default.value, str) and default.value:
                    return _Path(default.value, None)
                return _Path(None, named[0])
    return None


def _lookup(where: _Path, keys: list[str], script: Path) -> ConfigValue | None:
    folder = script.resolve().parent
    if where.hydra is not None:
        return _from_hydra(folder / where.hydra[0], where.hydra[1], keys)
    bases = [folder, *list(folder.parents)[:2]]
    if where.literal is not None:
        path = next((b / where.literal for b in bases if (b / where.literal).is_file()), None)
        found = _read_value(path, keys) if path is not None else None
        return ConfigValue(found[0], path, found[1], True, True) if found is not None and path is not None else None
    values: list[tuple[Path, object, int]] = []
    for path in _candidates(folder):
        found = _read_value(path, keys)
        if found is not None:
            values.append((path, *found))
    if not values:
        return None
    agreed = len({repr(v) for _, v, _ in values}) == 1
    path, value, line = values[0]
    return ConfigValue(value, path, line, False, agreed)


def _from_hydra(folder: Path, name: str, keys: list[str]) -> ConfigValue | None:
    composed = compose(folder, name)
    if composed is None:
        return None
    data: Any = composed.data
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    path = composed.files.get(keys[0], composed.main)
    if path is None:
        return None
    below = keys[1:] if path != composed.main else keys
    text = path.read_text(encoding="utf-8", errors="replace")
    return ConfigValue(data, path, _line_of(text, below) if below else 1, True, True)


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
