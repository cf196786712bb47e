"""Sweeps as one Slurm job array, and the Python API on orch's own script.

* ``orch submit JOB --sweep k=a,b --sweep k2=c,d [--array-throttle N]``: the cartesian product as one
  ``--array``, element I in ``<job folder>/I`` with its own job.json; dry run (text and JSON) shows
  the elements; the script passes ``bash -n`` (and shellcheck where installed) and sbatch's parser.
* ``orchestrator.submit``/``sweep`` queue exactly the script ``orch submit`` queues (stub sbatch
  records it), byte for byte once the job folder is masked, for a plain job and a sweep.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support import TESTS, load_stub_module

from orchestrator import api
from orchestrator.cli import main
from orchestrator.errors import ConfigError
from orchestrator.records.jobdirs import list_job_dirs

if TYPE_CHECKING:
    from support import Stubs

Capsys = pytest.CaptureFixture[str]
STUB = load_stub_module()
SHELLCHECK = shutil.which("shellcheck")
MASK = "<JOB_DIR>"


@pytest.fixture
def env(clean_env: pytest.MonkeyPatch, stubs: Stubs, write_cluster: Callable[..., Path],
        tmp_path: Path) -> dict[str, Any]:
    cluster = write_cluster()
    clean_env.setenv("ORCH_CLUSTER", str(cluster))
    return {"cluster": cluster, "jobs": tmp_path / "jobs", "stubs": stubs}


def run_main(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def new_folders(root: Path, before: set[Path]) -> list[Path]:
    return sorted(set(root.iterdir()) - before) if root.exists() else []


def masked(script: str, job_dir: Path) -> str:
    assert str(job_dir) in script
    return script.replace(str(job_dir), MASK)


SWEEP = ("--sweep", "lr=0.1,0.01", "--sweep", "batch_size=32,64")


def test_sweep_dry_run_shows_the_elements(env: dict[str, Any], capsys: Capsys) -> None:
    code, out, err = run_main(capsys, "submit", "smoke", "--nodes", "1", "--gpus", "2", *SWEEP,
                              "--array-throttle", "2", "epochs=3", "--dry-run")
    assert code == 0, err
    assert "#SBATCH --array=0-3%2\n" in out
    assert "# job array: 4 element(s), --array=0-3%2" in out
    rows = [line for line in out.splitlines() if line.startswith("# [")]
    assert [r.split()[-2:] for r in rows] == [["lr=0.1", "batch_size=32"], ["lr=0.1", "batch_size=64"],
                                              ["lr=0.01", "batch_size=32"], ["lr=0.01", "batch_size=64"]]
    assert not env["jobs"].exists() and env["stubs"].records() == []  # a dry run writes and runs nothing
    code, out, err = run_main(capsys, "submit", "smoke", "--nodes", "1", "--gpus", "2", *SWEEP, "epochs=3",
                              "--dry-run", "--json")
    data = json.loads(out)
    assert code == 0 and data["array"] == "0-3"
    assert [(e["params"]["lr"], e["params"]["batch_size"], e["params"]["epochs"]) for e in data["elements"]] == [
        (0.1, 32, 3), (0.1, 64, 3), (0.01, 32, 3), (0.01, 64, 3)]
    assert [e["job_dir"].rsplit("/", 1)[1] for e in data["elements"]] == ["0", "1", "2", "3"]


def test_sweep_script_is_valid_bash_and_sbatch(env: dict[str, Any], capsys: Capsys, tmp_path: Path) -> None:
    code, out, err = run_main(capsys, "submit", "smoke", "--nodes", "2", "--gpus", "2", *SWEEP, "--dry-run",
                              "--json")
    assert code == 0, err
    script = json.loads(out)["script"]
    path = tmp_path / "array.sh"
    path.write_text(script, encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(path)], check=False).returncode == 0
    if SHELLCHECK:
        proc = subprocess.run([SHELLCHECK, "--shell=bash", "--severity=style", str(path)], capture_output=True,
                              text=True, check=False)
        assert proc.returncode == 0, proc.stdout
    options = STUB.sbatch_script_options(script)
    assert "--array=0-3" in options
    out_opt = next(o for o in options if o.startswith("--output="))
    assert out_opt.endswith("/%a/logs/slurm-%A_%a.out")  # each element's batch log in its own folder
    assert 'JOB_DIR="$JOB_DIR/$SLURM_ARRAY_TASK_ID"' in script
    assert "/%a/logs/%A_%a-rank%t.out" in script


def test_sweep_submit_writes_one_folder_per_element(env: dict[str, Any], capsys: Capsys) -> None:
    code, out, err = run_main(capsys, "submit", "smoke", "--nodes", "1", "--gpus", "2", "--sweep",
                              "lr=0.1,0.01", "epochs=2", "--json")
    assert code == 0, err
    data = json.loads(out)
    folder = Path(data["job_dir"])
    assert data["job_id"] == "4242" and [e["job_id"] for e in data["elements"]] == ["4242_0", "4242_1"]
    assert (folder / "job_id").read_text() == "4242\n"
    record = json.loads((folder / "array.json").read_text())
    assert record["array"] == "0-1" and [e["overrides"] for e in record["elements"]] == [{"lr": "0.1"},
                                                                                          {"lr": "0.01"}]
    for index, lr in enumerate((0.1, 0.01)):
        cfg = json.loads((folder / str(index) / "job.json").read_text())
        assert (cfg["params"]["lr"], cfg["params"]["epochs"], cfg["job_dir"]) == (lr, 2, str(folder / str(index)))
        assert (folder / str(index) / "job_id").read_text() == f"4242_{index}\n"
        assert (folder / str(index) / "logs").is_dir()
    [call] = env["stubs"].records("sbatch")
    assert call["script"] == (folder / "sbatch.sh").read_text()
    # orch list / status / logs see the elements as jobs of their own
    assert [j.job_id for j in list_job_dirs(env["jobs"])] == ["4242_0", "4242_1"]
    (folder / "1" / "logs" / "4242_1-rank1.out").write_text("element one\n")
    assert run_main(capsys, "logs", "4242_1", "--rank", "1") == (0, "element one\n", "")


@pytest.mark.parametrize(("argv", "says"), [
    (("--sweep", "lr="), "empty value"),
    (("--sweep", "lr=0.1", "--sweep", "lr=0.2"), "given twice"),
    (("--sweep", "nope=1,2"), "unknown override 'nope'"),
    (("--sweep", "lr=fast"), "lr"),
    (("--sweep", "lr=0.1", "--array-throttle", "0"), "at least 1"),
    (("--array-throttle", "2",), "needs --sweep"),
])
def test_bad_sweeps_are_refused(env: dict[str, Any], capsys: Capsys, argv: tuple[str, ...], says: str) -> None:
    code, _, err = run_main(capsys, "submit", "smoke", "--nodes", "1", "--gpus", "1", *argv)
    assert code == 2 and says in err and "HINT:" in err, err
    assert env["stubs"].records() == [] and not env["jobs"].exists()


def test_api_submits_the_script_of_orch_submit(env: dict[str, Any], capsys: Capsys) -> None:
    """One path to sbatch: the API's sbatch input is orch submit's script (job folder masked)."""
    handle = api.submit("smoke", nodes=2, gpus=4, cluster=env["cluster"], executor="slurm", time="00:20:00",
                        epochs=3, lr=0.05)
    before = set(env["jobs"].iterdir())
    code, _, err = run_main(capsys, "submit", "smoke", "--nodes", "2", "--gpus", "4", "--time", "00:20:00",
                              "epochs=3", "lr=0.05", "--json")
    assert code == 0, err
    [cli_dir] = new_folders(env["jobs"], before)
    api_call, cli_call = env["stubs"].records("sbatch")
    assert handle.job_id == "4242" and (handle.job_dir / "job_id").read_text() == "4242\n"
    assert api_call["script"] == (handle.job_dir / "sbatch.sh").read_text()
    assert masked(api_call["script"], handle.job_dir) == masked(cli_call["script"], cli_dir)
    configs = [json.loads((d / "job.json").read_text()) for d in (handle.job_dir, cli_dir)]
    for cfg in configs:
        del cfg["job_dir"], cfg["created"]
    assert configs[0] == configs[1]


def test_api_sweep_submits_the_script_of_orch_submit_sweep(env: dict[str, Any], capsys: Capsys) -> None:
    handles = api.sweep("smoke", [{"lr": 0.1}, {"lr": 0.01}], nodes=1, gpus=2, cluster=env["cluster"],
                        executor="slurm", throttle=1, epochs=2)
    before = set(env["jobs"].iterdir())
    code, _, err = run_main(capsys, "submit", "smoke", "--nodes", "1", "--gpus", "2", "--sweep", "lr=0.1,0.01",
                            "--array-throttle", "1", "epochs=2")
    assert code == 0, err
    [cli_dir] = new_folders(env["jobs"], before)
    api_dir = handles[0].job_dir.parent
    assert [h.job_id for h in handles] == ["4242_0", "4242_1"]
    assert [h.job_dir for h in handles] == [api_dir / "0", api_dir / "1"]
    api_call, cli_call = env["stubs"].records("sbatch")
    assert "#SBATCH --array=0-1%1\n" in api_call["script"]
    assert masked(api_call["script"], api_dir) == masked(cli_call["script"], cli_dir)
    for index in (0, 1):
        cfgs = [json.loads((d / str(index) / "job.json").read_text()) for d in (api_dir, cli_dir)]
        assert cfgs[0]["params"] == cfgs[1]["params"]


def test_api_sweep_varies_hyperparameters_only(env: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="share the resources"):
        api.sweep("smoke", [{"lr": 0.1, "partition": "debug"}], cluster=env["cluster"], executor="slurm")
    assert env["stubs"].records() == []


def test_api_checks_the_data_dir_as_orch_submit(env: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs a data directory"):
        api.submit("mnist", nodes=1, gpus=1, cluster=env["cluster"], executor="slurm")
    with pytest.raises(ConfigError, match="does not exist"):
        api.sweep("mnist", [{"lr": 0.1}], nodes=1, gpus=1, cluster=env["cluster"], executor="slurm",
                  data_dir=str(tmp_path / "nowhere"))
    assert env["stubs"].records() == [] and not env["jobs"].exists()


SCRIPT = TESTS / "scripts" / "ddp_train.py"


def test_api_submits_the_script_of_orch_submit_for_a_script_job(env: dict[str, Any], capsys: Capsys) -> None:
    """A script job with every kind of extra: the API's sbatch input is orch submit's (job folder masked)."""
    handle = api.submit(str(SCRIPT), script_args=["--steps", "3", "it's $(x)"], nodes=2, gpus=4, gpus_per_task=2,
                        cluster=env["cluster"], executor="slurm", time="00:20:00", constraint="a100&ib",
                        exclusive=True, exclude="node9", dependency="afterok:1", mail_type="END,FAIL",
                        mail_user="me@example.org", reservation="r1", sbatch_args={"licenses": "scratch", "hold": True},
                        env={"NCCL_DEBUG": "INFO", "MSG": "a b"}, container_runtime="apptainer",
                        container_image="/img/pt.sif", container_mounts=["/data:/data"], preflight="exclude")
    before = set(env["jobs"].iterdir())
    code, _, err = run_main(capsys, "submit", str(SCRIPT), "--nodes", "2", "--gpus", "4", "--gpus-per-task", "2",
                            "--time", "00:20:00", "--constraint", "a100&ib", "--exclusive", "--exclude", "node9",
                            "--dependency", "afterok:1", "--mail-type", "END,FAIL", "--mail-user", "me@example.org",
                            "--reservation", "r1", "--sbatch-arg", "licenses=scratch", "--sbatch-arg", "hold",
                            "--env", "NCCL_DEBUG=INFO", "--env", "MSG=a b", "--container-runtime", "apptainer",
                            "--container-image", "/img/pt.sif", "--container-mounts", "/data:/data", "--json",
                            "--preflight=exclude",
                            "--", "--steps", "3", "it's $(x)")
    assert code == 0, err
    [cli_dir] = new_folders(env["jobs"], before)
    api_call, cli_call = env["stubs"].records("sbatch")
    script = api_call["script"]
    for line in ('#SBATCH --constraint="a100&ib"', "#SBATCH --exclusive", "#SBATCH --licenses=scratch",
                 "#SBATCH --hold", "#SBATCH --mail-user=me@example.org"):
        assert line in script, line
    assert "apptainer" in script and "NCCL_DEBUG" in script
    assert masked(script, handle.job_dir) == masked(cli_call["script"], cli_dir)
    configs = [json.loads((d / "job.json").read_text()) for d in (handle.job_dir, cli_dir)]
    for cfg in configs:
        del cfg["job_dir"], cfg["created"]
    assert configs[0] == configs[1]
    assert configs[0]["script"]["args"] == ["--steps", "3", "it's $(x)"]


def test_api_takes_a_module_and_refuses_what_orch_submit_refuses(env: dict[str, Any]) -> None:
    handle = api.submit(module="pkg.not_here", script_args=["--x"], nodes=1, gpus=1, cluster=env["cluster"],
                        executor="slurm")
    cfg = json.loads((handle.job_dir / "job.json").read_text())
    assert cfg["script"]["kind"] == "module" and cfg["script"]["target"] == "pkg.not_here"
    bad: list[dict[str, Any]] = [
        {"sbatch_args": {"nodes": "3"}},  # orch's own option
        {"env": {"RANK": "1"}},  # the launcher's variable
        {"gpus": 3, "gpus_per_task": 2},  # K does not divide the GPUs
        {"lr": 0.1},  # a script takes no hyperparameters
    ]
    for extra in bad:
        with pytest.raises(ConfigError):
            api.submit(str(SCRIPT), cluster=env["cluster"], executor="slurm", **{"nodes": 1, "gpus": 2, **extra})
    with pytest.raises(ConfigError, match="a script takes its arguments"):
        api.sweep(str(SCRIPT), [{"lr": 0.1}], cluster=env["cluster"], executor="slurm")
    assert len(env["stubs"].records("sbatch")) == 1


def test_api_request_fields_are_orch_submits_options() -> None:
    from orchestrator.service.request import OPTION_NAMES

    assert set(api.REQUEST_FIELDS) == set(OPTION_NAMES) - {"job", "nodes", "gpus", "overrides"}


def test_api_checks_a_script_with_orch_doctor_as_orch_submit(env: dict[str, Any], tmp_path: Path) -> None:
    from orchestrator.doctor.gate import ScriptRefused

    bad = tmp_path / "bad_train.py"
    bad.write_text(BAD_SCRIPT)
    with pytest.raises(ScriptRefused, match="orch doctor found errors"):
        api.submit(str(bad), nodes=1, gpus=1, cluster=env["cluster"], executor="slurm")
    assert env["stubs"].records() == []
    handle = api.submit(str(bad), nodes=1, gpus=1, cluster=env["cluster"], executor="slurm", no_check=True)
    assert handle.job_id == "4242"


BAD_SCRIPT = """\
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset


def main():
    dist.init_process_group("gloo")
    loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=16, shuffle=True)
    for x in loader:
        pass


if __name__ == "__main__":
    main()
"""
