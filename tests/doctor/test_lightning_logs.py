"""DDP013 in a LightningModule's validation hooks: ``self.log``/``self.log_dict`` with no ``sync_dist=True`` records
rank 0's shard of the validation set (EGTR's ``validation_epoch_end``), as does ``rank_zero_only=True``, with
``sync_dist=True`` too (uni2ts's). Silent with ``sync_dist=True``, for a
torchmetrics object or its ``compute()``, in a hook that gathers itself, in the test hooks, outside a
LightningModule, and where the file keeps Lightning from sharding the loaders."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source
from orchestrator.doctor.confidence import TRAINING_SUMMARY

_MODULE = """
import torch
import lightning.pytorch as pl


class Base(pl.LightningModule):
    pass


class Model({base}):
    def validation_step(self, batch, batch_idx):
        loss = self.layer(batch).sum()
        {log}
        return loss

    def test_step(self, batch, batch_idx):
        self.log("test_loss", self.layer(batch).sum())


trainer = pl.Trainer(devices=8, num_nodes=2, strategy="ddp"{trainer})
"""


def ddp013(log: str, base: str = "Base", trainer: str = "") -> list[int]:
    source = _MODULE.format(log=log, base=base, trainer=trainer)
    return [f.line for f in check_source(source, "t.py") if f.code == "DDP013"]


@pytest.mark.parametrize("log", [
    'self.log("val_loss", loss)',
    'self.log("val_loss", loss, on_epoch=True, sync_dist=False)',
    'self.log_dict({"val_loss": loss.item(), "epoch": self.current_epoch})',
    'self.log("val_loss", loss, sync_dist=True, rank_zero_only=True)',  # Lightning's sync is then its no-op
    'self.log_dict({"val_loss": loss}, rank_zero_only=True)',
])
def test_an_unsynced_validation_log_is_reported(log: str) -> None:
    assert ddp013(log) == [13]


def test_rank_zero_only_is_named_as_why_it_is_not_synced() -> None:
    source = _MODULE.format(log='self.log("val_loss", loss, sync_dist=True, rank_zero_only=True)', base="Base",
                            trainer="")
    [found] = [f for f in check_source(source, "t.py") if f.code == "DDP013"]
    assert "rank_zero_only=True (Lightning then skips sync_dist)" in found.message


@pytest.mark.parametrize(("log", "base", "trainer"), [
    ('self.log("val_loss", loss, sync_dist=True)', "Base", ""),
    ('self.log("val_loss", loss, sync_dist=True, rank_zero_only=False)', "Base", ""),
    ('self.log("val_acc", self.val_acc)', "Base", ""),  # a torchmetrics object syncs itself
    ('self.log_dict(self.val_metrics.compute())', "Base", ""),
    ('value = self.val_metric.compute()\n        self.log("val_r2", value)', "Base", ""),  # held in a name
    ('self.log("val_loss", self.all_gather(loss).mean())', "Base", ""),  # gathered in the hook
    ('self.log("val_loss", loss)', "torch.nn.Module", ""),  # not a LightningModule
    ('self.log("val_loss", loss)', "Base", ", use_distributed_sampler=False"),  # the loaders are not sharded
])
def test_a_synced_value_or_an_unsharded_set_is_not(log: str, base: str, trainer: str) -> None:
    assert ddp013(log, base, trainer) == []


_SPREAD = """
import lightning.pytorch as pl


class Model(pl.LightningModule):
    def _log_output(self, output, phase, **kwargs):
        for k, v in output.items():
            self.log(f"{phase}_{k}", v, prog_bar=True, **kwargs)

    def validation_step(self, batch, batch_idx):
        self._log_output({"loss": self.layer(batch).sum()}, "val", on_epoch=True{sync})
"""


@pytest.mark.parametrize(("sync", "found"), [("", [8]), (", sync_dist=True", []), (", **self.log_kwargs", [])])
def test_a_log_handed_its_methods_keywords_is_synced_as_its_callers_say(sync: str, found: list[int]) -> None:
    """GR-MG's ``_log_output(output, phase="val", on_epoch=True, on_step=False)``: every call seen, none passes
    ``sync_dist``; context_general_bci's ``common_log(..., sync_dist=True)`` passes it."""
    assert [f.line for f in check_source(_SPREAD.replace("{sync}", sync), "t.py") if f.code == "DDP013"] == found


