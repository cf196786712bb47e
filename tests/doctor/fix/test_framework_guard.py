"""DDP006's fix in a script a framework runs on every rank: the save goes under the framework's own test of the
process that saves, then its own barrier (``fix/framework_guard.py``), written with the script's name for it;
``torch.distributed.get_rank()`` would fail where the script runs as one process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fixcheck import fixed_by_cli

ACCELERATE = '''import torch
from accelerate import Accelerator


def main():
    acc = Accelerator()
    model = acc.prepare(torch.nn.Linear(2, 2))
    torch.save(acc.unwrap_model(model).state_dict(), "model.pt")  # the weights
'''

FABRIC = '''import lightning as L
import torch


def main():
    fabric = L.Fabric(devices="auto")
    fabric.launch()
    model = fabric.setup(torch.nn.Linear(2, 2))
    torch.save(model.state_dict(), "model.pt")
'''

TRANSFORMERS = '''from transformers import Trainer, TrainerCallback, TrainingArguments


class Keep(TrainerCallback):
    def on_save(self, args, state, control, model=None, **kwargs):
        model.save_pretrained("out/last")


def main(model, data):
    trainer = Trainer(model=model, args=TrainingArguments("out"), train_dataset=data, callbacks=[Keep()])
    trainer.train()
    model.save_pretrained("out/final")
'''

LIGHTNING = '''import torch
from lightning.pytorch import Trainer


def main(module, data):
    trainer = Trainer(devices="auto", strategy="ddp")
    trainer.fit(module, data)
    torch.save(module.state_dict(), "final.pt")
'''

HELPER = '''import torch


def save(accelerator, model):
    torch.save(model.state_dict(), "model.pt")


def main():
    from accelerate import Accelerator
    accelerator = Accelerator()
    save(accelerator, accelerator.prepare(torch.nn.Linear(2, 2)))
'''


@pytest.mark.parametrize(("text", "removed", "added"), [
    (ACCELERATE, ['    torch.save(acc.unwrap_model(model).state_dict(), "model.pt")  # the weights'],
     ['    if acc.is_main_process:',
      '        torch.save(acc.unwrap_model(model).state_dict(), "model.pt")  # the weights',
      '    acc.wait_for_everyone()']),
    (FABRIC, ['    torch.save(model.state_dict(), "model.pt")'],
     ['    if fabric.global_rank == 0:', '        torch.save(model.state_dict(), "model.pt")', '    fabric.barrier()']),
    (LIGHTNING, ['    torch.save(module.state_dict(), "final.pt")'],
     ['    if trainer.is_global_zero:', '        torch.save(module.state_dict(), "final.pt")',
      '    trainer.strategy.barrier()']),
    (HELPER, ['    torch.save(model.state_dict(), "model.pt")'],
     ['    if accelerator.is_main_process:', '        torch.save(model.state_dict(), "model.pt")',
      '    accelerator.wait_for_everyone()']),
], ids=["accelerate", "fabric", "lightning", "a helper given the accelerator"])
def test_the_save_is_guarded_by_the_frameworks_own_test_and_barrier(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], text: str,
        removed: list[str], added: list[str]) -> None:
    fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP006", removed, added)


def test_a_trainer_callback_saves_where_the_state_says_and_the_script_after_training_on_the_world_zero(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    fixed = fixed_by_cli(
        tmp_path, monkeypatch, capsys, TRANSFORMERS, "DDP006",
        ['        model.save_pretrained("out/last")', '    model.save_pretrained("out/final")'],
        ['        if state.is_world_process_zero:', '            model.save_pretrained("out/last")',
         '    if trainer.is_world_process_zero():', '        model.save_pretrained("out/final")',
         '    trainer.accelerator.wait_for_everyone()'])
    assert "state.is_world_process_zero:\n            model.save_pretrained(\"out/last\")\n\n\ndef" in fixed


TRAINS = '''"""An Accelerate regression that saves its weights, then every rank reads them back."""
import argparse
import json
from pathlib import Path

import torch
from accelerate import Accelerator


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    accelerator = Accelerator()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model, optimizer = accelerator.prepare(model, optimizer)
    for step in range(6):
        x = torch.randn(8, 4, generator=torch.Generator().manual_seed(step))
        accelerator.backward(torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True)))
        optimizer.step()
        optimizer.zero_grad()
    torch.save(accelerator.unwrap_model(model).state_dict(), out / "model.pt")
    loaded = torch.load(out / "model.pt")
    record = {"world": accelerator.num_processes, "trained": [p.tolist() for p in model.parameters()],
              "loaded": [loaded["weight"].tolist(), loaded["bias"].tolist()]}
    (out / f"rank{accelerator.process_index}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    main()
'''


@pytest.mark.slow
def test_the_fixed_accelerate_script_trains_under_orch_run_and_runs_as_one_process(tmp_path: Path) -> None:
    """Fixed by ``--fix --write``: under ``orch run --nproc 2`` rank 0 alone writes, every rank reads back the weights
    it trained; run as one plain process (no process group, where ``dist.get_rank()`` would fail) it runs too."""
    import importlib.util
    import json
    import subprocess

    from support import ORCH, clean_environ
    if importlib.util.find_spec("accelerate") is None:
        pytest.skip("accelerate is not installed (pip install -e '.[frameworks]')")
    env = clean_environ(CUDA_VISIBLE_DEVICES="")
    script = tmp_path / "train.py"
    script.write_text(TRAINS, encoding="utf-8")
    fix = subprocess.run([ORCH, "doctor", "train.py", "--fix", "--write"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120, check=False)
    assert fix.returncode == 0 and "fixed DDP006 (line 25)" in fix.stderr, fix.stderr
    assert "    if accelerator.is_main_process:\n        torch.save(" in script.read_text(encoding="utf-8")
    ours = subprocess.run([ORCH, "run", "train.py", "--nproc", "2", "--cpu", "--job-root", str(tmp_path / "jobs"),
                           "--", "--out", str(tmp_path / "orch")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=240, check=False)
    assert ours.returncode == 0, ours.stdout + ours.stderr[-3000:]
    ranks = [json.loads((tmp_path / "orch" / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world"] for r in ranks] == [2, 2] and ranks[0]["trained"] == ranks[1]["trained"]
    assert all(r["loaded"] == r["trained"] for r in ranks), ranks
    alone = subprocess.run([sys.executable, "train.py", "--out", str(tmp_path / "alone")], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120, check=False)
    assert alone.returncode == 0, alone.stderr[-3000:]
    record = json.loads((tmp_path / "alone" / "rank0.json").read_text())
    assert record["world"] == 1 and record["loaded"] == record["trained"]
