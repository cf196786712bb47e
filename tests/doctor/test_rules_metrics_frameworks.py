"""DDP013 where the shard is a framework's or a library's: a loader sharded by Fabric's ``setup_dataloaders``, by
Accelerate's ``prepare`` or by a HF Trainer's ``get_eval_dataloader``, a metric printed by ``fabric.print`` /
``accelerator.print`` / ``trainer.log``; an averager (``meter.update``, ``meter.avg``) of the rank's own batches; and
the last batch's value printed where the loop's total was reduced. Each with the correct code the rule keeps
quiet on."""

from __future__ import annotations

from orchestrator.doctor import check_source

_FABRIC = """import torch
import lightning as L

def validate(fabric, model, val_loader):
    losses = torch.zeros(10)
    for k, batch in enumerate(val_loader):
        losses[k] = model(batch).mean().item()
    out = losses.mean()
{reduce}    return out

def main():
    fabric = L.Fabric(accelerator="cuda", devices=2, num_nodes=2)
    fabric.launch()
    model, optimizer = fabric.setup(torch.nn.Linear(2, 2), torch.optim.SGD([], lr=0.1))
    train_loader, val_loader = fabric.setup_dataloaders(make(), make())
    for step, batch in enumerate(train_loader):
        fabric.backward(model(batch).sum())
        optimizer.step()
        if step % 100 == 0:
            val_loss = validate(fabric, model, val_loader)
            val_loss = val_loss.item()
            fabric.print(f"step {{step}}: val loss {{val_loss:.4f}}")
"""


def lines(source: str, code: str = "DDP013") -> list[int]:
    return [f.line for f in check_source(source, "t.py") if f.code == code]


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_a_fabric_validation_mean_over_the_ranks_shard_printed_by_fabric_print_is_reported() -> None:
    source = _FABRIC.format(reduce="")
    assert lines(source) == [line_of(source, "fabric.print(")]


def test_a_fabric_validation_that_all_reduces_its_mean_is_not_reported() -> None:
    assert lines(_FABRIC.format(reduce="    out = fabric.all_reduce(out, reduce_op='mean')\n")) == []


def test_a_torchmetrics_metric_read_by_compute_is_not_reported() -> None:
    source = _FABRIC.format(reduce="").replace(
        "            val_loss = validate(fabric, model, val_loader)\n            val_loss = val_loss.item()\n"
        "            fabric.print(f\"step {step}: val loss {val_loss:.4f}\")\n",
        "            for batch in val_loader:\n                val_acc.update(model(batch), batch)\n"
        "            fabric.print(f\"val acc {val_acc.compute():.4f}\")\n")
    assert "val_acc.compute()" in source
    assert lines(source) == []


_ACCELERATE = """import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader

def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    train_loader = DataLoader(train_set, batch_size=8, shuffle=True)
    eval_loader = DataLoader(eval_set, batch_size=8)
    model, optimizer, train_loader{prepared} = accelerator.prepare(model, optimizer, train_loader{prepared})
    for epoch in range(3):
        for batch in train_loader:
            accelerator.backward(model(**batch).loss)
            optimizer.step()
        eval_loss = 0
        preds = []
        for batch in eval_loader:
            with torch.no_grad():
                outputs = model(**batch)
            {sum}
            preds.append(accelerator.gather_for_metrics(outputs.logits.argmax(-1)))
        eval_epoch_loss = eval_loss / len(eval_loader)
        accelerator.print(f"{{epoch=}} {{eval_epoch_loss=}}")
"""
_SUMMED = "eval_loss += outputs.loss.detach().float()"
_GATHERED = "eval_loss += accelerator.gather_for_metrics(outputs.loss.detach()).mean()"


def test_accelerate_eval_sums_of_a_prepared_loader_never_gathered_are_reported() -> None:
    source = _ACCELERATE.format(prepared=", eval_loader", sum=_SUMMED)
    assert lines(source) == [line_of(source, "accelerator.print(")]


def test_accelerate_eval_sums_kept_in_a_dict_and_logged_by_a_comprehension_are_reported() -> None:
    # mca_fusion's `losses[k] += v` over the prepared eval loader, `accelerator.log({k: v / len(dl) for ...})`
    summed = "losses['loss'] += outputs.loss.detach().float()"
    shown = ('        eval_epoch_loss = eval_loss / len(eval_loader)\n'
             '        accelerator.print(f"{epoch=} {eval_epoch_loss=}")')
    source = _ACCELERATE.format(prepared=", eval_loader", sum=summed).replace(
        shown, "        accelerator.log({'val_' + k: v / len(eval_loader) for k, v in losses.items()})")
    assert "losses.items()" in source
    assert lines(source) == [line_of(source, "accelerator.log(")]
    gathered = source.replace("+= outputs.loss", "+= accelerator.gather_for_metrics(outputs.loss)")
    assert lines(gathered) == []