_THROUGH = """
import lightning.pytorch as pl


class Base(pl.LightningModule):
    def log_metrics(self, loss, stage):
        self.log_dict({f"{stage}/loss": loss}SYNC)

    def _do_step(self, batch, stage):
        loss = self.layer(batch).sum()
        self.log_metrics(loss, stage)
        return loss


class Model(Base):
    def training_step(self, batch, batch_idx):
        return self._do_step(batch, "train")

    def validation_step(self, batch, batch_idx):
        return self._do_step(batch, "val")
"""


@pytest.mark.parametrize(("sync", "found"), [("", [7]), (", sync_dist=True", []),
                                             (", **kwargs", [])])  # a spread may carry sync_dist
def test_a_log_in_a_method_the_validation_hook_reaches(sync: str, found: list[int]) -> None:
    # ProteinWorkshop: validation_step -> _do_step -> log_metrics -> self.log_dict, said once at the log
    source = _THROUGH.replace("SYNC", sync)
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP013"] == found


_GATHERED_THEN_HELPER = """
import torch
import lightning.pytorch as pl


class Model(pl.LightningModule):
    def _log_metrics(self, results):
        self.log("val/epe", results["epe"], sync_dist=False, rank_zero_only=True)

    def on_validation_epoch_end(self):
        {gather}
        if self.global_rank != 0:
            return
        self._log_metrics({{"epe": (sums / counts).mean()}})
"""


@pytest.mark.parametrize(("gather", "found"), [
    ("sums, counts = self.metric.sums, self.metric.counts", [8]),  # rank 0's own sums
    ("sums, counts = self.metric.gather(self.all_gather)", []),  # ZeroFlow: every rank's, then rank 0 logs
    ("sums, counts = self.all_gather(self.metric.sums).sum(0), self.all_gather(self.metric.counts).sum(0)", []),
])
def test_a_hook_that_gathers_before_a_helper_logs_is_not_reported(gather: str, found: list[int]) -> None:
    source = _GATHERED_THEN_HELPER.format(gather=gather)
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP013"] == found


_GATHERED_BY_A_HELPER = """
import torch
import lightning.pytorch as pl
import utils


class Model(pl.LightningModule):
    def validation_epoch_end(self, outputs):
        gathered = self.gather_outputs(outputs)
        self.log("val_acc", gathered.float().mean())

    def gather_outputs(self, outputs):
        {gather}
        {log}
        return torch.cat(merged)
"""


@pytest.mark.parametrize(("gather", "log", "found"), [
    ("merged = utils.all_gather(outputs)", "", []),  # AdaFace: every rank's outputs come back, then logged
    ("merged = list(outputs)", "", [10]),  # nothing gathered: rank 0's shard
    # a helper that gathers and logs is judged on its own (its logs are left as before): it clears no other log
    ("merged = utils.all_gather(outputs)", 'self.log("n", len(outputs))', [10]),
])
def test_a_hook_whose_helper_method_gathers_is_not_reported(gather: str, log: str, found: list[int]) -> None:
    source = _GATHERED_BY_A_HELPER.format(gather=gather, log=log)
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP013"] == found


_NO_VALIDATION = """
import torch
import lightning.pytorch as pl
from torch.utils.data import DataLoader


class Data(pl.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(range(8))

    def val_dataloader(self):
        {val}


class Model(pl.LightningModule):
    def validation_epoch_end(self, outputs):
        self.log("validation_loss", torch.stack(outputs).mean())


trainer = pl.Trainer(devices=8, num_nodes=2, strategy="ddp")
data = Data()
trainer.fit(Model(), {fit})
"""


@pytest.mark.parametrize(("val", "fit", "found"), [
    ("pass", "data", []),  # MolFormer: its DataModule gives no validation loader, so no validation hook runs
    ("return None", "datamodule=data", []),
    ("pass", "DataLoader(range(8))", []),  # a training loader alone
    ("return DataLoader(range(8))", "data", [17]),  # a validation loader: its hook runs on every rank's shard
    ("pass", "data, DataLoader(range(4))", [17]),  # val_dataloaders given
    ("pass", "datamodule=make_data()", [17]),  # a data module that cannot be read
])
def test_no_validation_data_no_validation_hook(val: str, fit: str, found: list[int]) -> None:
    source = _NO_VALIDATION.format(val=val, fit=fit)
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP013"] == found


