"""DDP006 in framework code (orchestrator/doctor/framework_saves.py): the Hugging Face Trainer, Lightning and
Accelerate run the script on every rank, and the Trainer calls every callback's events on every rank; their own
"this process saves" flags guard a save, the node-local ones do not. Small made-up scripts, a guarded twin of each."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source

_CALLBACK = """import os
import torch
from transformers import Trainer, TrainerCallback


class SaveAdapter(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):
        folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
{body}
        return control


trainer = Trainer(model=model, args=training_args, callbacks=[SaveAdapter()])
trainer.train()
"""
_SAVES = ('kwargs["model"].save_pretrained(folder)', 'torch.save({}, os.path.join(folder, "model.bin"))')


def saves(source: str, name: str = "t.py") -> list[tuple[int, str]]:
    return [(f.line, f.confidence) for f in check_source(source, name) if f.code == "DDP006"]


def callback(guard: str = "", indent: str = "        ") -> str:
    inner = indent + ("    " if guard else "")
    lines = ([indent + guard] if guard else []) + [inner + s for s in _SAVES]
    return _CALLBACK.replace("{body}", "\n".join(lines))


def test_a_callback_writing_in_on_save_writes_on_every_rank() -> None:
    found = check_source(callback(), "t.py")
    assert [(f.code, f.line, f.confidence) for f in found if f.code == "DDP006"] == [
        ("DDP006", 9, "likely"), ("DDP006", 10, "likely")]
    assert "calls on_save on every rank" in found[0].evidence


@pytest.mark.parametrize("guard", [
    "if state.is_world_process_zero:", "if args.should_save:", "if int(os.environ['RANK']) == 0:",
    "if PartialState().is_main_process:", "if trainer.is_world_process_zero():",
])
def test_a_callback_guarded_by_the_main_process_is_silent(guard: str) -> None:
    assert saves(callback(guard)) == []


def test_an_early_return_off_the_main_process_guards_the_callback() -> None:
    early = _CALLBACK.replace("{body}", "        if not state.is_world_process_zero:\n            return control\n"
                              + "\n".join("        " + s for s in _SAVES))
    assert saves(early) == []


@pytest.mark.parametrize("guard", ["if control.should_save:", "if state.global_step > 10:"])
def test_a_condition_that_is_not_a_rank_does_not_guard(guard: str) -> None:
    assert [line for line, _ in saves(callback(guard))] == [10, 11]


def test_a_flag_the_file_sets_itself_is_not_the_trainers_should_save() -> None:
    source = callback("if args.should_save:") + "args.should_save = args.save_steps > 0\n"
    assert [line for line, _ in saves(source)] == [10, 11]


def test_the_local_process_zero_of_a_callback_writes_once_per_node() -> None:
    found = [f for f in check_source(callback("if state.is_local_process_zero:"), "t.py") if f.code == "DDP006"]
    assert [f.line for f in found] == [10, 11] and "local rank 0 of every node" in found[0].message


def test_a_method_the_callback_calls_on_every_rank_is_reported_and_a_guarded_call_is_not() -> None:
    head = ("import os\nimport torch\nfrom transformers import Trainer, TrainerCallback\n\n\n"
            "class Keep(TrainerCallback):\n    def write(self, args, model):\n"
            "        model.save_pretrained(os.path.join(args.output_dir, 'adapter'))\n\n"
            "    def on_train_end(self, args, state, control, **kwargs):\n")
    assert [line for line, _ in saves(head + "        self.write(args, kwargs['model'])\n")] == [8]
    guarded = head + "        if state.is_world_process_zero:\n            self.write(args, kwargs['model'])\n"
    assert saves(guarded) == []


_AFTER_TRAIN = """import os
import torch
from transformers import Trainer, TrainingArguments

