"""DDP002 in the project's own modules: a collective under a rank condition in a helper the script calls (a trainer
class's validation that waits for everyone only on the main process) hangs the same as in the script; reported in
the helper, as a warning (the helper's rules run at warning severity)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.doctor import check_file

TRAINER = """\
class Trainer:
    def __init__(self, accelerator, model):
        self.accelerator = accelerator
        self.model = model

    def valid(self, step):
        if self.accelerator.is_main_process:
            print(step)
            {body}

    def train(self):
        for step in range(10):
            self.valid(step)
"""

SCRIPT = """\
from accelerate import Accelerator
from trainer import Trainer

accelerator = Accelerator()
model = accelerator.prepare(None)
Trainer(accelerator, model).train()
"""


def _ddp002(tmp_path: Path, body: str) -> list[tuple[str, int, str]]:
    (tmp_path / "trainer.py").write_text(TRAINER.replace("{body}", body))
    (tmp_path / "train.py").write_text(SCRIPT)
    return [(Path(f.file).name, f.line, f.severity) for f in check_file(tmp_path / "train.py") if f.code == "DDP002"]


def test_a_helpers_collective_on_the_main_process_only(tmp_path: Path) -> None:
    assert _ddp002(tmp_path, "self.accelerator.wait_for_everyone()") == [("trainer.py", 9, "warning")]


def test_a_helpers_io_on_the_main_process_is_silent(tmp_path: Path) -> None:
    assert _ddp002(tmp_path, "self.accelerator.save(self.model, 'x.pt')") == []
