"""Values from the config files a script loads: ``h = AttrDict(json.loads(open(args.config).read()))`` then
``init_process_group(init_method=h.dist_config["dist_url"])`` reads ``tcp://localhost:54321`` from the JSON file.

A pure reader: the script is never imported or run, the config files are parsed as data (JSON, YAML). The name
that holds a config is followed through assignments (``trainer = cfg.trainer``, past a fallback ``trainer = {}``),
the common wrappers (``AttrDict``, ``EasyDict``, ``SimpleNamespace(**d)``, ``OmegaConf.create``/``merge``/
``to_container``, ``hydra.utils.instantiate``), a class made from its keys (``TrainConfig(**cfg)``), a dict of some
of its keys (``{k: cfg[k] for k in names if k in cfg}``), a project function that fills and returns it (``cfg =
parse_cfg(cfg)``) and the parameters of the functions it is passed to (a call, an ``mp.spawn(fn, args=(...))``, the
script's call of a helper module's function). The file is the literal path, or the default of the flag that names
it (``--config``); a flag with no default, a positional ``sys.argv[1]`` or a Hydra app with no ``config_name``
(the user must pass one) is answered by the project's config files that hold the key chain read
(``configfiles.py``). A loader is ``json.load``, ``yaml.safe_load``/``load``, ``OmegaConf.load`` or a project
function whose own body loads its first parameter (``load_config(path)``); the parameter of a ``@hydra.main``
function is the app's composed config (``hydraconfig.py``).
"""
from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator.source.argflags import declared_flags
from orchestrator.source.configfiles import ConfigValue, lookup, project_config
from orchestrator.source.exprnames import dotted, last_name
from orchestrator.source.hydraconfig import hydra_main
from orchestrator.source.names import Module
from orchestrator.source.walk import walk

_LOADERS = frozenset({"json.load", "json.loads", "yaml.load", "yaml.safe_load", "yaml.full_load",
                      "yaml.unsafe_load", "OmegaConf.load", "omegaconf.OmegaConf.load"})
# a config wrapped for attribute access: the first argument (or ``**d``) is the config
_WRAPPERS = frozenset({"AttrDict", "EasyDict", "edict", "Adict", "Munch", "munchify", "DotMap", "Box",
                       "SimpleNamespace", "Namespace", "create", "DictConfig", "ConfigDict", "dict", "deepcopy", "copy",
                       "merge", "to_container", "instantiate"})  # merge(cfg, overrides): the first is the config
_DEPTH = 12
_CONFIG_DEST = re.compile(r"^(config|cfg|conf|config_file|config_path|cfg_file|cfg_path|yaml|yaml_path)$")
# folders above the script where the project's root is looked for, for a config path the user passes (``python
# scripts/train.py -c config/task.yaml`` from the root: the files are beside ``scripts/``, not below it)
_ABOVE = 3
# a project module's function for a call (None: not one): where a project function that loads a config is read
Definitions = Callable[[ast.Call], tuple[Module, ast.FunctionDef | ast.AsyncFunctionDef] | None]


@dataclass(frozen=True)
class _Path:
    literal: str | None  # a path written in (or a flag's default)
    options: tuple[str, ...]  # the flag's options that name it (``--config``, ``-c``), or ``argv[1]``; () written in
    hydra: tuple[Path, str] | None = None  # a Hydra app's config folder (from the script's folder) and name


@dataclass(frozen=True)
class _Context:
    outer: Module | None  # the script's module when the module read is a helper it calls
    definitions: Definitions | None


def config_value(module: Module, script: Path | None, expr: ast.expr, outer: Module | None = None,
                 definitions: Definitions | None = None, holding: frozenset[str] = frozenset()) -> ConfigValue | None:
    """The config file's value that ``expr`` (``cfg.trainer.num_nodes``, ``h.dist_config["dist_url"]``) reads, or
    None when ``expr`` does not read a config file this reader finds. ``script``: the script's path (relative paths
    start there); ``outer``: the script's module when ``module`` is a helper module it calls; ``definitions``: a
    project module's function a call reaches (``cfg = load_config(args.config)``, its body a loader of its first
    parameter). ``holding``: the value is a section (``trainer = cfg.trainer``, or the whole config) that the
    project's files answer only when it holds one of these keys (a file that lacks them is not this config)."""
    chain = _chain(_unaliased(module, expr), whole=bool(holding))
    if chain is None or script is None:
        return None
    base, keys = chain
    where = _source_of_name(module, base, _Context(outer, definitions), 0)
    if where is None:
        return None
    if where.literal is None and where.hydra is None:  # a path the user passes: the project's files, from its root too
        found = project_config(script, keys, holding, _ABOVE)
    else:
        found = lookup(script, keys, where.literal, where.hydra, holding)
    return replace(found, options=where.options, keys=tuple(keys)) if found is not None else None


