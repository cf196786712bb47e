"""Frameworks a Hydra app builds from its configs (``hydra.utils.instantiate(cfg.trainer)``): the classes the
configs' ``_target_`` names, in the YAML files under the script's folder and the folders its ``@hydra.main``
names, and in the project's structured configs (a dataclass field ``_target_: str = "pytorch_lightning.Trainer"``);
and the project modules whose class a config builds at its top level (``_target_: diffusion_policy.workspace.
train_workspace.TrainWorkspace``, made by ``hydra.utils.get_class(cfg._target_)``), where the training loop is.
Their layout, in the config, is not judged here."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.doctor.frameworknames import QUALIFIED, import_aliases, qualified_name
from orchestrator.source.exprnames import last_name
from orchestrator.source.walk import walk
from orchestrator.spec.framework import Framework
from orchestrator.spec.pysource import UnreadableSource, parse_source

if TYPE_CHECKING:
    from orchestrator.source.projectfiles import SourceFile

# the config key naming the class a builder makes: Hydra's ``_target_``, and the same idea's other spellings
_TARGET = re.compile(r"^\s*(_target_|target|type):\s*['\"]?([\w.]+)", re.MULTILINE)
_ROOT_TARGET = re.compile(r"^_target_:\s*['\"]?([\w.]+)", re.MULTILINE)  # the class a config builds, at its top level
# a project Trainer a config section builds (``trainer: {target: pkg.engine.diffusion_trainer.DiffusionTrainer}``)
_TRAINER_TARGET = re.compile(r"^\s*(?:_target_|target|type):\s*['\"]?([\w.]+Trainer)['\"]?\s*$", re.MULTILINE)
_BUILDERS = ("hydra.utils.instantiate", "hydra.utils.get_class", "hydra.utils.get_method", "hydra.utils.call")
# builders from a config section outside Hydra, by their last name -> the key naming the class: latent-diffusion's
# ``instantiate_from_config`` (``target:``, often the project's own copy), iglovikov_helper_functions'
# ``object_from_dict`` (``type:``)
CONFIG_BUILDERS: dict[str, str] = {"instantiate": "_target_", "instantiate_from_config": "target",
                                   "object_from_dict": "type"}
_MAX_MODULE_BYTES = 400_000  # a project module named by a config (as the project's reading bounds its helpers)
_MAX_CONFIGS = 300  # YAML files read under the script's folder
_MAX_CONFIG_BYTES = 200_000


def instantiates(tree: ast.Module) -> bool:
    """The file builds objects from its configs with Hydra (``hydra.utils.instantiate(config.trainer)``,
    ``hydra.utils.get_class(cfg._target_)``) or another builder (``CONFIG_BUILDERS``:
    ``object_from_dict(cfg.trainer)``)."""
    aliases = import_aliases(tree)
    return any(isinstance(n, ast.Call) and ((qualified_name(n.func, aliases) or "").startswith(_BUILDERS)
                                            or (last_name(n.func) in CONFIG_BUILDERS and n.args))
               for n in walk(tree))


def _configs(folder: Path, depth: int = 4) -> list[Path]:
    """The YAML files under ``folder`` (at most ``_MAX_CONFIGS``, ``depth`` folders down, hidden ones skipped)."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        here = Path(root)
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")) and d != "node_modules"
                         and len(here.relative_to(folder).parts) < depth)
        found += [here / f for f in sorted(files) if f.endswith((".yaml", ".yml"))]
        if len(found) >= _MAX_CONFIGS:
            break
    return found[:_MAX_CONFIGS]


_CONFIG_DIRS = {"hydra.main": "config_path", "hydra.initialize": "config_path",
                "hydra.initialize_config_dir": "config_dir"}  # Hydra's call -> its argument naming the configs' folder


def config_folders(path: Path, trees: list[tuple[Path, ast.Module]]) -> list[Path]:
    """Where the script's Hydra configs are: its folder, and each folder a file names in ``@hydra.main(config_path=
    "../configs")`` (relative to that file, as Hydra reads it) or ``hydra.initialize(config_path=...)`` that is not
    inside the script's folder (read already); a folder built from a root the script computes (``str(ROOT / "conf")``)
    by its literal parts, from the file's folder or one of the two above it."""
    from orchestrator.source.hydraconfig import named_folder  # with the reading, as project_files

    folders = [path.parent.resolve()]
    for file, tree in trees:
        aliases = import_aliases(tree)
        for node in walk(tree):
            if not isinstance(node, ast.Call):
                continue
            keyword = _CONFIG_DIRS.get(qualified_name(node.func, aliases) or "")
            folder = named_folder(file.parent, node, keyword) if keyword else None
            if folder is not None and not any(folder.is_relative_to(seen) for seen in folders):
                folders.append(folder)
    return folders