def test_accelerate_eval_sums_that_are_gathered_or_of_an_unprepared_loader_are_not_reported() -> None:
    assert lines(_ACCELERATE.format(prepared=", eval_loader", sum=_GATHERED)) == []
    assert lines(_ACCELERATE.format(prepared="", sum=_SUMMED)) == []  # the whole set on every rank


_METER = """import logging
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

logger = logging.getLogger(__name__)

def valid(model, test_loader):
    eval_losses = AverageMeter()
    correct = 0
    for x, y in test_loader:
        logits = model(x)
        eval_losses.update(torch.nn.functional.cross_entropy(logits, y).item())
        correct += (logits.argmax(-1) == y).sum()
    accuracy = torch.tensor(correct)
    dist.all_reduce(accuracy)
{reduce}    logger.info("Valid Loss: %2.5f" % eval_losses.avg)
    return accuracy

def main():
    dist.init_process_group("nccl")
    model = DDP(Net().cuda())
    test_loader = DataLoader(test_set, sampler=DistributedSampler(test_set), batch_size=8)
    valid(model, test_loader)
"""


def test_an_averager_of_the_ranks_own_batches_is_reported_though_another_value_is_reduced() -> None:
    source = _METER.format(reduce="")
    assert lines(source) == [line_of(source, "Valid Loss")]


def test_an_averager_whose_sums_are_reduced_is_not_reported() -> None:
    reduce = ("    totals = torch.tensor([eval_losses.sum, eval_losses.count])\n    dist.all_reduce(totals)\n"
              "    eval_losses.sum, eval_losses.count = totals.tolist()\n")
    assert lines(_METER.format(reduce=reduce)) == []


_LAST_BATCH = """import torch
from accelerate import Accelerator

def main():
    accelerator = Accelerator()
    model, optimizer, train_loader, test_loader = accelerator.prepare(model, optimizer, train_loader, test_loader)
    for data in train_loader:
        accelerator.backward(model(data)["loss"])
    total_psnr = 0
    for data in test_loader:
        psnr = model(data)["psnr"]
        total_psnr += psnr.detach()
    total_psnr = accelerator.gather_for_metrics(total_psnr).mean()
    if accelerator.is_main_process:
        accelerator.print(f"psnr: {{{shown}:.4f}}")
"""


def test_the_last_batchs_value_printed_where_the_loops_total_was_reduced_is_reported() -> None:
    source = _LAST_BATCH.format(shown="psnr")
    found = [f for f in check_source(source, "t.py") if f.code == "DDP013"]
    assert [f.line for f in found] == [line_of(source, "accelerator.print(")]
    assert "last batch" in found[0].message


def test_the_reduced_total_printed_is_not_reported() -> None:
    assert lines(_LAST_BATCH.format(shown="total_psnr")) == []


_TRAINER = """import os
import torch
import transformers

def train(args, model, train_set, extra_set):
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    trainer = transformers.Trainer(model=model, args=args, train_dataset=train_set)

    class ExtraEvalCallback(transformers.TrainerCallback):
        def on_evaluate(self, args, state, control, model, **kwargs):
            data_loader = trainer.get_eval_dataloader(extra_set)
            extra_loss = 0
            for batch in data_loader:
                loss, logits, labels = trainer.prediction_step(trainer.model, batch, prediction_loss_only=False)
                {sum}
            results = {{"extra_loss": extra_loss / len(data_loader)}}
            trainer.log(results)

    trainer.add_callback(ExtraEvalCallback)
    trainer.train()
"""


def test_a_trainer_callback_summing_its_sharded_eval_loader_and_logging_it_is_reported() -> None:
    source = _TRAINER.format(sum="extra_loss += loss.item()")
    assert lines(source) == [line_of(source, "trainer.log(")]


def test_a_trainer_callback_that_gathers_its_sums_is_not_reported() -> None:
    gathered = "extra_loss += trainer.accelerator.gather_for_metrics(loss).mean().item()"
    assert lines(_TRAINER.format(sum=gathered)) == []