def _unaliased(module: Module, expr: ast.expr) -> ast.expr:
    """``trainer`` of ``trainer = cfg.trainer`` (kept through ``if trainer is None: trainer = {}``, and through a
    wrapper of the section, ``copy.deepcopy(cfg.trainer)``): the chain the name was given."""
    for _ in range(_DEPTH):
        if not isinstance(expr, ast.Name):
            rebuilt = _from_attribute(module, expr)
            if not isinstance(rebuilt, ast.Name):
                return rebuilt
            expr = rebuilt  # self.trainer_cfg given a name (trainer_cfg = cfg["trainer"]): that name's chain
        value = _assigned(module, expr)
        if isinstance(value, ast.IfExp) and (_fallback(value.body) or _fallback(value.orelse)):
            value = value.orelse if _fallback(value.body) else value.body  # the section, else {}
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "getattr"
                and len(value.args) >= 2 and isinstance(key := value.args[1], ast.Constant)
                and isinstance(key.value, str)):  # getattr(cfg, "pl_trainer"): cfg.pl_trainer
            value = ast.copy_location(ast.Attribute(value=value.args[0], attr=key.value, ctx=ast.Load()), value)
        if isinstance(value, ast.Call) and (last_name(value.func) or "") in _WRAPPERS and len(value.args) == 1 and (
                isinstance(value.args[0], ast.Attribute | ast.Subscript)):
            value = value.args[0]  # trainer_config = copy.deepcopy(config.Trainer): the section it copies
        if not isinstance(value, ast.Attribute | ast.Subscript | ast.Name):
            return expr
        expr = value
    return expr


def _from_attribute(module: Module, expr: ast.expr) -> ast.expr:
    """``self._exp_cfg.trainer`` with ``self._exp_cfg = cfg.experiment`` the one value the file gives that attribute
    (in ``__init__``): ``cfg.experiment.trainer``, read from the name the attribute was given."""
    links: list[ast.Attribute | ast.Subscript] = []
    current = expr
    while isinstance(current, ast.Attribute | ast.Subscript):
        links.append(current)
        current = current.value
    if not (isinstance(current, ast.Name) and current.id == "self" and links and isinstance(links[-1], ast.Attribute)):
        return expr
    values = module.values_anywhere(f"self.{links[-1].attr}") or _dataclass_field(module, expr, links[-1].attr)
    value = values[0] if len(values) == 1 else None
    if not isinstance(value, ast.Attribute | ast.Subscript | ast.Name) or value is expr:
        return expr
    rebuilt: ast.expr = value
    for link in reversed(links[:-1]):  # the keys read below the attribute, outermost last
        rebuilt = ast.copy_location(ast.Attribute(value=rebuilt, attr=link.attr, ctx=ast.Load()), link) if isinstance(
            link, ast.Attribute) else ast.copy_location(ast.Subscript(value=rebuilt, slice=link.slice, ctx=ast.Load()),
                                                        link)
    return rebuilt


def _dataclass_field(module: Module, expr: ast.expr, field: str) -> list[ast.expr]:
    """What the file's calls of the ``@dataclass`` class ``expr`` is read in pass for its ``field``
    (``Experiment(trainer_cfg=cfg["trainer"])`` for ``self.trainer_cfg``)."""
    cls = module.parents.get(expr)
    while cls is not None and not isinstance(cls, ast.ClassDef):
        cls = module.parents.get(cls)
    if cls is None or not any(last_name(d.func if isinstance(d, ast.Call) else d) == "dataclass"
                              for d in cls.decorator_list) or not any(
            isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == field for s in cls.body):
        return []
    return [k.value for n in module.nodes if isinstance(n, ast.Call) and last_name(n.func) == cls.name
            for k in n.keywords if k.arg == field]