def read_configs(folder: Path) -> list[tuple[Path, str]]:
    """The YAML files under ``folder`` (``_configs``) with their text, those too large or unreadable left out: read
    once for what they build (``hydra_targets``, ``project_classes``)."""
    out: list[tuple[Path, str]] = []
    for config in _configs(folder):
        try:
            if config.stat().st_size <= _MAX_CONFIG_BYTES:
                out.append((config, config.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return out


def hydra_targets(configs: Sequence[tuple[Path, str]], shown_from: Path,
                  own: Mapping[str, str] | None = None) -> list[Framework]:
    """The frameworks the Hydra ``configs`` (``read_configs``) build with ``_target_: lightning.Trainer``, or with a
    project class built on a framework's (``own``, ``frameworks.project_subclasses``: ``_target_:
    rl4co.utils.trainer.RL4COTrainer``): a script that calls ``hydra.utils.instantiate`` makes its Trainer from such
    a file (its layout, in YAML, is not judged). Each file is named from ``shown_from`` (the script's folder)."""
    found: dict[str, Framework] = {}
    for config, text in configs:
        for match in _TARGET.finditer(text):
            key, target = match.group(1), match.group(2)
            framework = QUALIFIED.get(target) or (own or {}).get(target.rsplit(".", 1)[-1]) or (
                project_subclass(target, shown_from))
            if framework is not None and framework not in found:
                line = text.count("\n", 0, match.start(2)) + 1
                found[framework] = Framework(name=framework,  # type: ignore[arg-type]
                                             why=f"{_relative(config, shown_from)}:{line}: {key}: {target}")
    return list(found.values())


def project_subclass(target: str, folder: Path) -> str | None:
    """The framework of a project class a config names (``_target_: profam.utils.trainer.ProFamTrainer``, a
    ``lightning.Trainer`` subclass in a module the script never imports), found as a file under the script's folder
    or one of the two above it. Only a Trainer's or Fabric's name is looked up (a config names many classes)."""
    parts = target.split(".")
    if len(parts) < 2 or not any(word in parts[-1] for word in ("Trainer", "Fabric")):
        return None
    for base in [folder, *list(folder.parents)[:2]]:
        module = base.joinpath(*parts[:-1]).with_suffix(".py")
        parsed = _parse(module) if module.is_file() else None
        if parsed is None:
            continue
        aliases = import_aliases(parsed[0])
        cls = next((n for n in parsed[0].body if isinstance(n, ast.ClassDef) and n.name == parts[-1]), None)
        bases = [QUALIFIED.get(qualified_name(b, aliases) or "") for b in cls.bases] if cls is not None else []
        return next((b for b in bases if b is not None), None)
    return None


def project_classes(configs: Sequence[tuple[Path, str]], root: Path,
                    shown_from: Path) -> list[tuple[Path, ast.Module, list[str], str]]:
    """The project modules the ``configs`` (``read_configs``) name as the class they build at their top level, or as
    a Trainer a section builds, found as files under ``root`` (the script's folder): each parsed, with its name from
    ``shown_from`` (unreadable ones left out)."""
    found: dict[Path, tuple[Path, ast.Module, list[str], str]] = {}
    for _, text in configs:
        for match in [*_ROOT_TARGET.finditer(text), *_TRAINER_TARGET.finditer(text)]:
            module = root.joinpath(*match.group(1).split(".")[:-1]).with_suffix(".py")
            if module in found or QUALIFIED.get(match.group(1)) or not module.is_file():
                continue
            parsed = _parse(module)
            if parsed is not None:
                found[module] = (module, *parsed, _relative(module, shown_from))
    return list(found.values())


def _parse(path: Path) -> tuple[ast.Module, list[str]] | None:
    try:
        if path.stat().st_size > _MAX_MODULE_BYTES:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
        return parse_source(text, str(path)), text.splitlines()
    except (OSError, UnreadableSource, RecursionError, MemoryError):
        return None


def _relative(path: Path, start: Path) -> str:
    """``path`` from ``start`` (``../configs/trainer/default.yaml``)."""
    return Path(os.path.relpath(path.resolve(), start.resolve())).as_posix()


def structured_targets(sources: Sequence[SourceFile]) -> list[Framework]:
    """The frameworks the project's structured configs build: a class field ``_target_: str =
    "pytorch_lightning.trainer.Trainer"`` (deepspeech.pytorch's ``TrainerConf`` dataclass, stored in Hydra's
    ConfigStore), the Python form of a YAML ``_target_:`` line; each with the file and line that names it."""
    found: dict[str, Framework] = {}
    for source in sources:
        for node in walk(source.tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for stmt in node.body:
                value = _target_value(stmt)
                framework = QUALIFIED.get(value) if value is not None else None
                if framework is not None and framework not in found:
                    found[framework] = Framework(name=framework, why=source.quote(stmt.lineno))  # type: ignore[arg-type]
    return list(found.values())


def _target_value(stmt: ast.stmt) -> str | None:
    """``X`` of ``_target_: str = "X"`` or ``_target_ = "X"``; None for any other statement."""
    targets: list[ast.expr]
    if isinstance(stmt, ast.AnnAssign):
        targets, value = [stmt.target], stmt.value
    elif isinstance(stmt, ast.Assign):
        targets, value = list(stmt.targets), stmt.value
    else:
        return None
    named = any(isinstance(t, ast.Name) and t.id == "_target_" for t in targets)
    return value.value if named and isinstance(value, ast.Constant) and isinstance(value.value, str) else None
