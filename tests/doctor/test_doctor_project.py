"""orch doctor reads the script's own project (siblings, its package, relative imports) within bounds, keeps
to the catalog's severity policy (no error for a guess), and finds the misses seen on real code (DDP006 per node,
DDP008 argparse defaults, DDP010 through data flow, DDP011..DDP013)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import CATALOG, check_file, check_source
from orchestrator.source.project import MAX_FILES
from orchestrator.spec.doctorcodes import DOCTOR_CODES

PROJECTS = Path(__file__).resolve().parent / "fixtures" / "projects"
_HEAD = "import os\nimport argparse\nimport torch\nimport torch.distributed as dist\n" \
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"


def found(path: Path) -> list[tuple[str, str, int]]:
    return [(f.code, f.severity, f.line) for f in check_file(path)]


def codes(source: str) -> list[tuple[str, str]]:
    return [(f.code, f.severity) for f in check_source(_HEAD + source, "t.py")]


# -- the project -----------------------------------------------------------------------------------
def test_set_device_sampler_seed_and_rank_zero_print_in_a_sibling_module_count() -> None:
    assert found(PROJECTS / "sibling" / "main.py") == []


def test_the_same_script_with_a_helper_that_does_none_of_it_is_reported_as_warnings() -> None:
    assert found(PROJECTS / "sibling_bare" / "main.py") == [
        ("DDP011", "warning", 12), ("DDP001", "warning", 15), ("DDP005", "warning", 21)]


def test_a_package_relative_import_is_followed() -> None:
    assert found(PROJECTS / "pkg_relative" / "pkg" / "train.py") == []


@pytest.mark.parametrize("script", ["unreadable/pkg/train.py", "missing_relative/train.py"])
def test_an_unreadable_or_missing_helper_makes_an_error_a_warning(script: str) -> None:
    findings = check_file(PROJECTS / script)
    assert [(f.code, f.severity) for f in findings] == [("DDP003", "warning")]
    assert "could not be read" in findings[0].message


def test_the_same_loader_without_any_helper_is_an_error(tmp_path: Path) -> None:
    text = (PROJECTS / "missing_relative" / "train.py").read_text()
    script = tmp_path / "train.py"
    script.write_text(text.replace("from .helpers import setup\n", "").replace("    setup()\n", ""))
    # (and DDP001, which the unread helper might have made moot, is reported again: as a warning)
    assert [(f.code, f.severity) for f in check_file(script)] == [("DDP001", "warning"), ("DDP003", "error")]


def test_reading_the_project_is_bounded(tmp_path: Path) -> None:
    """A chain of 200 helper modules: at most MAX_FILES are read (the bound itself, not a timing: speed lives in
    bench/bench_doctor.py)."""
    for i in range(200):
        (tmp_path / f"m{i}.py").write_text(f"import m{i + 1}\n\ndef f():\n    m{i + 1}.f()\n" + "x = 1\n" * 2000)
    (tmp_path / "train.py").write_text(_HEAD + "import m0\n\ndef main():\n    m0.f()\n"
                                       "    dist.init_process_group('nccl')\n"
                                       "    model = DDP(torch.nn.Linear(2, 2).cuda())\n")
    findings = check_file(tmp_path / "train.py")
    assert [f.code for f in findings] == ["DDP001"]  # the helpers bind no device as far as they were read
    import ast

    from orchestrator.doctor.analysis import Analysis
    analysis = Analysis(ast.parse((tmp_path / "train.py").read_text()), str(tmp_path / "train.py"))
    list(analysis.helper_quals)
    assert analysis.project is not None and analysis.project.files_read <= MAX_FILES


def test_a_big_or_broken_sibling_never_breaks_the_check(tmp_path: Path) -> None:
    (tmp_path / "utils.py").write_bytes(b"\x00\xff" * 10)
    (tmp_path / "train.py").write_text(_HEAD + "import utils\nutils.setup()\n")
    assert check_file(tmp_path / "train.py") == []


# -- the severity policy -----------------------------------------------------------------------------
def test_the_catalog_lists_the_codes_the_spec_validates() -> None:
    assert tuple(CATALOG) == DOCTOR_CODES


def test_only_certain_defects_are_errors() -> None:
    assert {c for c, rule in CATALOG.items() if rule.severity == "error"} == {"DDP002", "DDP003", "DDP007", "DDP020"}
    assert CATALOG["DDP001"].severity == "warning" and "orch run/submit bind" in CATALOG["DDP001"].title


def test_ddp001_is_a_warning_also_for_explicit_devices_never_bound() -> None:
    """An explicit device (``.to(f"cuda:{local_rank}")``) places the model, but NCCL's communicator still
    opens on the current device, GPU 0, in every rank (seed 000): a warning, never an error (orch binds)."""
    assert codes("dist.init_process_group('nccl')\nm = torch.nn.Linear(2, 2).cuda()\n") == [("DDP001", "warning")]
    for device in ('f"cuda:{local_rank}"', 'torch.device("cuda", local_rank)', "local_rank"):
        src = (f"local_rank = int(os.environ['LOCAL_RANK'])\ndist.init_process_group('nccl')\n"
               f"m = torch.nn.Linear(2, 2).to({device})\n")
        assert codes(src) == [("DDP001", "warning")], device
        bound = src.replace("dist.init_process_group", "torch.cuda.set_device(local_rank)\ndist.init_process_group")
        assert codes(bound) == [], device
    assert codes("local_rank = int(os.environ['LOCAL_RANK'])\ndist.init_process_group('nccl')\n"
                 "m = torch.nn.Linear(2, 2).cuda(local_rank)\n") == [("DDP001", "warning")]


def test_a_collective_reached_through_a_project_helper_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "comm.py").write_text("import torch.distributed as dist\n\ndef sync():\n    dist.barrier()\n")
    (tmp_path / "train.py").write_text(_HEAD + "import comm\n\ndef main():\n    dist.init_process_group('nccl')\n"
                                       "    if dist.get_rank() == 0:\n        comm.sync()\n"
                                       "    dist.destroy_process_group()\n")
    assert [(f.code, f.severity) for f in check_file(tmp_path / "train.py")] == [("DDP002", "warning")]


# -- extended and new checks ---------------------------------------------------------------------------
def test_ddp010_through_any_data_flow() -> None:
    pre = "dist.init_process_group('nccl')\n"
    assert codes(pre + "rank = dist.get_rank()\ndev = rank\nm = torch.nn.Linear(2, 2).to(dev)\n") == [
        ("DDP001", "warning"), ("DDP010", "warning")]  # and that device never bound (seed 000)
    assert codes(pre + "def setup(args):\n    args.rank = int(os.environ['RANK'])\n"
                       "def main(args):\n    torch.cuda.set_device(args.rank)\n") == [("DDP010", "warning")]
    assert codes(pre + "def bind(r):\n    torch.cuda.set_device(r)\nbind(dist.get_rank())\n") == [
        ("DDP010", "warning")]
    assert codes(pre + "d = torch.device('cuda', int(os.environ['RANK']))\nx = torch.ones(2).to(d)\n") == [
        ("DDP010", "warning"), ("DDP001", "warning")]  # the device used; a device never used is none (below)
    assert codes(pre + "d = torch.device('cuda', int(os.environ['RANK']))\n") == []
    # the global rank as the device id (DDP010), and that device never bound before NCCL (DDP001, seed 000)
    assert codes(pre + "r = dist.get_rank()\nm = DDP(torch.nn.Linear(2, 2), device_ids=[r])\n") == [
        ("DDP001", "warning"), ("DDP010", "warning")]
    # the local rank, the global rank modulo the GPUs, and an mp.spawn worker's index are fine
    assert codes(pre + "def bind(r):\n    torch.cuda.set_device(r)\nbind(int(os.environ['LOCAL_RANK']))\n") == []
    assert codes(pre + "torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())\n") == []
    assert codes("import torch.multiprocessing as mp\ndef work(rank, n):\n    dist.init_process_group('nccl')\n"
                 "    torch.cuda.set_device(rank)\nif 'LOCAL_RANK' not in os.environ:\n"
                 "    mp.spawn(work, args=(2,), nprocs=2)\n") == []


def test_ddp006_per_node_guard_and_wrapper_state_dict() -> None:
    pre = ("local_rank = int(os.environ['LOCAL_RANK'])\ndist.init_process_group('nccl')\n"
           "model = DDP(torch.nn.Linear(2, 2))\n")
    assert codes(pre + "if local_rank == 0:\n    torch.save(model.module.state_dict(), 'ckpt.pt')\n") == [
        ("DDP006", "warning")]
    assert codes(pre + "if dist.get_rank() == 0:\n    torch.save(model.module.state_dict(), 'ckpt.pt')\n") == []
    assert codes(pre + "if dist.get_rank() == 0:\n    torch.save(model.state_dict(), 'ckpt.pt')\n") == [
        ("DDP006", "warning")]
    assert codes(pre + "def save():\n    torch.save(model.module.state_dict(), 'ckpt.pt')\n"
                       "if local_rank == 0:\n    save()\n") == [("DDP006", "warning")]


def test_ddp008_argparse_rendezvous_defaults() -> None:
    pre = "p = argparse.ArgumentParser()\n"
    post = "a = p.parse_args()\ndist.init_process_group('nccl', init_method=a.dist_url)\n"
    bad = codes(pre + "p.add_argument('--dist-url', default='tcp://127.0.0.1:23456')\n" + post)
    assert bad == [("DDP008", "warning")]
    finding = check_source(_HEAD + pre + "p.add_argument('--dist-url', default='tcp://10.1.1.1:23456')\n" + post)[0]
    assert "independent copies" in finding.message and "env://" in finding.message
    assert codes(pre + "p.add_argument('--dist-url', default='env://')\n" + post) == []
    assert codes(pre + "p.add_argument('--master-addr', default='10.0.0.1')\n" + post) == [("DDP008", "warning")]
    assert codes("p = argparse.ArgumentParser()\np.add_argument('--url', default='tcp://x:1')\n") == []  # not DDP


@pytest.mark.parametrize("code", ["DDP011", "DDP012", "DDP013"])
def test_new_codes_have_a_catalog_row(code: str) -> None:
    rule = CATALOG[code]
    assert rule.severity == "warning" and rule.title and rule.fix


def test_ddp002_is_an_error_only_when_the_condition_is_the_rank_alone() -> None:
    body = "def f(flag):\n    dist.init_process_group('nccl')\n    if {test}:\n        return\n    dist.barrier()\n" \
           "    dist.destroy_process_group()\n"
    assert codes(body.format(test="dist.get_rank() != 0")) == [("DDP002", "error")]
    assert codes(body.format(test="not flag and dist.get_rank() != 0")) == [("DDP002", "warning")]


_TRAINER = '''import os

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, loader):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.model = DDP(model.cuda(self.local_rank), device_ids=[self.local_rank])
        self.loader = loader

    def save(self, epoch):
        torch.save({"model": self.model.module.state_dict(), "epoch": epoch}, "checkpoint.pt")

    def load(self, path):
        self.model.module.load_state_dict(torch.load(path)["model"])

    def train(self, epochs):
        for epoch in range(epochs):
            for x, y in self.loader:
                torch.nn.functional.mse_loss(self.model(x.cuda()), y.cuda()).backward()
            SAVE
'''
_USES_TRAINER = '''import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from trainer import Trainer


def main():
    dist.init_process_group("nccl")
    ds = TensorDataset(torch.zeros(8, 4), torch.zeros(8, 2))
    trainer = Trainer(torch.nn.Linear(4, 2), DataLoader(ds, sampler=DistributedSampler(ds, shuffle=False)))
    trainer.load("checkpoint.pt")
    trainer.train(3)
    dist.destroy_process_group()
'''


@pytest.mark.parametrize("save, found", [
    ("self.save(epoch)", [("DDP006", 14), ("DDP009", 17)]),
    ("if torch.distributed.get_rank() == 0:\n                self.save(epoch)", [("DDP009", 17)]),
])
def test_ddp006_ddp009_in_the_methods_of_a_project_class(tmp_path: Path, save: str, found: list[tuple[str, int]]
                                                          ) -> None:
    """A Trainer class in a module of the project: its save() reached unguarded through train(), which the
    script calls on every rank; its load() with no map_location."""
    (tmp_path / "trainer.py").write_text(_TRAINER.replace("SAVE", save))
    (tmp_path / "train.py").write_text(_USES_TRAINER)
    got = [(f.code, f.line, f.severity) for f in check_file(tmp_path / "train.py")]
    assert got == [(code, line, "warning") for code, line in found]


def test_an_absolute_import_beside_its_relative_fallback_is_followed(tmp_path: Path) -> None:
    """``try: from loaders import ...`` / ``except ImportError: from .loaders import ...`` in a script outside a
    package (TorchRec's BERT4Rec): the absolute import is the one that works; the helper is read, and the local
    rank the script hands it reaches a DistributedSampler's rank= there (DDP016, through a method's parameter)."""
    (tmp_path / "loaders.py").write_text(
        "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
        "class Loaders:\n"
        "    def get(self, rank, world_size):\n"
        "        return self._train(rank, world_size)\n\n"
        "    def _train(self, rank, world_size):\n"
        "        sampler = DistributedSampler([1, 2], num_replicas=world_size, rank=rank, shuffle=False)\n"
        "        return DataLoader([1, 2], sampler=sampler)\n")
    script = tmp_path / "main.py"
    script.write_text(_HEAD + "try:\n    from loaders import Loaders\nexcept ImportError:\n"
                      "    from .loaders import Loaders\n\n"
                      "rank = int(os.environ['LOCAL_RANK'])\ndist.init_process_group('nccl')\n"
                      "loader = Loaders().get(rank, dist.get_world_size())\n"
                      "model = DDP(torch.nn.Linear(2, 2).cuda(rank), device_ids=[rank])\n")
    findings = [(Path(f.file).name, f.code, f.line) for f in check_file(script)]
    # (DDP001: the device named in .cuda(rank)/device_ids is never bound before NCCL: seed 000's warning)
    assert findings == [("main.py", "DDP001", 14), ("loaders.py", "DDP016", 9)]


def test_a_rank_zero_flag_set_in_the_script_guards_a_save_in_its_helper(tmp_path: Path) -> None:
    """Chinese-CLIP: ``args.should_save = (args.logs is not None) and is_master(args)`` in the script, ``if
    args.should_save: torch.save(...)`` in the training module it calls: one writer, no DDP006. A flag the
    script does not set that way is not a guard."""
    (tmp_path / "engine.py").write_text(
        "import os\nimport torch\n\n\n"
        "def train(model, args):\n"
        "    for step in range(3):\n"
        "        model(torch.zeros(2, 2)).sum().backward()\n"
        "        if args.should_save:\n"
        "            torch.save(model.module.state_dict(), os.path.join(args.logs, 'latest.pt'))\n"
        "        if args.verbose:\n"
        "            torch.save(model.module.state_dict(), os.path.join(args.logs, 'every.pt'))\n")
    script = tmp_path / "main.py"
    script.write_text(_HEAD + "from engine import train\n\n\ndef is_master(args):\n    return args.rank == 0\n\n\n"
                      "def main(args):\n    dist.init_process_group('nccl')\n    args.rank = dist.get_rank()\n"
                      "    args.should_save = (args.logs is not None and args.logs != '') and is_master(args)\n"
                      "    args.verbose = args.logs is not None\n"
                      "    train(DDP(torch.nn.Linear(2, 2).cuda()), args)\n")
    findings = [(Path(f.file).name, f.code, f.line) for f in check_file(script) if f.code == "DDP006"]
    assert findings == [("engine.py", "DDP006", 11)]


def test_a_helper_that_binds_the_gpu_makes_the_script_a_cuda_one_for_ddp009(tmp_path: Path) -> None:
    """CodeT5: the device is bound in configs.set_dist (torch.cuda.set_device); run_gen.py then reloads its best
    checkpoint with torch.load and no map_location: every rank loads it onto the GPU it was saved from."""
    (tmp_path / "configs.py").write_text(
        "import torch\n\n\ndef set_dist(args):\n    torch.cuda.set_device(args.local_rank)\n"
        "    args.device = torch.device('cuda', args.local_rank)\n"
        "    torch.distributed.init_process_group(backend='nccl')\n")
    script = tmp_path / "run_gen.py"
    script.write_text(_HEAD + "from configs import set_dist\n\n\ndef main(args, model):\n    set_dist(args)\n"
                      "    model.to(args.device)\n    file = os.path.join(args.output_dir, 'best/model.bin')\n"
                      "    model.load_state_dict(torch.load(file))\n")
    assert [(f.code, f.line) for f in check_file(script) if f.code == "DDP009"] == [("DDP009", 13)]


@pytest.mark.parametrize("alias", ["Exp = Exp_Forecast", "Exp = Exp_Forecast if args.task == 'f' else None"])
def test_a_class_alias_is_followed_to_its_methods(tmp_path: Path, alias: str) -> None:
    """``Exp = Exp_Forecast; exp = Exp(args); exp.train()``: the alias's class is the project's (its torch.load
    without map_location is DDP009); a conditional value is not an alias (nothing is followed)."""
    (tmp_path / "exp_forecast.py").write_text(
        "import torch\n\n\nclass Exp_Forecast:\n    def __init__(self, args):\n        self.args = args\n\n"
        "    def train(self):\n        return torch.load(self.args.ckpt)\n")
    (tmp_path / "run.py").write_text(
        _HEAD + "from exp_forecast import Exp_Forecast\n\nif __name__ == '__main__':\n"
        "    args = argparse.ArgumentParser().parse_args()\n    dist.init_process_group('nccl')\n"
        f"    torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n    {alias}\n    exp = Exp(args)\n"
        "    exp.train()\n")
    got = [(Path(f.file).name, f.code, f.line) for f in check_file(tmp_path / "run.py")]
    assert got == ([("exp_forecast.py", "DDP009", 9)] if alias == "Exp = Exp_Forecast" else [])
