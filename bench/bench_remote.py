"""Remote orch over SSH vs orch on the login node, side by side (a benchmark, not a test).

A real sshd on a loopback port (tests/sshd.py; root, installs openssh-server when missing) stands for
the login node; the cluster's orch is this checkout's. One job folder is made by ``orch submit`` with
the test stub of sbatch; ``squeue``/``sacct``/``scontrol`` are stubs that answer nothing, so the rows
time orch and the transport, not a Slurm controller (``--slurm``: the real Slurm clients with this
shell's ``SLURM_CONF``). Rows run in turn, round after round, after two warm-up rounds; the control
master is open (as after any first command):

* ``ssh HOST true`` on the open connection: the transport's floor;
* ``orch status JOB`` on the login node (the cluster file without ``remote:``);
* ``orch status JOB`` from the "laptop" (the cluster file with ``remote:``), target: within 0.3 s of the row above;
* shipping an unchanged tree (a copy of this checkout's orchestrator/, tests/, docs/) in-process: one
  listing round trip, nothing sent.

"cpu s" is the median CPU time (user + system) of the row's processes on this side: for the laptop
row the laptop's orch and its ssh client (the cluster's orch runs under sshd), so on a machine with
idle cores the laptop row's wall time is about its cpu s plus the login node row's wall time.

    sudo .venv/bin/python bench/bench_remote.py [--runs 21] [--slurm]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from sshd import orch_wrapper, short_socket_dir, start_sshd  # noqa: E402
from support import STUBS_DIR, TEST_CLUSTER  # noqa: E402

ORCH = str(Path(sys.executable).parent / "orch")


def _time(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall time, and CPU time (user + system) of the process and its children on this side (over SSH:
    the laptop's orch and ssh client, not the cluster's orch, which sshd runs)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, cwd=cwd, check=False)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode(errors='replace')}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--slurm", action="store_true", help="the real Slurm clients (SLURM_CONF of this shell)")
    parser.add_argument("--with-bashrc", action="store_true", help="let ssh commands read ~/.bashrc")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="orch-bench-remote-"))
    quiet = base / "bin"
    quiet.mkdir()
    for name in ("squeue", "sacct", "scontrol"):
        (quiet / name).write_text("#!/bin/sh\nexit 0\n")
        (quiet / name).chmod(0o755)
    path = f"{STUBS_DIR}:{'' if args.slurm else str(quiet) + ':'}{Path(sys.executable).parent}:/usr/bin:/bin"
    cluster_env = {"ORCH_STATE_DIR": str(base / "state-there"), "ORCH_STUB_LOG": str(base / "stub.log"),
                   "ORCH_STUB_PYTHON": sys.executable, "PATH": path, "ORCH_CACHE_DIR": str(base / "cache")}
    if os.environ.get("SLURM_CONF"):
        cluster_env["SLURM_CONF"] = os.environ["SLURM_CONF"]
    # SHLVL=1: bash then skips ~/.bashrc for ssh commands (here it runs pyenv init, ~0.6 s): the rows time
    # orch and the transport, not the user's shell start-up (--with-bashrc keeps it)
    with start_sshd(base / "sshd", {} if args.with_bashrc else {"SHLVL": "1"}) as server:
        wrapper = orch_wrapper(base / "orch-there", ORCH, cluster_env)
        local = dict(TEST_CLUSTER, launcher={"job_root": str(base / "jobs")})
        (base / "login.yaml").write_text(yaml.safe_dump(local))
        remote = dict(local, remote={"host": "orchtest", "ssh_config": str(server.ssh_config), "orch": str(wrapper),
                                     "workdir": str(base / "work")})
        (base / "laptop.yaml").write_text(yaml.safe_dump(remote))
        login_env = {**os.environ, **cluster_env}
        laptop_env = {**os.environ, "ORCH_SSH_DIR": str(short_socket_dir()), "ORCH_STATE_DIR": str(base / "state-here"),
                      "ORCH_CACHE_DIR": str(base / "cache-here")}
        (base / "proj").mkdir()
        (base / "proj" / "train.py").write_text("print('hi')\n")
        proc = subprocess.run([ORCH, "submit", "train.py", "--gpus", "1", "--json", "--cluster",
                               str(base / "laptop.yaml")], capture_output=True, text=True, env=laptop_env,
                              cwd=base / "proj", check=True)
        job = json.loads(proc.stdout)["job_id"]
        socket = next(p for p in Path(laptop_env["ORCH_SSH_DIR"]).iterdir() if not p.name.startswith("."))
        rows = {
            "ssh HOST true (open connection)": (["ssh", "-F", str(server.ssh_config), "-o", f"ControlPath={socket}",
                                                 "-o", "BatchMode=yes", "orchtest", "true"], laptop_env),
            "orch status JOB (login node)": ([ORCH, "status", job, "--cluster", str(base / "login.yaml")], login_env),
            "orch status JOB (laptop, over SSH)": ([ORCH, "status", job, "--cluster", str(base / "laptop.yaml")],
                                                   laptop_env),
        }
        times: dict[str, list[float]] = {name: [] for name in rows}
        cpu: dict[str, list[float]] = {name: [] for name in rows}
        times["ship unchanged tree (in-process)"] = []
        from orchestrator.remote.ship import ship
        from orchestrator.remote.ssh import Connection
        from orchestrator.remote.tree import code_tree
        from orchestrator.spec.clusterparse import parse_cluster

        spec = parse_cluster((base / "laptop.yaml").read_text()).remote
        assert spec is not None
        conn = Connection(spec, laptop_env)
        for part in ("orchestrator", "tests", "docs"):  # a fixed copy: edits in this checkout change nothing
            shutil.copytree(ROOT / part, base / "tree" / part, ignore=shutil.ignore_patterns("__pycache__"))
        tree = code_tree(base / "tree")
        ship(conn, tree, spec.workdir, laptop_env)
        for round_ in range(args.runs + 2):
            for name, (argv, env) in rows.items():
                took, used = _time(argv, env, base / "proj")
                if round_ >= 2:
                    times[name].append(took)
                    cpu[name].append(used)
            start = time.perf_counter()
            shipped = ship(conn, tree, spec.workdir, laptop_env)
            if round_ >= 2:
                times["ship unchanged tree (in-process)"].append(time.perf_counter() - start)
            assert shipped.sent == 0
        conn.close()
    print(f"{args.runs} runs each, alternated; {len(tree.files)} files in the shipped tree; "
          f"{'real Slurm clients' if args.slurm else 'stub Slurm clients'}; ~/.bashrc "
          f"{'read' if args.with_bashrc else 'not read'} by ssh commands; load average {os.getloadavg()[0]:.1f}")
    print(f"{'row':<40} {'median s':>9} {'min s':>7} {'cpu s':>7}")
    for name, values in times.items():
        used = f"{statistics.median(cpu[name]):>7.3f}" if name in cpu else f"{'-':>7}"
        print(f"{name:<40} {statistics.median(values):>9.3f} {min(values):>7.3f} {used}")
    gap = statistics.median(times["orch status JOB (laptop, over SSH)"]) - statistics.median(
        times["orch status JOB (login node)"])
    print(f"remote - login node (medians): {gap:+.3f} s (target: within 0.3 s)")
    shutil.rmtree(base, ignore_errors=True)
    shutil.rmtree(laptop_env["ORCH_SSH_DIR"], ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