training_args = TrainingArguments(output_dir="out")
trainer = Trainer(model=model, args=training_args, train_dataset=data)
trainer.train()
{save}
"""


@pytest.mark.parametrize(("save", "reported"), [
    ("model.save_pretrained(os.path.join(training_args.output_dir, 'final'))", True),
    ("torch.save(model.state_dict(), os.path.join(training_args.output_dir, 'final.bin'))", True),
    ("trainer.save_model(training_args.output_dir)", False),
    ("if trainer.is_world_process_zero():\n    model.save_pretrained(training_args.output_dir)", False),
    ("if training_args.should_save:\n    model.save_pretrained(training_args.output_dir)", False),
    ("model.save_pretrained(training_args.output_dir, is_main_process=trainer.is_world_process_zero())", False),
])
def test_a_save_after_trainer_train_runs_on_every_rank_unless_told_which_rank(save: str, reported: bool) -> None:
    assert [line for line, _ in saves(_AFTER_TRAIN.format(save=save))] == ([8] if reported else [])


def test_no_framework_and_no_torch_distributed_no_finding() -> None:
    """A one-process script (no framework, no process group) saving at the end is not judged."""
    assert saves("from transformers import AutoModel\nmodel = AutoModel.from_pretrained('m')\n"
                 "model.save_pretrained('out/final')\n") == []


@pytest.mark.parametrize(("guard", "lines"), [
    ("if training_args.local_rank == 0 or training_args.local_rank == -1:", [9, 10]),
    ("if training_args.local_rank in [-1, 0]:", [9, 10]),
    ("if training_args.should_save and training_args.local_rank == 0:", []),
    ("if trainer.is_world_process_zero():", []),
])
def test_training_arguments_local_rank_is_a_guard_per_node(guard: str, lines: list[int]) -> None:
    save = (f"{guard}\n    model.save_pretrained(training_args.output_dir)\n"
            "    torch.save(extra, os.path.join(training_args.output_dir, 'extra.bin'))")
    assert [line for line, _ in saves(_AFTER_TRAIN.format(save=save))] == lines


_ACCELERATE = """import os
from accelerate import Accelerator
from safetensors.torch import save_file

accelerator = Accelerator()
model, opt, loader = accelerator.prepare(model, opt, loader)
for step, batch in enumerate(loader):
    accelerator.backward(model(batch).loss)
    save_path = os.path.join(args.output_dir, f"checkpoint-{{step}}")
    accelerator.save_state(save_path)
{save}
"""


@pytest.mark.parametrize(("save", "reported"), [
    ("    save_file(accelerator.unwrap_model(model).state_dict(), os.path.join(save_path, 'lora.safetensors'))", True),
    ("    if accelerator.is_main_process:\n"
     "        save_file(accelerator.unwrap_model(model).state_dict(), os.path.join(save_path, 'lora.safetensors'))",
     False),
    ("    accelerator.save(accelerator.unwrap_model(model).state_dict(), os.path.join(save_path, 'w.bin'))", False),
])
def test_a_safetensors_save_beside_save_state_under_accelerate(save: str, reported: bool) -> None:
    assert [line for line, _ in saves(_ACCELERATE.format(save=save))] == ([11] if reported else [])


_LIGHTNING = """import torch
import lightning as L
from lightning.pytorch.utilities import rank_zero_only


{save_def}


