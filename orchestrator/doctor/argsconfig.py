"""The node count a script's arguments give a framework layout read from a config file (DDP023 across nodes,
``feasibility.py``): ``orch submit JOB --nodes 2 -- --config configs/x.yaml`` runs the Trainer section of
``configs/x.yaml``, so its ``num_nodes`` (or Lightning's 1 where it leaves it out) is certain once the arguments are
known; an override (``trainer.num_nodes=2``, ``--trainer.num_nodes 2``) wins. A Hydra app's command line composes
its config as Hydra would (``experiment=pretraining trainer=ddp trainer.num_nodes=2``: ``hydraoverrides.py``). Pure:
the files are parsed as data, the script is never run.

``args_config`` says, at the rule, whether the arguments can decide: only where the config is the one the script's
own option names and nothing in the script or the helpers it calls sets the count by another way (a store to
``.num_nodes``, a ``"num_nodes"`` string: a flag of that name, an ``OmegaConf.update``)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import ArgsConfig
from orchestrator.doctor.layoutconfig import names_parallel
from orchestrator.source.configfiles import ConfigValue, value_at
from orchestrator.source.hydraconfig import compose, config_bases
from orchestrator.source.hydraoverrides import apply_values, read_overrides

# a LightningCLI's: ``--config``/``-c`` files merge in order, ``--trainer.num_nodes`` overrides, else Lightning's 1
CLI_ARGS = ArgsConfig(("--config", "-c"), ("trainer", "num_nodes"), missing=1, unnamed=1, merged=True)
_POSITIONAL = "argv["  # an option ``argv[N]``: the script's Nth argument is the file
_MAX_OPTIONS = 40  # a Hydra group's options composed, at most


def args_config(a: Analysis, found: ConfigValue, keys: tuple[str, ...], missing: int | None,
                unnamed: int | None) -> ArgsConfig | None:
    """Where the arguments give the node count ``found``'s file holds at ``keys`` (the section's keys and the
    count's), when the command line may name the file and the script sets the count no other way (None)."""
    if not (found.options or found.hydra) or _set_elsewhere(a, keys[-1]):
        return None
    return ArgsConfig(found.options, keys, missing, unnamed, hydra=found.hydra)


def _set_elsewhere(a: Analysis, key: str) -> bool:
    """The script or a helper its calls reach stores ``key`` (``cfg.trainer.num_nodes = ...``,
    ``cfg["num_nodes"] = ...``) or names it in a string (an ``add_argument("--num_nodes")``, a dotlist)."""
    for module in a.read_modules():
        for node in module.nodes:
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and key in node.value:
                return True
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr == key:
                return True
    return False


def node_count(config: ArgsConfig, args: Sequence[str], script: Path) -> tuple[int | None, str]:
    """The node count ``args`` give (None: not known here: a file not found, a count not a number, an argument
    that may set it another way) and where it comes from, said for the refusal."""
    dotted = ".".join(config.keys)
    if config.hydra is not None:
        return _hydra_count(config, config.hydra, args)
    count: object = config.unnamed
    said = "no config file named in the arguments"
    i = 0
    while i < len(args):
        arg = args[i]
        flag, equals, value = arg.partition("=")
        named, override = flag in config.options, flag.lstrip("+-") == dotted
        takes = (named or override) and not equals and flag.startswith("-")  # --flag value: the next is its value
        value = args[i + 1] if takes and i + 1 < len(args) else value
        if named or (f"{_POSITIONAL}{i + 1}]" in config.options and not arg.startswith("-")):
            given = value if named else arg
            path = _path(given, script)
            found = _from_file(config, path) if path is not None else None
            if found is None:
                return None, f"{given} not read"
            if found[1] != _KEEP:
                count, said = found[0], (f"{dotted}={found[0]} in {given}" if found[1] == _IN else
                                         f"{dotted} left out of {given}: {found[0]}")
        elif override:
            count, said = value, f"{dotted}={value} passed"
        elif config.keys[-1] in arg:
            return None, f"{arg} may set it"
        i += 2 if takes else 1
    return _counted(count, said)


