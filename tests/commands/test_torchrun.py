"""A CLI that speaks torchrun, through the real CLI (``main``): torchrun's option names get
"did you mean" or why orch needs none, a script's own options before ``--`` get the command rewritten,
``--`` ends the options of every verb, and a script submitted without ``--gpus`` gets the partition's GPUs."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from support import ORCH, clean_environ

from orchestrator.cli import VERBS, main
from orchestrator.commands._torchrun import TORCHRUN_OPTIONS, explain, normalize, torchrun_option


@pytest.fixture
def here(clean_env: pytest.MonkeyPatch, write_cluster: Callable[..., Path], tmp_path: Path) -> Path:
    """A working directory with train.py (a script), mnist-like job names, and a cluster.yaml."""
    clean_env.setenv("ORCH_CLUSTER", str(write_cluster()))
    (tmp_path / "train.py").write_text("import sys\nprint(sys.argv)\n", encoding="utf-8")
    return tmp_path


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("orch: error:") == 1 and "Traceback" not in err, err
    return err


# --- torchrun's names ------------------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "meant", "rewritten"), [
    (["run", "train.py", "--nproc-per-node", "2"], "did you mean --nproc?", "orch run train.py --nproc 2"),
    (["run", "train.py", "--nproc_per_node=2"], "did you mean --nproc?", "orch run train.py --nproc 2"),
    (["submit", "train.py", "--nproc-per-node", "4", "--dry-run"], "did you mean --gpus?",
     "orch submit train.py --gpus 4 --dry-run"),
    (["submit", "train.py", "--nnodes", "2", "--dry-run"], "did you mean --nodes?",
     "orch submit train.py --nodes 2 --dry-run"),
    (["submit", "train.py", "--nnodes=2", "--dry-run"], "did you mean --nodes?",
     "orch submit train.py --nodes 2 --dry-run"),
    (["run", "train.py", "--max_restarts", "3"], "did you mean --max-restarts?",
     "orch run train.py --max-restarts 3"),
    (["submit", "train.py", "--max_restarts=3", "--dry-run"], "did you mean --max-restarts?",
     "orch submit train.py --max-restarts 3 --dry-run"),
])
def test_torchrun_names_map_to_orch_options(here: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                            meant: str, rewritten: str) -> None:
    err = _refused(argv, capsys)
    assert meant in err and "is torchrun's name" in err, err
    assert err.rstrip().endswith(f"in orch's words: {rewritten}"), err


@pytest.mark.parametrize(("option", "value", "why"), [
    ("--standalone", None, "rendezvous"),
    ("--rdzv-backend", "c10d", "rendezvous"),
    ("--rdzv_backend", "c10d", "rendezvous"),
    ("--rdzv-endpoint", "host:29400", "rendezvous"),
    ("--rdzv_id", "42", "rendezvous"),
    ("--master-addr", "10.0.0.1", "MASTER_ADDR"),
    ("--master_addr", "10.0.0.1", "MASTER_ADDR"),
    ("--master-port", "29500", "MASTER_PORT"),
    ("--master_port", "29500", "MASTER_PORT"),
    ("--node-rank", "1", "Slurm gives each node its place"),
    ("--node_rank", "1", "Slurm gives each node its place"),
])
@pytest.mark.parametrize("verb", ["run", "submit"])
def test_torchrun_rendezvous_options_say_why_orch_needs_none(here: Path, capsys: pytest.CaptureFixture[str],
                                                              verb: str, option: str, value: str | None,
                                                              why: str) -> None:
    given = [option] if value is None else [option, value]
    err = _refused([verb, "train.py", *given], capsys)
    spelled = " ".join(given)
    assert f"{spelled}: orch {verb} needs no such option: " in err and why in err, err
    # the rewritten command drops the option and its value, and moves nothing after --
    assert err.rstrip().endswith(f"in orch's words: orch {verb} train.py"), err


def test_nnodes_on_orch_run_points_to_submit(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(["run", "train.py", "--nnodes", "2", "--nproc", "2"], capsys)
    assert "orch run uses this machine only; orch submit --nodes N" in err, err
    assert err.rstrip().endswith("in orch's words: orch run train.py --nproc 2"), err


def test_every_torchrun_row_is_reachable_in_both_spellings() -> None:
    for row in TORCHRUN_OPTIONS:
        name = row.name + ("endpoint" if row.prefix else "")
        assert torchrun_option(name) is row
        assert torchrun_option(name.replace("-", "_").replace("__", "--", 1)) is row
        assert torchrun_option(name + "=1") is row
    assert normalize("--nproc_per_node=8") == "--nproc-per-node"
    assert torchrun_option("--nproc") is None and torchrun_option("--device") is None


# --- a script's own options before -- --------------------------------------------------------------

@pytest.mark.parametrize(("argv", "rewritten"), [
    (["run", "train.py", "--nproc", "2", "--device=cpu"], "orch run train.py --nproc 2 -- --device=cpu"),
    (["run", "train.py", "--device", "cpu", "--nproc", "2"], "orch run train.py --nproc 2 -- --device cpu"),
    (["run", "train.py", "--nproc", "2", "--lr", "0.1", "-x", "--", "--seed", "1"],
     "orch run train.py --nproc 2 -- --lr 0.1 -x --seed 1"),
    (["run", "train.py", "--epochs", "-1"], "orch run train.py -- --epochs -1"),
    (["run", "train.py", "--nproc-per-node", "2", "--device=cpu"], "orch run train.py --nproc 2 -- --device=cpu"),
    (["submit", "train.py", "--nodes", "2", "--out", "runs/a b", "--dry-run"],
     "orch submit train.py --nodes 2 --dry-run -- --out 'runs/a b'"),
    (["run", "-m", "json.tool", "--indent", "2"], "orch run -m json.tool -- --indent 2"),
])
def test_script_option_before_dashdash_gets_the_command_rewritten(here: Path, capsys: pytest.CaptureFixture[str],
                                                                  argv: list[str], rewritten: str) -> None:
    err = _refused(argv, capsys)
    assert err.rstrip().endswith(f"a script's own arguments go after --: {rewritten}"), err


def test_the_rewritten_command_runs(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The hint's command is accepted as it stands: the script's options reach the script's argv."""
    err = _refused(["submit", "train.py", "--nodes", "2", "--lr", "0.1", "--dry-run", "--json"], capsys)
    command = err.rstrip().rsplit("go after --: ", 1)[1].split()
    assert command[0] == "orch"
    assert main(command[1:]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert runs["args"] == ["--lr", "0.1"], runs


def test_job_names_keep_the_plain_usage_hint(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A job name takes key=value overrides: an unknown option is not moved after -- for it."""
    err = _refused(["run", "smoke", "--device", "cpu"], capsys)
    assert "HINT: run 'orch run --help' for usage" in err and "go after --" not in err, err


def test_other_verbs_do_not_read_torchrun_names(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(["status", "--nnodes", "2"], capsys)
    assert "did you mean" not in err and "orch status --help" in err, err


def test_explain_is_none_without_anything_to_say() -> None:
    assert explain("run", ["run", "smoke", "--foo"], ["--foo"], None, script=False) is None


# --- `--` ends the options of every verb --------------------------------------------------------------

def test_dashdash_hosts(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hosts", "--", "node[1-3]"]) == 0
    assert capsys.readouterr().out.split() == ["node1", "node2", "node3"]
    assert main(["hosts", "--", "-x"]) == 0  # after --, an operand that looks like an option is an operand
    assert capsys.readouterr().out.split() == ["-x"]
    assert main(["hosts", "--compress", "--", "a1", "a2"]) == 0
    assert capsys.readouterr().out.split() == ["a[1-2]"]


def test_dashdash_env(here: Path, capsys: pytest.CaptureFixture[str], clean_env: pytest.MonkeyPatch) -> None:
    for name, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
                        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}.items():
        clean_env.setenv(name, value)
    assert main(["env", "--json", "--"]) == 0
    assert json.loads(capsys.readouterr().out)["world_size"] == 1


def test_dashdash_list(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("verb", ["status", "logs", "cancel", "plot", "compare", "tb"])
def test_dashdash_job_verbs_take_the_operand(here: Path, capsys: pytest.CaptureFixture[str], verb: str) -> None:
    """The operand after -- reaches the verb (it looks like an option, so only -- can pass it)."""
    err = _refused([verb, "--", "-nojob"], capsys)
    assert "'-nojob'" in err and "unrecognized" not in err and "required" not in err, err


def test_dashdash_doctor(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (here / "-odd.py").write_text("print(1)\n", encoding="utf-8")
    assert main(["doctor", "--", "-odd.py", "train.py"]) == 0, capsys.readouterr().err


def test_dashdash_run_and_submit_pass_script_arguments(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "train.py", "--dry-run", "--json", "--", "--nproc", "2", "--"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"]["args"] == ["--nproc", "2", "--"]


def test_dashdash_exec_passes_script_arguments(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """orch exec takes a script's arguments after -- as run and submit do: here it gets as far as the
    missing Slurm step (they were not read as orch's options)."""
    assert main(["exec", "train.py", "--", "--nproc", "2", "--"]) == 2
    err = capsys.readouterr().err
    assert "SLURM_JOB_ID is not set" in err and "unrecognized" not in err, err


@pytest.mark.parametrize("argv", [["nodes", "--"], ["clean", "--dry-run", "--"], ["clusters", "--"]])
def test_dashdash_verbs_without_operands(here: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """-- alone ends the options of verbs that take no operand."""
    assert main(argv) == 0, capsys.readouterr().err


def test_dashdash_resubmit_takes_the_operand(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(["resubmit", "--failed", "--", "-nojob"], capsys)
    assert "'-nojob'" in err and "unrecognized" not in err, err


def test_dashdash_top(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """-- ends top's options: it gets as far as asking for a terminal (a test has none)."""
    err = _refused(["top", "--"], capsys)
    assert "needs a terminal" in err and "unrecognized" not in err, err


def test_dashdash_mcp(here: Path) -> None:
    """-- ends mcp's options: the server starts, and ends when its input (the client) closes."""
    proc = subprocess.run([ORCH, "mcp", "--"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=clean_environ(), cwd=here, timeout=60)
    assert proc.returncode == 0 and "unrecognized" not in proc.stderr, proc.stderr


def test_every_verb_is_covered() -> None:
    covered = {"hosts", "env", "list", "status", "logs", "cancel", "plot", "doctor", "run", "submit", "compare", "tb",
               "nodes", "clean", "clusters", "exec", "resubmit", "top", "mcp"}
    assert covered == set(VERBS), set(VERBS) ^ covered


# --- the GPU default of a script ----------------------------------------------------------------------

def _dry(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["submit", *argv, "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_script_without_gpus_gets_the_partitions_gpus(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _dry(["train.py", "--nodes", "2"], capsys)
    assert "# resources: 2 nodes x 8 GPUs (all of partition gpu's; --gpus N to change)\n" in out, out
    assert "#SBATCH --ntasks-per-node=8\n" in out and "#SBATCH --gpus-per-node=a100:8\n" in out
    assert "# 16 ranks: 2 node(s) x 8 task(s)" in out
    out = _dry(["train.py", "--partition", "debug"], capsys)  # 4 GPUs per node there
    assert "# resources: 1 node x 4 GPUs (all of partition debug's; --gpus N to change)\n" in out, out
    out = _dry(["train.py", "--gpus-per-task", "2"], capsys)
    assert "#SBATCH --ntasks-per-node=4\n" in out and "# resources: 1 node x 8 GPUs" in out, out


def test_script_with_gpus_or_tasks_keeps_them(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _dry(["train.py", "--gpus", "2"], capsys)
    assert "# resources:" not in out and "#SBATCH --ntasks-per-node=2\n" in out, out
    out = _dry(["train.py", "--ntasks-per-node", "4"], capsys)  # 4 ranks of one GPU each
    assert "#SBATCH --ntasks-per-node=4\n" in out and "#SBATCH --gpus-per-node=a100:4\n" in out, out
    assert "# resources: 1 node x 4 GPUs (1 per task of --ntasks-per-node 4; --gpus N to change)" in out


def test_script_on_a_cpu_partition(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _dry(["train.py", "--partition", "cpu", "--nodes", "2"], capsys)
    assert ("# resources: 2 nodes x 1 CPU task (partition cpu has no GPUs: one CPU task per node; "
            "--ntasks-per-node N to change)\n") in out, out
    assert "#SBATCH --ntasks-per-node=1\n" in out and "gpus-per-node" not in out and "--gres" not in out
    assert "#SBATCH --cpus-per-task=64\n" in out  # the whole node for its one task
    out = _dry(["train.py", "--partition", "cpu", "--ntasks-per-node", "4"], capsys)
    assert "# resources:" not in out and "#SBATCH --ntasks-per-node=4\n" in out
    err = _refused(["submit", "train.py", "--partition", "cpu", "--gpus", "1", "--dry-run"], capsys)
    assert "exceeds gpus_per_node=0 of partition cpu" in err and "--ntasks-per-node N" in err, err


def test_job_files_keep_their_resources(here: Path, capsys: pytest.CaptureFixture[str],
                                        write_job: Callable[..., Path]) -> None:
    job = write_job("tiny", gpus=2)
    out = _dry([str(job)], capsys)
    assert "# resources:" not in out and "#SBATCH --gpus-per-node=a100:2\n" in out, out


def test_the_submit_line_says_it(here: Path, capsys: pytest.CaptureFixture[str], stubs: object) -> None:
    assert main(["submit", "train.py", "--nodes", "2"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "resources: 2 nodes x 8 GPUs (all of partition gpu's; --gpus N to change)" in out, out


def test_a_default_that_does_not_fit_says_orch_chose_it(here: Path, capsys: pytest.CaptureFixture[str],
                                                         write_cluster: Callable[..., Path],
                                                         clean_env: pytest.MonkeyPatch) -> None:
    """A node with fewer CPUs than GPUs: the refusal names the default orch chose and --gpus."""
    small = write_cluster(name="small.yaml", partitions=[
        {"name": "gpu", "nodes": "n[1-2]", "gpus_per_node": 8, "cpus_per_node": 4, "mem_per_node": "16G"}])
    err = _refused(["submit", "train.py", "--cluster", str(small), "--dry-run"], capsys)
    assert "orch chose 1 node x 8 GPUs (all of partition gpu's" in err and "--gpus N" in err, err
    assert main(["submit", "train.py", "--cluster", str(small), "--gpus", "4", "--dry-run"]) == 0
