"""An installed package's spawner as a launch fact (orchestrator/launchstyles/installed.py): detectron2's ``launch``
starts its processes per machine, so a script that calls it is ``per-node``; a launcher check keeps it from being a
fact, and a function of the same name from elsewhere is none."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor.check import check_files
from orchestrator.launchstyles import detect, read

_MAIN = ("import torch\nfrom torch.nn.parallel import DistributedDataParallel\n\n\ndef main(args):\n"
         "    model = DistributedDataParallel(torch.nn.Linear(2, 2))\n\n\n")


@pytest.mark.parametrize("imported", [
    "from detectron2.engine import launch\n", "from detectron2.engine.launch import launch\n"])
def test_detectron2s_launch_is_per_node_with_its_line(tmp_path: Path, imported: str) -> None:
    script = tmp_path / "train_net.py"
    script.write_text(imported + _MAIN + "if __name__ == '__main__':\n    args = parse()\n"
                      "    launch(main, args.num_gpus, num_machines=args.num_machines, machine_rank=args.machine_rank,"
                      " dist_url=args.dist_url, args=(args,))\n", encoding="utf-8")
    launch = detect(read(script))
    assert launch.style == "per-node"
    assert launch.why.startswith("train_net.py:12: launch(main, args.num_gpus, num_machines=args.num_machines")
    assert [s.call for s in read(script).spawns] == ["launch(nprocs=args.num_gpus)"]
    assert not any(f.code == "DDP014" for f in check_files([script]))  # the doctor reports no spawn of its own


@pytest.mark.parametrize("source", [
    # a launcher check around the call: under torchrun it is not called
    "from detectron2.engine import launch\n" + _MAIN + "if 'LOCAL_RANK' in os.environ:\n    main(None)\n"
    "else:\n    launch(main, 8)\n",
    # a launch of another package (a job launcher), and the project's own launch function that spawns nothing
    "from submitit import launch\n" + _MAIN + "launch(main, 8)\n",
    _MAIN + "def launch(fn, n):\n    fn(n)\n\n\nlaunch(main, 8)\n"])
def test_no_per_node_fact_without_detectron2s_unguarded_launch(tmp_path: Path, source: str) -> None:
    script = tmp_path / "train.py"
    script.write_text("import os\n" + source, encoding="utf-8")
    assert (read(script).spawns, detect(read(script)).style) == ((), "env")