model = Net()
write_init(model, f"{{args.out}}/init.pt")
trainer = L.Trainer(devices=8)
trainer.fit(model)
"""


@pytest.mark.parametrize(("decorator", "reported"), [("", True), ("@rank_zero_only\n", False)])
def test_a_save_every_lightning_rank_runs_before_fit_unless_rank_zero_only(decorator: str, reported: bool) -> None:
    save_def = f"{decorator}def write_init(model, path):\n    torch.save(model.state_dict(), path)"
    found = saves(_LIGHTNING.format(save_def=save_def))
    assert [line for line, _ in found] == ([7] if reported else [])


def test_trainer_methods_by_who_calls_them(tmp_path: Path) -> None:
    """A Trainer subclass in a project module: ``_save_checkpoint`` runs on every rank (a local-rank guard there is
    per node), ``_save`` only where the Trainer saves (no finding)."""
    (tmp_path / "my_trainer.py").write_text(
        "import os\nimport torch\nfrom transformers import Trainer\n\n\nclass MyTrainer(Trainer):\n"
        "    def _save_checkpoint(self, model, trial, metrics=None):\n"
        "        out = os.path.join(self.args.output_dir, 'ckpt')\n"
        "        if self.args.local_rank == 0:\n"
        "            torch.save(self.model.state_dict(), os.path.join(out, 'projector.bin'))\n\n"
        "    def _save(self, output_dir=None, state_dict=None):\n"
        "        torch.save(self.model.state_dict(), os.path.join(output_dir, 'model.bin'))\n")
    (tmp_path / "train.py").write_text(
        "from transformers import TrainingArguments\nfrom my_trainer import MyTrainer\n\n"
        "trainer = MyTrainer(model=model, args=TrainingArguments(output_dir='out'))\ntrainer.train()\n")
    found = [(Path(f.file).name, f.line) for f in check_file(tmp_path / "train.py") if f.code == "DDP006"]
    assert found == [("my_trainer.py", 10)]


@pytest.mark.parametrize(("method", "reported"), [("on_train_epoch_end", True), ("prepare_data", False)])
def test_a_lightning_hook_runs_on_every_rank_and_prepare_data_on_one(
    tmp_path: Path, method: str, reported: bool
) -> None:
    """A LightningModule in a project module: its ``on_*`` hooks run on every rank; ``prepare_data`` runs on one
    process (per node at most), as Lightning calls it."""
    (tmp_path / "net.py").write_text(
        "import torch\nimport lightning as L\n\n\nclass Net(L.LightningModule):\n"
        f"    def {method}(self):\n        torch.save(self.state_dict(), f'{{self.hparams.out}}/last.pt')\n")
    (tmp_path / "train.py").write_text(
        "import lightning as L\nfrom net import Net\n\nL.Trainer(devices=8).fit(Net())\n")
    found = [(Path(f.file).name, f.line) for f in check_file(tmp_path / "train.py") if f.code == "DDP006"]
    assert found == ([("net.py", 7)] if reported else [])


_OWN_TRAINER = """import torch
from transformers import AutoTokenizer, Trainer


class RewardTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False):
        return model(**inputs)[0].mean()


tokenizer = AutoTokenizer.from_pretrained("m")
trainer = RewardTrainer(model=model, args=training_args, train_dataset=data)
trainer.train()
trainer.save_model("out/last")
{save}
"""


@pytest.mark.parametrize(("save", "reported"), [
    ('tokenizer.save_pretrained("out/last")', True),
    ('if trainer.is_world_process_zero():\n    tokenizer.save_pretrained("out/last")', False),
])
def test_a_trainer_subclass_of_the_file_runs_the_script_on_every_rank(save: str, reported: bool) -> None:
    assert [line for line, _ in saves(_OWN_TRAINER.format(save=save))] == ([14] if reported else [])


_SAME_NAME = """import os
import torch
from transformers import Trainer


class PeftTrainer(Trainer):
    def save_model(self, output_dir=None, _internal_call=False):
        torch.save(self.args, os.path.join(output_dir, "training_args.bin"))


def save_model(model, output_dir):
    model.save_pretrained(output_dir)


trainer = PeftTrainer(model=model, args=training_args)
trainer.train()
if trainer.is_world_process_zero():
    save_model(model, training_args.output_dir)
"""


def test_a_function_and_a_trainer_method_of_one_name_are_judged_apart() -> None:
    """The guarded call is the module's ``save_model``; the method of that name the Trainer calls on every rank."""
    assert [line for line, _ in saves(_SAME_NAME)] == [8]
