"""What an absolute ``from module import ...`` binds, read from the statement alone (an installed package is never
read): each name and what it means, and for ``import *`` of a training framework the classes a project builds on
(``from transformers.trainer import *``, then ``class MyTrainer(Trainer)``)."""

from __future__ import annotations

import ast

# What ``from <framework> import *`` brings that the reader needs (an installed package is never read): the
# frameworks' classes a project subclasses (``from transformers.trainer import *``, ``class MyTrainer(Trainer)``).
_LIGHTNING_STAR = ("Trainer", "LightningModule", "LightningDataModule", "seed_everything")
STAR_EXPORTS: dict[str, tuple[str, ...]] = {
    "transformers": ("Trainer", "Seq2SeqTrainer", "TrainingArguments", "Seq2SeqTrainingArguments"),
    "transformers.trainer": ("Trainer",), "accelerate": ("Accelerator",),
    **dict.fromkeys(("pytorch_lightning", "lightning.pytorch", "lightning"), _LIGHTNING_STAR)}


def imported_from(node: ast.ImportFrom) -> list[tuple[str, str]]:
    """The names an absolute ``from module import ...`` binds and what each means; ``*`` binds itself
    (``module.*``: where the reader of a project's star imports looks) and a framework's :data:`STAR_EXPORTS`."""
    module = node.module or ""
    starred = any(alias.name == "*" for alias in node.names)
    return [(alias.asname or alias.name, f"{module}.{alias.name}") for alias in node.names] + [
        (name, f"{module}.{name}") for name in (STAR_EXPORTS.get(module, ()) if starred else ())]
