"""The training frameworks' names as a script writes them: each qualified name that shows a framework
(``lightning.Trainer``, ``transformers.Trainer``, ``accelerate.Accelerator``, ...) and how a file's imports
qualify a name (``import lightning as L`` makes ``L.Trainer`` ``lightning.Trainer``). Read by the framework
reading (``frameworks.py``), the Hydra configs' targets (``hydratargets.py``) and the rules that judge a
framework's layout, saves and devices."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

from orchestrator.source.importednames import imported_from
from orchestrator.source.starimports import exported
from orchestrator.source.walk import walk

_LIGHTNING = ("lightning.Trainer", "lightning.pytorch.Trainer", "lightning.pytorch.trainer.Trainer",
              "lightning.pytorch.trainer.trainer.Trainer", "pytorch_lightning.Trainer",
              "pytorch_lightning.trainer.Trainer", "pytorch_lightning.trainer.trainer.Trainer")
_FABRIC = ("lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric", "lightning.fabric.fabric.Fabric")
# Lightning's command line: it builds the Trainer from a config file and flags (its layout is not in the call)
LIGHTNING_CLI = tuple(f"{m}.LightningCLI" for m in ("lightning.pytorch.cli", "pytorch_lightning.cli",
                                                      "pytorch_lightning.utilities.cli", "lightning.pytorch"))
# qualified name (called or used as a decorator) -> the framework it shows
QUALIFIED: dict[str, str] = {
    **dict.fromkeys(_LIGHTNING, "lightning"), **dict.fromkeys(_FABRIC, "fabric"),
    **dict.fromkeys(LIGHTNING_CLI, "lightning"),
    "accelerate.Accelerator": "accelerate",
    "transformers.Trainer": "hf-trainer", "transformers.Seq2SeqTrainer": "hf-trainer",
    "transformers.trainer.Trainer": "hf-trainer", "transformers.trainer_seq2seq.Seq2SeqTrainer": "hf-trainer",
    # TRL's trainers are transformers.Trainer subclasses: the same launch and environment
    **{f"trl.{t}Trainer": "hf-trainer" for t in ("SFT", "DPO", "Reward", "ORPO", "KTO", "CPO", "GRPO", "GKD", "BCO",
                                                  "PRM", "OnlineDPO", "IterativeSFT")},
    # pytorch-accelerated's Trainer runs its loop on an Accelerator it makes (`accelerate launch` or torchrun)
    "pytorch_accelerated.Trainer": "accelerate", "pytorch_accelerated.trainer.Trainer": "accelerate",
    "hydra.main": "hydra",
    "torch.distributed.elastic.multiprocessing.errors.record": "torchelastic",
}
# the top-level packages of those names: a class of one of them is the framework's own, never a project's
FRAMEWORK_ROOTS = frozenset(name.split(".")[0] for name in QUALIFIED)


def import_aliases(tree: ast.Module) -> dict[str, str]:
    """Each imported name -> its module path (``L`` -> ``lightning``, ``Trainer`` -> ``lightning.Trainer``)."""
    names: dict[str, str] = {}
    for node in walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    names[head] = head
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.update(imported_from(node))
    return names


def qualified_name(node: ast.expr, aliases: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        head = qualified_name(node.value, aliases)
        return f"{head}.{node.attr}" if head else None
    return None


def star_aliases(tree: ast.Module, trees: Mapping[Path, ast.Module], path: Path) -> dict[str, str]:
    """The imported names a ``from M import *`` of a project module read (``trees``: resolved path -> parsed) brings
    into ``tree`` (the file at ``path``): EEGPT's ``pl`` -> ``pytorch_lightning`` through ``from engine_pretraining
    import *``, whose module does ``import pytorch_lightning as pl``. ``M`` is looked for beside the file."""
    out: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.ImportFrom) and node.module and node.level <= 1
                and any(alias.name == "*" for alias in node.names)):
            continue
        source = trees.get(path.parent.joinpath(*node.module.split(".")).with_suffix(".py").resolve())
        if source is not None:
            out.update(exported(source, import_aliases(source)))
    return out