_STEP_TYPE = """
import torch
import lightning.pytorch as pl
from pytorch_lightning.utilities.distributed import all_gather_ddp_if_available


class Model(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return self._step(batch, batch_idx, "train")

    def validation_step(self, batch, batch_idx):
        return self._step(batch, batch_idx, VAL)

    def _step(self, batch, batch_idx, step_type):
        loss = self.layer(batch).sum()
        if step_type TEST "train":
            self.log("loss", loss, on_step=True, on_epoch=True)
        else:
            self.log("loss_val", loss)
        return loss

    def validation_epoch_end(self, outputs):
        self.log("psnr", EPOCH)
"""


@pytest.mark.parametrize(("val", "test", "found"), [
    ('step_type="val"', "==", [19]),  # auto_avsr's _step: the training side is never the hook's
    ('"val"', "!=", [17]),
    ('"train"', "==", [17]),  # the hook passes "train": that side is its own
    ("step", "==", [17, 19]),  # not a constant: both sides may run
])
def test_a_helpers_side_the_hooks_constant_never_takes_is_not_reported(val: str, test: str,
                                                                        found: list[int]) -> None:
    source = _STEP_TYPE.replace("VAL", val).replace("TEST", test).replace(
        "EPOCH", "all_gather_ddp_if_available(torch.stack(outputs)).mean()")
    assert _validation_logs(source) == found


def _validation_logs(source: str) -> list[int]:
    """The DDP013 lines of the validation hooks (the training hook's epoch-level log is a training summary, reported
    on its own: tests/doctor/test_lightning_logs_training.py)."""
    return [f.line for f in check_source(source, "t.py") if f.code == "DDP013" and TRAINING_SUMMARY not in f.marks]


def test_lightnings_own_gather_utility_reduces_the_epoch_value() -> None:
    # ngp_pl's validation_epoch_end: all_gather_ddp_if_available(psnrs).mean() is every rank's
    source = _STEP_TYPE.replace("VAL", '"val"').replace("TEST", "==")
    gathered = source.replace("EPOCH", "all_gather_ddp_if_available(torch.stack(outputs)).mean()")
    local = source.replace("EPOCH", "torch.stack(outputs).mean()")
    assert _validation_logs(gathered) == [19]
    assert _validation_logs(local) == [19, 23]


_OWN_LOG = """
import torch
import lightning.pytorch as pl


class Base(pl.LightningModule):
    def log(self, key, data):  # the project's own: it gathers every rank's values before rank 0 writes them
        self._log[key].append(data)


class Model(Base):
    def validation_step(self, batch, batch_idx):
        loss = self.layer(batch).sum()
        self.log("val_loss", loss)
        self.log_dict({"val_loss": loss})
"""


def test_a_log_the_class_defines_itself_is_not_lightnings() -> None:
    """mdgen's and scalar-fields' ``def log(self, key, data)``: ``self.log`` is the project's, not Lightning's; the
    ``log_dict`` the class does not define is still Lightning's."""
    assert [f.line for f in check_source(_OWN_LOG, "t.py") if f.code == "DDP013"] == [15]


_OWN_DATA = """
import torch
import lightning.pytorch as pl
from sklearn.svm import SVC
from features import features

class Model(pl.LightningModule):
    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self.layer(batch).sum())

    def validation_epoch_end(self, outputs):
        train_acc, val_acc = self.svm_validation(self.datamodule)
        self.log("svm_val_acc", val_acc)
        self.log("mean_out", torch.stack(outputs).mean())

    def svm_validation(self, datamodule):
        x, y = features({loader})
        svm = SVC(kernel="linear")
        svm.fit(x, y)
        return svm.score(x, y), svm.score(x, y)
"""


@pytest.mark.parametrize(("loader", "found"), [
    ("datamodule.train_dataloader()", [9, 14]),  # point2vec: an SVM fitted on loaders the module fetches itself
    ("self.svm_batches", [9, 13, 14]),  # features of what it kept from its own shard's batches
])
def test_a_value_from_loaders_the_module_fetches_itself_is_the_whole_sets(loader: str, found: list[int]) -> None:
    """Lightning shards only the loaders it asks for; scikit-learn's ``svm.fit`` is not a Trainer's fit (which, with
    no validation data handed, would silence the validation hooks)."""
    source = _OWN_DATA.format(loader=loader)
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP013"] == found
