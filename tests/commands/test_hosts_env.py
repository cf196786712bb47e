"""`orch hosts` and `orch env`: through main([...]), through the installed `orch`, and module by module.

``clean_env`` (tests/conftest.py): no Slurm/torchrun/orch variables, cwd = tmp_path.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

from orchestrator.cli import main
from orchestrator.commands import env as env_cmd
from orchestrator.commands import hosts as hosts_cmd
from orchestrator.env.masterport import DEFAULT_PORT_RANGE, master_port
from orchestrator.errors import OrchError

ORCH = Path(sys.executable).parent / "orch"
RANK3 = {
    "SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "node[1-2]", "SLURM_JOB_NUM_NODES": "2", "SLURM_NNODES": "2",
    "SLURM_NODEID": "1", "SLURM_LOCALID": "1", "SLURM_PROCID": "3", "SLURM_NTASKS": "4",
    "SLURM_NTASKS_PER_NODE": "2", "SLURM_TASKS_PER_NODE": "2(x2)", "SLURM_STEP_NODELIST": "node[1-2]",
    "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_NUM_TASKS": "4", "SLURM_STEP_TASKS_PER_NODE": "2(x2)",
    "SLURM_STEP_ID": "0", "SLURM_GTIDS": "2,3", "SLURMD_NODENAME": "node2", "CUDA_VISIBLE_DEVICES": "0,1",
}
RANK3_JSON = {"rank": 3, "local_rank": 1, "world_size": 4, "local_world_size": 2, "node_rank": 1,
              "num_nodes": 2, "master_addr": "node1", "master_port": 20001}
_LEAKY = ("SLURM_", "SLURMD_", "SBATCH_", "SRUN_", "ORCH_")
_LAUNCH_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK",
                "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def _subprocess_env(**extra: str) -> dict[str, str]:
    """os.environ without Slurm/torchrun/orch variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not (k.startswith(_LEAKY) or k in _LAUNCH_VARS)}
    env.update(extra)
    return env


def run_verb(module: object, argv: list[str]) -> int:
    """Drive one verb module the way cli.main does, without needing every other verb module."""
    parser = argparse.ArgumentParser(prog="orch test")
    module.add_arguments(parser)  # type: ignore[attr-defined]
    args = parser.parse_args(argv)
    try:
        code: int = module.run(args)  # type: ignore[attr-defined]
    except OrchError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    return code


# ---- module level --------------------------------------------------------------------------------