def _assigned(module: Module, name: ast.Name) -> ast.expr | None:
    """The value last given to ``name`` before it, passing over an empty fallback (``x = {}``, ``None``) and the
    statement ``name`` is read in (``trainer = Trainer(\n **trainer)``)."""
    _, value = module.resolve(name.id, name)
    if value is None or not (_fallback(value) or name in walk(value)):
        return value
    scope = module.scope_of(name)
    earlier = [v for line, v in scope.assigned.get(name.id, []) if line < name.lineno and v is not None]
    return next((v for v in reversed(earlier) if not _fallback(v) and name not in walk(v)), None)


def _fallback(value: ast.expr) -> bool:
    if isinstance(value, ast.Dict):
        return not value.keys
    if isinstance(value, ast.Constant):
        return value.value is None
    return isinstance(value, ast.Call) and dotted(value.func) == "dict" and not value.args and not value.keywords


def _chain(expr: ast.expr, whole: bool = False) -> tuple[ast.Name, list[str]] | None:
    """The name a config is held in and the keys read below it (``whole``: a bare name, the whole config, too)."""
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
    return (current, keys[::-1]) if isinstance(current, ast.Name) and (keys or whole) else None


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
    if hydra is not None:  # no config name: the user passes --config-name
        return _Path(None, (), hydra) if hydra[1] else _Path(None, ())
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
        return _made_with(module, function, param)
    index = params.index(param)
    out = [(module, v) for v in module.argument_for(function, param)] + _made_with(module, function, param)
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


