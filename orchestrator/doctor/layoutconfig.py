"""DDP023's layouts taken from a config file: ``Trainer(**cfg.trainer)``, ``hydra.utils.instantiate(cfg.trainer)``
(its ``_target_`` a Lightning ``Trainer``) and ``Trainer(num_nodes=cfg.trainer.num_nodes)`` read ``num_nodes``,
``devices`` and ``gpus`` from the config the script loads by default (``source/configvalues.py``). Likely, never
certain: the user may pass another config or an override."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.frameworknames import LIGHTNING_CLI, QUALIFIED, import_aliases, qualified_name
from orchestrator.doctor.hydratargets import CONFIG_BUILDERS, project_subclass
from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.configfiles import ConfigValue, project_config, value_at
from orchestrator.source.configvalues import config_value
from orchestrator.source.exprnames import FunctionNode, last_name, parameter_defaults
from orchestrator.source.names import Module

# a ``_target_`` naming a Lightning Trainer: in its head (lightning, pytorch_lightning), its last part
_TRAINER_TARGET = ("lightning", "Trainer")
# a Trainer section of a config the user passes: a file that holds none of these is not one
LAYOUT_KEYS = frozenset({"devices", "gpus", "num_nodes"})
_CLI_ABOVE = 3  # folders above a LightningCLI script where its project root is looked for (configs/ beside src/)
PARALLEL = re.compile(r"ddp|fsdp|deepspeed|horovod", re.IGNORECASE)  # a strategy's name that runs several processes
_CLI_OWN = frozenset({"trainer_defaults", "args", "env_parse"})  # what else may give it one (and default config files)


def read_config(a: Analysis, expr: ast.expr, holding: frozenset[str] = frozenset()) -> ConfigValue | None:
    """The config file's value ``expr`` reads (None: not from a config file found): for DDP023 here and DDP008's
    rendezvous from a config (``rules_rendezvous_computed``). ``holding``: ``expr`` is a section (or the whole
    config) that holds one of these keys."""
    root = a.outer if a.outer is not None else a
    script = root.project.script if root.project is not None else None
    return config_value(a.module, script, expr, a.outer.module if a.outer is not None else None,
                        lambda call: _definition(root, a.module.qualname(call.func)), holding)


def _definition(root: Reading, qual: str | None) -> tuple[Module, FunctionNode] | None:
    """The project module's function ``qual`` names (``utils.load_config``), among the modules the doctor reads
    anyway (the helpers the script's calls reach: reading another would check it as a helper)."""
    project = root.project
    where = project.split(qual) if project is not None and qual else None
    if project is None or where is None:
        return None
    list(root.helper_quals)  # reads the helpers the script's calls reach
    helpers = dict(project.helpers())
    for _ in range(2):  # the name itself, then once through a package ``__init__``'s ``from .config import f``
        module = helpers.get(where[0])
        function = module.functions.get(where[1]) if module is not None else None
        imported = module.aliases.get(where[1]) if module is not None and function is None else None
        if imported is None or (where := project.split(imported)) is None:
            break  # the re-export's module is looked up among the helpers read, never read here
    return (module, function) if module is not None and function is not None else None


def configured_trainer(a: Analysis, call: ast.Call, lightning: bool) -> ConfigValue | None:
    """The config section a Trainer is made from: the one ``**`` argument of a Lightning ``Trainer(...)``
    (``lightning``), or the first argument of ``instantiate(...)`` whose ``_target_`` is a Lightning Trainer (or of
    another builder, ``CONFIG_BUILDERS``: ``object_from_dict(cfg.trainer)``, its ``type:``)."""
    if lightning:
        spread = [k.value for k in call.keywords if k.arg is None]
        section = _spread_section(a, spread[0]) if len(spread) == 1 else None
        found = read_config(a, section, LAYOUT_KEYS) if section is not None else None
    elif (key := CONFIG_BUILDERS.get(last_name(call.func) or "")) is not None and call.args:
        found = read_config(a, call.args[0])
        target = str(found.value.get(key, "")) if found is not None and isinstance(found.value, dict) else ""
        script = a.project.script if a.project is not None else Path(a.filename)
        if not ((_TRAINER_TARGET[0] in target.split(".")[0] and target.endswith(_TRAINER_TARGET[1])) or (
                project_subclass(target, script.parent) == "lightning")):  # the project's own Trainer subclass
            return None
    else:
        return None
    return found if found is not None and isinstance(found.value, dict) else None


def _spread_section(a: Analysis, expr: ast.expr) -> ast.expr | None:
    """What ``Trainer(**expr)`` spreads: ``expr`` itself, or, for a name bound to a dict literal that spreads one
    section and adds other keys (HULC's ``trainer_args = {**cfg.trainer, "logger": ..., "callbacks": ...}``), that
    section, unless the literal or a later ``trainer_args["devices"] = ...`` sets a layout key itself."""
    if not isinstance(expr, ast.Name):
        return expr
    _, value = a.module.resolve(expr.id, expr)
    if not isinstance(value, ast.Dict):
        return expr
    spread = [v for k, v in zip(value.keys, value.values, strict=True) if k is None]
    named = {k.value for k in value.keys if isinstance(k, ast.Constant)}
    set_later = {n.slice.value for n in a.module.nodes if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
                 and isinstance(n.value, ast.Name) and n.value.id == expr.id and isinstance(n.slice, ast.Constant)}
    if len(spread) != 1 or (named | set_later) & LAYOUT_KEYS:
        return None
    return spread[0]


def cli_trainer(a: Analysis) -> ConfigValue | None:
    """The ``trainer:`` section of the project's config files that sets a layout, for a ``LightningCLI`` (the user
    passes the file with ``--config``; none passed: Lightning's defaults, one node): one file, or several that agree,
    is likely; several that differ, a guess."""
    script = a.project.script if a.outer is None and a.project is not None else None
    found = project_config(script, ["trainer"], LAYOUT_KEYS, _CLI_ABOVE) if script is not None else None
    return found if found is not None and isinstance(found.value, dict) else None


def key_line(found: ConfigValue, key: str) -> int:
    """The line of ``key:`` in the section's file at or after the section's line (the section's line if absent)."""
    try:
        lines = Path(found.file).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return found.line
    marks = (f"{key}:", f'"{key}"', f"'{key}'")
    return next((i + 1 for i in range(found.line - 1, len(lines)) if lines[i].strip().startswith(marks)), found.line)


def shown(found: ConfigValue, line: int) -> str:
    return f"{found.file.parent.name}/{found.file.name}:{line}"


def section_parallel(a: Analysis, call: ast.Call) -> bool:
    """The config section a Lightning ``Trainer(**cfg.trainer)`` (or ``instantiate(cfg.trainer)`` of a Trainer
    ``_target_``) is made from names a parallel strategy (``strategy: ddp``)."""
    aliases = import_aliases(a.module.tree)
    lightning = QUALIFIED.get(qualified_name(call.func, aliases) or "") == "lightning"
    section = configured_trainer(a, call, lightning)
    return names_parallel(section.value if section is not None and isinstance(section.value, dict) else {})


def section_every_gpu(a: Analysis, call: ast.Call) -> bool:
    """The config section a Trainer is made from is Lightning 2's (``_target_: lightning.Trainer``) and asks for every
    GPU: ``devices`` left out or ``auto``/-1, with an ``accelerator`` left out, ``auto`` or the GPU's, and no
    one-process ``strategy`` (``single_device``) (fs2_lightning's
    ``{_target_: lightning.Trainer, accelerator: auto}``, PVNet's ``devices: auto``): DDP over the node's GPUs."""
    aliases = import_aliases(a.module.tree)
    lightning = QUALIFIED.get(qualified_name(call.func, aliases) or "") == "lightning"
    section = configured_trainer(a, call, lightning)
    data = section.value if section is not None and isinstance(section.value, dict) else None
    if data is None:
        return False
    target = str(data.get("_target_", "")) if not lightning else qualified_name(call.func, aliases) or ""
    devices, strategy = data.get("devices", data.get("gpus", "auto")), str(data.get("strategy", "auto"))
    one_process = strategy not in ("auto", "None") and not PARALLEL.search(strategy)  # ``single_device``
    return target.split(".")[0] == "lightning" and str(devices) in _EVERY_DEVICE and str(
        data.get("accelerator", "auto")).lower() in _GPU_ACCELERATORS and not one_process


_EVERY_DEVICE = frozenset({"auto", "-1"})
_GPU_ACCELERATORS = frozenset({"auto", "gpu", "cuda"})


def names_parallel(data: dict[str, object]) -> bool:
    """A Trainer section that names a parallel strategy (``strategy: ddp``, also in its accelerator or plugins)."""
    return any(PARALLEL.search(str(data.get(key, ""))) for key in ("strategy", "accelerator", "plugins"))



def project_cli(a: Analysis, qualified: str) -> bool:
    """``utils.PDECLI(...)`` of the project's ``class PDECLI(LightningCLI)``, or ``MyLightningCLI(...)`` of a class of
    the file's own (satclip's): a LightningCLI too."""
    if "." not in qualified and any(isinstance(n, ast.ClassDef) and n.name == qualified and any(
            (a.module.qualname(b) or "") in LIGHTNING_CLI for b in n.bases) for n in a.module.tree.body):
        return True
    project = a.project
    where = project.split(qualified) if project is not None and "." in qualified else None
    module = project.read(where[0]) if project is not None and where is not None else None
    cls = next((n for n in module.tree.body if isinstance(n, ast.ClassDef) and where is not None
                and n.name == where[1]), None) if module is not None else None
    return cls is not None and module is not None and any((module.qualname(b) or "") in LIGHTNING_CLI
                                                          for b in cls.bases)


def bare_cli(a: Analysis, call: ast.Call) -> bool:
    """``LightningCLI(Model, DataModule)`` (or the project's subclass) with no default config files, Trainer
    defaults, environment or arguments of its own: its Trainer's layout is what the command line passes."""
    qualified = qualified_name(call.func, import_aliases(a.module.tree)) or ""
    parser = next((k.value for k in call.keywords if k.arg == "parser_kwargs"), None)
    defaults = parser is not None and (not isinstance(parser, ast.Dict) or any(
        isinstance(n, ast.Constant) and n.value == "default_config_files" for n in ast.walk(parser)))
    return (qualified in LIGHTNING_CLI or project_cli(a, qualified)) and not call.args[2:] and not defaults and not (
        {k.arg for k in call.keywords} & _CLI_OWN)


def cli_defaults(a: Analysis, call: ast.Call) -> str | None:
    """A ``LightningCLI`` whose own defaults set no layout: its ``trainer_defaults`` a dict literal without
    ``num_nodes``/``devices``/``gpus`` and each of its ``parser_kwargs={"default_config_files": [...]}`` a file found
    (from the script's folder) whose ``trainer`` section has none either; no ``args``/``env_parse``. What is said of
    them (``satclip: configs/default.yaml, trainer_defaults``); None when not so, or not known."""
    given = {k.arg: k.value for k in call.keywords}
    if None in given or {"args", "env_parse"} & given.keys():
        return None
    defaults = given.get("trainer_defaults")
    if defaults is not None and not (isinstance(defaults, ast.Dict) and all(
            isinstance(k, ast.Constant) and k.value not in LAYOUT_KEYS for k in defaults.keys)):
        return None
    parser = given.get("parser_kwargs")
    files: list[ast.expr] = []
    if parser is not None:
        if not isinstance(parser, ast.Dict) or None in parser.keys:
            return None
        listed = next((v for k, v in zip(parser.keys, parser.values, strict=True)
                       if isinstance(k, ast.Constant) and k.value == "default_config_files"), None)
        files = listed.elts if isinstance(listed, ast.List | ast.Tuple) else [] if listed is None else [listed]
    script = Path(a.filename).resolve().parent
    said = []
    for expr in files:
        value = _default_argument(a, expr)
        path = script / value if value is not None else None
        section = value_at(path, ["trainer"]) if path is not None and path.is_file() else None
        if path is None or not isinstance(section, dict) or LAYOUT_KEYS & section.keys():
            return None  # not found, or it sets a layout (cli_trainer's), or no trainer section to read
        said.append(str(Path(value or "").as_posix()))
    return ", ".join([*said, *(["trainer_defaults"] if defaults is not None else [])]) or "the CLI's own defaults"


def _default_argument(a: Analysis, expr: ast.expr) -> str | None:
    """A string literal, or the default of the enclosing function's parameter it names (``cli_main(default_config_
    filename="./configs/default.yaml")``)."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    function = a.module.function_of(expr)
    if not isinstance(expr, ast.Name) or function is None:
        return None
    default = parameter_defaults(function).get(expr.id)
    _, value = a.module.resolve(expr.id, expr)
    return default.value if isinstance(default, ast.Constant) and isinstance(default.value, str) and (
        value is None) else None