def test_hosts_module_expands(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_verb(hosts_cmd, ["rack[1-2]-node[01-02]"]) == 0
    assert capsys.readouterr().out == "rack1-node01\nrack1-node02\nrack2-node01\nrack2-node02\n"
    assert run_verb(hosts_cmd, ["n[1-2]", "m3"]) == 0
    assert capsys.readouterr().out == "n1\nn2\nm3\n"


def test_hosts_module_compress_from_stdin(capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("n1\nn2\nn3\nn7\nm1\n"))
    assert run_verb(hosts_cmd, ["--compress"]) == 0
    assert capsys.readouterr().out == "n[1-3,7],m1\n"


def test_hosts_module_json_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_verb(hosts_cmd, ["--json", "x[998-1000]"]) == 0
    assert json.loads(capsys.readouterr().out) == ["x998", "x999", "x1000"]
    assert run_verb(hosts_cmd, ["n[5-3]"]) == 2
    err = capsys.readouterr().err
    assert "orch: error: invalid hostlist 'n[5-3]': range '5-3' is reversed" in err
    assert "HINT: write it ascending: 3-5" in err


def test_env_module(clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in RANK3.items():
        clean_env.setenv(name, value)
    assert run_verb(env_cmd, ["--json"]) == 0
    assert json.loads(capsys.readouterr().out) == RANK3_JSON
    assert run_verb(env_cmd, []) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["rank", "3"]
    assert lines[-1].split() == ["master_port", "20001"]


def test_env_module_port_range_sources(clean_env: pytest.MonkeyPatch, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in RANK3.items():
        clean_env.setenv(name, value)
    assert run_verb(env_cmd, ["--json", "--port-range", "40000-40009"]) == 0
    assert json.loads(capsys.readouterr().out)["master_port"] == master_port("1", 0, (40000, 40009))
    cluster = tmp_path / "c.yaml"
    cluster.write_text((ROOT / "cluster.yaml").read_text().replace("[20000, 32767]", "[50000, 50099]"))
    assert run_verb(env_cmd, ["--json", "--cluster", str(cluster)]) == 0
    assert json.loads(capsys.readouterr().out)["master_port"] == 50001
    assert run_verb(env_cmd, ["--cluster", str(tmp_path / "missing.yaml")]) == 2
    assert "no cluster file" in capsys.readouterr().err
    assert run_verb(env_cmd, ["--port-range", "9-2"]) == 2
    assert "--port-range '9-2'" in capsys.readouterr().err


def test_env_module_outside_an_allocation(clean_env: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert run_verb(env_cmd, ["--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "orch: error: not launched by srun or torchrun" in captured.err
    assert "HINT: use 'orch run JOB'" in captured.err


# ---- through cli.main ----------------------------------------------------------------------------

def test_main_hosts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hosts", "a[1-2],b3,c[01-02]"]) == 0
    assert capsys.readouterr().out.split() == ["a1", "a2", "b3", "c01", "c02"]
    assert main(["hosts", "--compress", "n9", "n10", "n11"]) == 0
    assert capsys.readouterr().out == "n[9-11]\n"
    assert main(["hosts", "n[1-2"]) == 2
    err = capsys.readouterr().err
    assert "orch: error: invalid hostlist 'n[1-2': '[' at position 1 is never closed" in err
    assert "Traceback" not in err


def test_main_env(clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "--json"]) == 2
    assert "not launched by srun or torchrun" in capsys.readouterr().err
    for name, value in RANK3.items():
        clean_env.setenv(name, value)
    assert main(["env", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == RANK3_JSON
    clean_env.delenv("SLURM_STEP_ID")  # now it looks like the batch script
    assert main(["env"]) == 2
    assert "HINT: run this under srun" in capsys.readouterr().err


def test_main_does_not_import_torch() -> None:
    code = ("import sys; from orchestrator.cli import main;"
            "rc = main(['hosts', 'n[1-3]']); rc2 = main(['env', '--json']);"
            "bad = [m for m in ('torch', 'torchvision') if m in sys.modules];"
            "print(rc, rc2, bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=_subprocess_env(**RANK3), cwd=ROOT)
    assert out.stdout.splitlines()[-1] == "0 0 []"


# ---- the installed command -----------------------------------------------------------------------

def test_installed_orch_hosts(tmp_path: Path) -> None:
    out = subprocess.run([str(ORCH), "hosts", "x[998-1002]"], capture_output=True, text=True,
                         env=_subprocess_env(), cwd=tmp_path, timeout=60)
    assert (out.returncode, out.stdout) == (0, "x998\nx999\nx1000\nx1001\nx1002\n")
    piped = subprocess.run([str(ORCH), "hosts", "--compress"], input="gpu01\ngpu02\ngpu03\n",
                           capture_output=True, text=True, env=_subprocess_env(), cwd=tmp_path, timeout=60)
    assert (piped.returncode, piped.stdout) == (0, "gpu[01-03]\n")
    bad = subprocess.run([str(ORCH), "hosts", "n[]"], capture_output=True, text=True,
                         env=_subprocess_env(), cwd=tmp_path, timeout=60)
    assert bad.returncode == 2
    assert bad.stderr.startswith("orch: error: invalid hostlist 'n[]': empty brackets")
    assert "Traceback" not in bad.stderr


def test_installed_orch_env(tmp_path: Path) -> None:
    out = subprocess.run([str(ORCH), "env", "--json"], capture_output=True, text=True,
                         env=_subprocess_env(**RANK3), cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == RANK3_JSON
    outside = subprocess.run([str(ORCH), "env"], capture_output=True, text=True,
                             env=_subprocess_env(), cwd=tmp_path, timeout=60)
    assert outside.returncode == 2
    assert "orch: error: not launched by srun or torchrun" in outside.stderr
    assert "HINT:" in outside.stderr and "Traceback" not in outside.stderr


# ---- orch env --export: torchrun's variables as shell exports ----------------------------------------

HOSTILE = "$(touch {marker}) `id` \"dq\" it's; a\nb \\ *"


def test_export_is_torchruns_set_for_this_task_and_bash_evals_it_verbatim(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    hostile = HOSTILE.format(marker=marker)
    env = _subprocess_env(**RANK3, MASTER_ADDR=hostile, OMP_NUM_THREADS=hostile, SLURM_ARRAY_JOB_ID="7",
                          SLURM_ARRAY_TASK_ID="3 ; touch " + str(marker), SLURM_RESTART_COUNT="2")
    shown = subprocess.run([str(ORCH), "env", "--export"], capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("export ") and shown.stdout.count("\nexport ") == 16  # 17 variables
    dump = "import json, os; print(json.dumps(dict(os.environ)))"
    evaluated = subprocess.run(["bash", "-c", 'eval "$("$0" env --export)" && exec "$1" -c "$2"', str(ORCH),
                                sys.executable, dump], capture_output=True, text=True, env=env, cwd=tmp_path,
                               timeout=60)
    assert evaluated.returncode == 0, evaluated.stderr
    seen = json.loads(evaluated.stdout)
    assert not marker.exists()  # nothing was run: every value is quoted
    assert {name: seen[name] for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                                          "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME")} == {
        "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1",
        "GROUP_WORLD_SIZE": "2", "ROLE_RANK": "3", "ROLE_WORLD_SIZE": "4", "ROLE_NAME": "default"}
    assert seen["MASTER_ADDR"] == hostile.strip()  # the exported value wins, byte for byte (derive strips it)
    assert seen["OMP_NUM_THREADS"] == hostile  # left as the user set it, as torchrun leaves it
    assert seen["MASTER_PORT"] == str(master_port("1", 2, DEFAULT_PORT_RANGE))  # from the job id and the requeue count
    assert seen["TORCHELASTIC_RUN_ID"] == "7_3 ; touch " + str(marker)
    assert (seen["TORCHELASTIC_RESTART_COUNT"], seen["TORCHELASTIC_USE_AGENT_STORE"]) == ("2", "False")
    assert "NODE_RANK" not in seen  # torchrun does not set it


def test_export_without_a_launcher_is_the_same_error_as_orch_env(clean_env: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "--export"]) == 2
    err = capsys.readouterr().err
    assert "not launched by srun or torchrun" in err and "HINT:" in err
    assert main(["env", "--export", "--json"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_export_lines_take_the_tasks_cpus(clean_env: pytest.MonkeyPatch) -> None:
    from orchestrator.env.distenv import derive

    lines = env_cmd.export_lines(derive({**RANK3, "SLURM_CPUS_PER_TASK": "6"}), {**RANK3, "SLURM_CPUS_PER_TASK": "6"})
    assert "export OMP_NUM_THREADS=6" in lines and "export MASTER_ADDR=node1" in lines