def parallel_options(config: ArgsConfig) -> list[str]:
    """The options of the Hydra app's group that holds the layout's section (``trainer/ddp.yaml`` for
    ``trainer.num_nodes``) whose section, composed as a command line choosing it would (``trainer=ddp``), runs several
    processes: a parallel strategy, more than one device or node. Empty for a config not a Hydra app's."""
    if config.hydra is None or len(config.keys) != 2:
        return []
    folder, name = config.hydra
    group = folder / config.keys[0]
    options = sorted({p.stem for p in group.glob("*.y*ml")})[:_MAX_OPTIONS] if group.is_dir() else []
    out = []
    for option in options:
        composed = compose(folder, name, {config.keys[0]: option})
        section = composed.data.get(config.keys[0]) if composed is not None else None
        if isinstance(section, dict) and _runs_parallel(section):
            out.append(option)
    return out


def _runs_parallel(section: dict[str, object]) -> bool:
    """A Trainer section that starts several processes: a parallel strategy, or several devices or nodes."""
    def several(value: object) -> bool:
        return (isinstance(value, int) and not isinstance(value, bool) and value > 1) or (
            isinstance(value, list) and len(value) > 1)
    return names_parallel(section) or any(several(section.get(key)) for key in ("devices", "gpus", "num_nodes"))


def _counted(count: object, said: str) -> tuple[int | None, str]:
    """``count`` as a number of nodes (None: not a number, ``${oc.env:NNODES}``), with where it comes from."""
    try:
        return int(str(count)), said
    except ValueError:
        return None, said


_IN, _LEFT_OUT, _KEEP = "in", "left out", "keep"  # how a file named gives the count


def _from_file(config: ArgsConfig, path: Path) -> tuple[object, str] | None:
    """The count the file named gives and how: ``_IN`` it, ``_LEFT_OUT`` by its section (the ``missing`` count),
    ``_KEEP`` the one before (a merged file without it); None: no such section (not this config), or not known."""
    section = value_at(path, list(config.keys[:-1]))
    if isinstance(section, dict) and config.keys[-1] in section:
        return section[config.keys[-1]], _IN
    if config.merged:
        return None, _KEEP
    return (config.missing, _LEFT_OUT) if isinstance(section, dict) and config.missing is not None else None


def _path(value: str, script: Path) -> Path | None:
    """The file a path argument names: from the working folder, else from the script's folder or the two above
    it (a command run from the repository's root)."""
    if not value:
        return None
    candidates = [Path(value), *(base / value for base in config_bases(script.resolve().parent))]
    return next((p for p in candidates if p.is_file()), None)


def _hydra_count(config: ArgsConfig, app: tuple[Path, str], args: Sequence[str]) -> tuple[int | None, str]:
    """The node count of the Hydra app's config composed with ``args`` (``experiment=pretraining trainer=ddp``,
    ``trainer.num_nodes=2``): in the section, else ``missing`` (Lightning's 1) where the section leaves it out."""
    folder, name = app
    overrides = read_overrides(args, folder)
    dotted = ".".join(config.keys)
    if overrides.unfollowed:
        return None, f"{overrides.unfollowed} not read"
    composed = compose(folder, overrides.name or name, overrides.choices)
    given = " ".join(a for a in args if not a.startswith("hydra.")) or "no override"
    if composed is None:
        return None, f"the Hydra config with {given} not composed"
    apply_values(composed.data, overrides.values)
    section: object = composed.data
    for key in config.keys[:-1]:
        section = section.get(key) if isinstance(section, dict) else None
    if not isinstance(section, dict):
        return None, f"no {'.'.join(config.keys[:-1])} section in the Hydra config with {given}"
    if config.parallel and not _runs_parallel(section):
        return None, f"the {'.'.join(config.keys[:-1])} of the Hydra config with {given} runs one process"
    if config.keys[-1] in section:
        count = section[config.keys[-1]]
        said = f"{dotted}={count} in the Hydra config with {given}"
    else:
        count, said = config.missing, f"{dotted} left out of the Hydra config with {given}: {config.missing}"
    return _counted(count, said)