def _made_with(module: Module, function: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> list[tuple[Module,
                                                                                                          ast.expr]]:
    """What this file's ``Experiment(cfg=cfg)`` passes for ``param`` of ``Experiment.__init__`` (by keyword, or by
    position after ``self``)."""
    if function.name != "__init__":
        return []
    cls = next((n for n in module.tree.body if isinstance(n, ast.ClassDef) and function in n.body), None)
    if cls is None:
        return []
    positional = [p.arg for p in (*function.args.posonlyargs, *function.args.args)][1:]
    index = positional.index(param) if param in positional else None
    out: list[tuple[Module, ast.expr]] = []
    for node in module.nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == cls.name:
            out.extend((module, k.value) for k in node.keywords if k.arg == param)
            if index is not None and index < len(node.args):
                out.append((module, node.args[index]))
    return out


def _source_of_value(module: Module, value: ast.expr, ctx: _Context, depth: int) -> _Path | None:
    if depth > _DEPTH:
        return None
    if isinstance(value, ast.Name):
        return _source_of_name(module, value, ctx, depth)
    if isinstance(value, ast.DictComp):  # {k: cfg[k] for k in names if k in cfg}: cfg's keys, some of them
        picked = value.value
        return (_source_of_name(module, picked.value, ctx, depth + 1) if isinstance(picked, ast.Subscript)
                and isinstance(picked.value, ast.Name) else None)
    if not isinstance(value, ast.Call):
        return None
    qual = module.qualname(value.func) or dotted(value.func) or ""
    if qual in _LOADERS or qual.endswith(".OmegaConf.load"):
        return _path_of(module, value.args[0], depth + 1) if value.args else None
    spread = [k.value for k in value.keywords if k.arg is None]
    if (last_name(value.func) or "") in _WRAPPERS or (not value.args and len(spread) == len(value.keywords) == 1):
        inner = value.args[0] if value.args else spread[0] if spread else None  # Config(**cfg): its keys
        return _source_of_value(module, inner, ctx, depth + 1) if inner is not None else None
    if value.args and _loader_function(module, value, ctx.definitions):
        return _path_of(module, value.args[0], depth + 1)
    if value.args and isinstance(value.args[0], ast.Name) and _returns_first(module, value, ctx.definitions):
        return _source_of_value(module, value.args[0], ctx, depth + 1)  # cfg = parse_cfg(cfg): fills and returns it
    return None


def _definition(module: Module, call: ast.Call,
                definitions: Definitions | None) -> tuple[Module, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    local = module.local_function(call)
    return (module, local) if local is not None else definitions(call) if definitions is not None else None


def _returns_first(module: Module, call: ast.Call, definitions: Definitions | None) -> bool:
    """``call`` is of a project function that returns its first parameter (``def parse_cfg(cfg): ...; return
    cfg``): what it returns is the config it was given."""
    found = _definition(module, call, definitions)
    if found is None:
        return False
    function = found[1]
    params = [p.arg for p in (*function.args.posonlyargs, *function.args.args) if p.arg not in ("self", "cls")]
    returns = [n.value for n in walk(function) if isinstance(n, ast.Return) and n.value is not None]
    return bool(params and returns) and all(isinstance(r, ast.Name) and r.id == params[0] for r in returns)


def _loader_function(module: Module, call: ast.Call, definitions: Definitions | None) -> bool:
    """``call`` is of a project function (this file's, else a project module's) whose own body loads a config from
    its first parameter: ``def load_config(path): with open(path) as f: return yaml.safe_load(f)``."""
    found = _definition(module, call, definitions)
    if found is None:
        return False
    where, function = found
    params = [p.arg for p in (*function.args.posonlyargs, *function.args.args) if p.arg not in ("self", "cls")]
    params += [function.args.vararg.arg] if function.args.vararg is not None else []  # load_config(*yamls)
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
    names = {n.id for n in walk(expr) if isinstance(n, ast.Name)}
    if param in names:
        return True
    if any(isinstance(n, ast.comprehension | ast.For) and isinstance(n.target, ast.Name) and n.target.id in names
           and isinstance(n.iter, ast.Name) and n.iter.id == param for n in module.nodes):
        return True  # each of them: ``[OmegaConf.load(f) for f in yamls]``
    for name in names:
        opened = [item.context_expr for item in (n for n in module.nodes if isinstance(n, ast.withitem))
                  if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name]
        if any(param in {n.id for n in walk(o) if isinstance(n, ast.Name)} for o in opened):
            return True
    return False


def _path_of(module: Module, expr: ast.expr, depth: int) -> _Path | None:
    """The path a loader's argument reads: ``open(P)``, ``f`` of ``with open(P) as f``, ``f.read()``, ``data``."""
    if depth > _DEPTH:
        return None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return _Path(expr.value, ())
    if isinstance(expr, ast.Call):
        if last_name(expr.func) == "open" and expr.args:
            return _path_of(module, expr.args[0], depth + 1)
        if isinstance(expr.func, ast.Attribute) and expr.func.attr in ("read", "read_text", "open"):  # path.open()
            return _path_of(module, expr.func.value, depth + 1)
        if last_name(expr.func) == "Path" and expr.args:
            return _path_of(module, expr.args[0], depth + 1)
        return None
    if isinstance(expr, ast.Attribute):
        return _flag_path(module, expr.attr)
    if isinstance(expr, ast.Subscript) and dotted(expr.value) in ("sys.argv", "argv"):
        index = expr.slice.value if isinstance(expr.slice, ast.Constant) else None
        return _Path(None, (f"argv[{index}]",) if isinstance(index, int) else ())  # the user passes the file
    if isinstance(expr, ast.Name):
        found, value = module.resolve(expr.id, expr)
        if value is not None:
            return _path_of(module, value, depth + 1)
        opened = next((item.context_expr for item in (n for n in module.nodes if isinstance(n, ast.withitem))
                       if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == expr.id
                       and module.function_of(item) is module.function_of(expr)), None)
        if found and opened is not None:
            return _path_of(module, opened, depth + 1)
        function = module.function_of(expr) if found else None
        passed = module.argument_for(function, expr.id) if function is not None else []
        return _path_of(module, passed[0], depth + 1) if len(passed) == 1 else None  # a parameter: what is passed
    return None


def _flag_path(module: Module, dest: str) -> _Path | None:
    """``args.config``: the default of ``add_argument("--config", ...)`` (no default or an empty one: the flag); a
    flag declared in no add_argument here and named as a config file (``args.config`` of a helper's
    ``parse_args()``): a file the user passes."""
    for flag in declared_flags(module.tree):
        if flag.attribute == dest:
            default = flag.keywords.get("default")
            if isinstance(default, ast.Constant) and isinstance(default.value, str) and default.value:
                return _Path(default.value, flag.options)
            return _Path(None, flag.options)
    # declared elsewhere (``args = parse_args()`` of a project helper): a config path by its name is the user's to pass
    return _Path(None, tuple(dict.fromkeys((f"--{dest}", f"--{dest.replace('_', '-')}")))) if (
        _CONFIG_DEST.search(dest)) else None


