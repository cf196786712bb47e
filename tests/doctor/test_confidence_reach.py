"""A finding in a project module is only as sure as the script's reaching it: in a function, class or method that
the script's calls reach (or that runs on import), at most likely; in one nothing the script calls reaches (the
helper module's own ``main()``), possible, shown only with --all."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_files, confidence

SCRIPT = """\
import os
import torch
import torch.distributed as dist
import ckpt

dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
model = torch.nn.Linear(2, 2).cuda()
ckpt.resume(model, "last.pt")
"""

# resume() is called by the script; main() is the module's own command line, which the script never runs;
# evaluate() is handed on by name (a callback) from resume(); Runner is registered at import time.
HELPER = """\
import torch


def resume(model, path):
    model.load_state_dict(torch.load(path))
    run_later(evaluate)


def run_later(fn):
    return fn


def evaluate(model, path):
    model.load_state_dict(torch.load(path))


class Runner:
    def restore(self, model, path):
        model.load_state_dict(torch.load(path))


RUNNERS = {"default": Runner}


def main():
    model = torch.nn.Linear(2, 2)
    model.load_state_dict(torch.load("other.pt"))


if __name__ == "__main__":
    main()
"""


def test_a_helper_finding_where_the_script_never_reaches_is_possible(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confidence, "MEASURED_WEAK", {})  # the reach alone (DDP009 in a helper is measured weak)
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "ckpt.py").write_text(HELPER)
    found = {f.line: f.confidence for f in check_files([tmp_path / "train.py"]) if f.code == "DDP009"}
    assert found == {5: "likely", 14: "likely", 19: "likely", 27: "possible"}


MAIN_BLOCK = """\
import torch


def resume(model, path):
    model.load_state_dict(torch.load(path))


if __name__ == "__main__":
    model = torch.nn.Linear(2, 2)
    model.load_state_dict(torch.load("other.pt"))
"""


def test_a_helpers_main_block_never_runs_on_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confidence, "MEASURED_WEAK", {})  # the reach alone (DDP009 in a helper is measured weak)
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "ckpt.py").write_text(MAIN_BLOCK)
    found = {f.line: f.confidence for f in check_files([tmp_path / "train.py"]) if f.code == "DDP009"}
    assert found == {5: "likely", 10: "possible"}


def test_a_helper_finding_of_a_code_measured_weak_there_is_possible_and_says_why(tmp_path: Path) -> None:
    """DDP009 in a helper module was right in few of its findings on code never seen (confidence.MEASURED_WEAK):
    there it is possible, its evidence saying so; the same load in the script itself stays likely."""
    (tmp_path / "train.py").write_text(SCRIPT + "model.load_state_dict(torch.load('first.pt'))\n")
    (tmp_path / "ckpt.py").write_text(MAIN_BLOCK)
    found = {(Path(f.file).name, f.line): f for f in check_files([tmp_path / "train.py"]) if f.code == "DDP009"}
    helper, script = found[("ckpt.py", 5)], found[("train.py", SCRIPT.count("\n") + 1)]
    right, of = confidence.MEASURED_WEAK[("DDP009", "helper")]
    assert helper.confidence == "possible"
    assert helper.evidence.endswith(f"this check in a helper module was right in {right} of {of} findings on code "
                                    "never seen")
    assert script.confidence == "likely" and "never seen" not in script.evidence


SAVER = """\
import torch


def save(model, args, path):
    if args.local_rank == 0:
        torch.save(model.state_dict(), path)


def export(model, path):
    torch.save(model.state_dict(), path)
"""


def test_a_helpers_one_writer_per_node_is_a_variant_measured_sound(tmp_path: Path) -> None:
    """DDP006 in a helper module is measured weak, but not its one-writer-per-node variant (a save under a local-rank
    guard: confidence.SOUND_VARIANTS): that stays likely, marked as such; the helper's unguarded save is possible."""
    (tmp_path / "train.py").write_text(SCRIPT.replace("import ckpt", "import ckpt\nimport saver") +
                                       "args = None\nsaver.save(model, args, 'last.pt')\nsaver.export(model, 'm.pt')\n")
    (tmp_path / "ckpt.py").write_text(MAIN_BLOCK)
    (tmp_path / "saver.py").write_text(SAVER)
    found = {f.line: f for f in check_files([tmp_path / "train.py"]) if f.code == "DDP006"
             and Path(f.file).name == "saver.py"}
    assert (found[6].confidence, confidence.PER_NODE_WRITER in found[6].marks) == ("likely", True)
    assert found[10].confidence == "possible" and "never seen" in found[10].evidence


LOGGED = """\
import logging
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

logger = logging.getLogger(__name__)


def main(loader):
    dist.init_process_group("nccl")
    model = DDP(torch.nn.Linear(2, 2).cuda())
    for step, batch in enumerate(loader):
        loss = model(batch).sum()
        loss.backward()
        {line}
"""


def test_a_loss_logged_in_the_script_is_possible_but_a_printed_one_stays_likely(tmp_path: Path) -> None:
    """DDP005 in the script was measured weak on code never seen (confidence.MEASURED_WEAK: its logger, writer and
    bar lines), but not its ``print`` (confidence.SOUND_VARIANTS): a print is every rank's line on the console."""
    right, of = confidence.MEASURED_WEAK[("DDP005", "entry")]
    found = {}
    for line in ("logger.info('loss %f', loss.item())", "print('loss', loss.item())"):
        (tmp_path / "train.py").write_text(LOGGED.format(line=line))
        (found[line.split("(")[0]],) = [f for f in check_files([tmp_path / "train.py"]) if f.code == "DDP005"]
    assert found["logger.info"].confidence == "possible"
    assert found["logger.info"].evidence.endswith(f"this check in a script was right in {right} of {of} findings on "
                                                  "code never seen")
    assert (found["print"].confidence, confidence.PRINTED in found["print"].marks) == ("likely", True)


LIGHTNING = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def validation_step(self, batch, batch_idx):
        loss = self.layer(batch).sum()
        self.log("val_loss", loss)


trainer = L.Trainer(devices=2, strategy="ddp")
trainer.fit(Model(), train_dataloaders=train, val_dataloaders=val)
"""


def test_a_lightning_hooks_unsynced_log_stays_likely_in_a_script_and_in_a_helper(tmp_path: Path) -> None:
    """DDP013 was measured weak on code never seen (confidence.MEASURED_WEAK), but not its LightningModule hook's
    ``self.log`` with no ``sync_dist`` (confidence.SOUND_VARIANTS): shown by default, marked as such."""
    (tmp_path / "train.py").write_text(LIGHTNING)
    (found,) = [f for f in check_files([tmp_path / "train.py"]) if f.code == "DDP013"]
    assert (found.confidence, confidence.LIGHTNING_LOG in found.marks) == ("likely", True)
    assert confidence.measured_weak("DDP013", True, found.marks) is None
    assert confidence.measured_weak("DDP013", True) == confidence.MEASURED_WEAK[("DDP013", "helper")]
