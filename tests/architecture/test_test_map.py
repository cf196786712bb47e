"""tests/ mirrors orchestrator/: every module has a test file in its mirrored folder, or a reason here.

The rule (docs/testing.md, "Where a test goes"): the tests of ``orchestrator/<package>/<module>.py`` live in
``tests/<package>/`` (sub-packages too: ``orchestrator/records/snapshots/store.py`` -> ``tests/records/snapshots/``),
in a file named ``test_<module>.py`` or ``test_<module>_<behaviour>.py``, or, where another layer has a module
of the same name, ``test_<package>_<module>[_<behaviour>].py`` (the last package's name: ``test_runtime_launch.py``,
``test_task_launch.py``, ``test_snapshots_store.py``). A leading underscore is dropped (``commands/_torchrun.py``
-> ``test_torchrun.py``). The top-level modules (``cli.py``, ``api.py``, ``job.py``, ``errors.py``) are tested
in ``tests/commands/``. ``__init__.py`` files are not modules here (re-exports; the public facade is
tested by tests/commands/test_public_api.py).

A module without such a file is listed in ``COVERED_ELSEWHERE`` with where its tests are. Both directions are
checked: a new module with neither fails, and so does an entry for a module that is gone or now has its own
file (so the table never goes stale). Test files have unique basenames: pytest imports them by basename
(``prepend`` mode, no ``__init__.py``), so two ``test_x.py`` in different folders would not both import.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from support import ROOT

PACKAGE = ROOT / "orchestrator"
TESTS = ROOT / "tests"
TOP_LEVEL_TESTS = "commands"  # where the tests of orchestrator/<module>.py (cli, api, job, errors) live
# Folders of tests/ that mirror no package: fixtures, shared helpers (support/) and cross-cutting checks (gpu: the
# checks that need a CUDA device, across layers, run by scripts/gpu-check.sh; bench: the pure parts of bench/'s
# scripts, never their timed runs).
NOT_MIRRORS = {"e2e", "docs", "architecture", "gpu", "golden", "jobs", "scripts", "stubs", "bench", "support"}

# module (relative to orchestrator/) -> where it is tested, and why there.
COVERED_ELSEWHERE: dict[str, str] = {
    "job.py": "the documented alias for old job files: tests/commands/test_public_api.py",
    "errors.py": ("every refusal test asserts the error type and its hint "
                  "(e.g. tests/commands/test_submit_malformed.py)"),
    "commands/_common.py": ("the verbs' options built from the one table: tests/spec/test_options.py, "
                            "tests/commands/test_submit.py, tests/local/test_runner.py"),
    "commands/_tables.py": "plain text tables: tests/commands/test_status_logs.py and test_list_jobs_many.py",
    "commands/clean.py": "orch clean: tests/records/snapshots/test_snapshots_store.py",
    "commands/cancel.py": "tests/commands/test_status_logs.py (status, logs, cancel, list, plot)",
    "commands/compare.py": "tests/commands/test_plot_compare_tb.py",
    "commands/doctor.py": "the doctor's CLI contract: tests/doctor/test_doctor.py",
    "commands/env.py": "tests/commands/test_hosts_env.py (orch hosts and orch env)",
    "commands/nodes.py": "orch nodes: tests/records/restarts/test_badnodes.py",
    "commands/_mcp_server.py": "the MCP server over stdio, driven by the SDK's client: tests/commands/test_mcp.py",
    "commands/run.py": "orch run: tests/local/test_runner.py and the rest of tests/local/",
    "service/planstore.py": "orch mcp's plan and submit tools over it: tests/commands/test_mcp_plan.py",
    "service/localjobs.py": "the API's local mode (real runs through submitit): tests/commands/test_api.py",
    "commands/tb.py": "tests/commands/test_plot_compare_tb.py",
    "doctor/analysis.py": "the doctor's corpus: tests/doctor/test_doctor.py, tests/doctor/test_real_corpus.py",
    "doctor/catalog.py": "the catalog's severity policy: tests/doctor/test_doctor_project.py",
    "doctor/frameworknames.py": "the names each framework is read by: tests/doctor/test_frameworks.py",
    "doctor/gate.py": "the doctor in front of a launch: tests/doctor/test_doctor_launch.py, test_doctor_ignore.py",
    "doctor/hydratargets.py": "a Hydra app's YAML and structured configs: tests/doctor/test_frameworks.py",
    "doctor/launchstyle.py": ("the finding a style answers, the per-node refusal of a constant master: "
                              "tests/launchstyles/test_launchstyle.py"),
    "doctor/rules_random.py": "each rule by its codes in the corpus: tests/doctor/test_doctor.py",
    "doctor/rules_spawn.py": "each rule by its codes in the corpus: tests/doctor/test_doctor.py",
    "doctor/save_guards.py": "the guards a save runs under (DDP006): tests/doctor/test_rules_saves_guards.py",
    "launchstyles/style.py": "each style from its facts: tests/launchstyles/test_launchstyle.py, test_facts.py",
    "local/restarts.py": "orch run's restarts with real ranks: tests/slurm/test_restart.py",
    "records/atomic.py": ("exercised by every writer; tests/records/test_jobdirs.py, "
                          "tests/runtime/test_runtime_checkpoint.py"),
    "records/curves.py": "orch plot/compare: tests/commands/test_plot_compare_tb.py",
    "records/jobindex.py": "the index of submitted jobs: tests/commands/test_logs_script_jobs.py, test_status_logs.py",
    "records/training.py": "the training records orch status reads: tests/commands/test_status_logs.py",
    "records/restarts/attempts.py": "attempts.json's arithmetic: tests/slurm/test_restart.py",
    "records/restarts/nodeevidence.py": "the evidence table: tests/records/restarts/test_badnodes.py",
    "records/restarts/seen.py": ("what srun reported, completed into the outcome records: "
                                 "tests/records/restarts/test_blame.py"),
    "records/snapshots/clean.py": "snapshot cleaning: tests/records/snapshots/test_snapshots_store.py",
    "records/snapshots/collect.py": "which files a snapshot holds: tests/records/snapshots/test_snapshots_store.py",
    "remote/forward.py": "against a real OpenSSH server: tests/remote/test_remote.py",
    "remote/ship.py": "against a real OpenSSH server: tests/remote/test_remote.py",
    "remote/ssh.py": "against a real OpenSSH server: tests/remote/test_remote.py",
    "remote/tree.py": "against a real OpenSSH server: tests/remote/test_remote.py",
    "runtime/bind.py": "the GPU binding of script tasks: tests/spec/test_script.py",
    "runtime/entry.py": "the task's entry: tests/runtime/test_runtime_launch.py",
    "runtime/trainer.py": ("the training loop in real gloo ranks: tests/runtime/test_runtime_launch.py, "
                           "tests/runtime/test_runtime_datasets.py, tests/runtime/test_periodic.py"),
    "runtime/epochs.py": ("mid-epoch resumes bit-exact, each epoch's metrics: tests/runtime/test_periodic.py, "
                          "tests/runtime/test_runtime_datasets.py"),
    "runtime/banner.py": ("the start-up lines and the resume line: tests/runtime/test_runtime_datasets.py, "
                          "tests/runtime/test_periodic.py, tests/local/test_runner.py"),
    "runtime/imports.py": "the CLI's start-up imports: tests/records/test_startup.py",
    "runtime/measures.py": "tests/runtime/test_runtime_sources.py, tests/runtime/test_runtime_loop.py",
    "runtime/progress.py": "tests/runtime/test_runtime_sources.py",
    "runtime/rendezvous.py": ("the rendezvous store on loopback: "
                              "tests/task/test_reaper.py, tests/task/test_task_launch.py"),
    "runtime/selftest.py": "measured in real ranks: tests/task/test_task_selftest.py, tests/e2e/test_e2e_selftest.py",
    "runtime/schedule.py": "tests/runtime/test_runtime_sources.py",
    "runtime/setup.py": "real runs: tests/local/test_runner.py, tests/runtime/test_runtime_launch.py",
    "runtime/task.py": "tests/runtime/test_runtime_loop.py, tests/runtime/test_runtime_datasets.py",
    "runtime/dist.py": "process groups of real gloo ranks: tests/runtime/test_runtime_checkpoint.py",
    "slurm/jobstate.py": "orch status's states: tests/commands/test_status_logs.py, tests/slurm/test_slurm_state.py",
    "slurm/nodememory.py": "bad nodes left out: tests/records/restarts/test_badnodes.py",
    "slurm/queries.py": ("squeue, sacct, the completion log and scontrol asked in batches, job_status: "
                         "tests/slurm/test_slurm_state.py, test_client_batches.py, tests/e2e/test_e2e_many_ids.py"),
    "slurm/resources.py": "resolved in the plan: tests/slurm/test_slurm_plan.py, test_slurm_plan_limits.py",
    "slurm/shellctx.py": "the shell contexts of the templates: tests/slurm/test_templating.py",
    "slurm/submission.py": ("sbatch and the folder it writes: tests/service/test_queue.py, "
                            "tests/commands/test_submit.py, tests/slurm/test_slurm_tracking.py"),
    "spec/clusterparse.py": ("cluster.yaml parsed and validated, every bad field named with its fix: "
                             "tests/spec/test_cluster.py, test_cluster_limits.py, test_cluster_bounds.py"),
    "spec/containers.py": "apptainer and pyxis scripts: tests/slurm/test_render_script.py",
    "source/flow.py": "the reader through the doctor's corpus: tests/doctor/test_doctor.py",
    "source/rankdevices.py": ("devices numbered by the global rank (DDP001, DDP010): tests/doctor/test_doctor.py, "
                              "tests/doctor/test_confidence_context.py"),
    "source/syspath.py": "the script's own project: tests/doctor/test_doctor_project.py",
    "spec/doctorcodes.py": "the doctor's codes and their policy: tests/doctor/test_doctor_project.py",
    "spec/remote.py": "the remote section of cluster.yaml: tests/remote/test_remote.py",
    "spec/safefile.py": "the safe reader: tests/commands/test_status_hostile_records.py",
    "spec/snapshot.py": "tests/records/snapshots/test_snapshots_store.py, test_snapshots_preview.py",
    "spec/tracking.py": "run ids and merged settings: tests/task/test_trackers.py",
    "task/outcome.py": "the ranks' outcome records: tests/records/restarts/test_blame.py",
    "task/preempt.py": "tests/runtime/test_runtime_preempt.py, tests/runtime/test_periodic.py",
    "restarts/recovery.py": "restarts inside the allocation: tests/slurm/test_restart.py",
    "restarts/generation.py": "a survivor's next generation: tests/restarts/test_agent_windows.py",
}


def modules(package: Path) -> list[str]:
    """Every module of ``package`` as a path relative to it (``records/snapshots/store.py``), no ``__init__``."""
    return sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                  if p.name != "__init__.py" and "__pycache__" not in p.parts)


def files_for(module: str, tests: Path) -> list[Path]:
    """The test files that the naming rule gives ``module`` (relative to orchestrator/), found under ``tests``."""
    parts = Path(module).parts
    folder = tests.joinpath(*parts[:-1]) if len(parts) > 1 else tests / TOP_LEVEL_TESTS
    name = Path(parts[-1]).stem.lstrip("_")
    prefixes = [f"test_{name}"] + ([f"test_{parts[-2]}_{name}"] if len(parts) > 1 else [])
    return sorted(p for p in folder.glob("test_*.py")
                  if any(p.stem == pre or p.stem.startswith(pre + "_") for pre in prefixes))


def problems(package: Path, tests: Path, elsewhere: dict[str, str]) -> list[str]:
    found = []
    mods = modules(package)
    for module in mods:
        own = files_for(module, tests)
        if not own and module not in elsewhere:
            found.append(f"{module}: no test file in its mirrored folder (see docs/testing.md) and no entry in "
                         "COVERED_ELSEWHERE")
        if own and module in elsewhere:
            found.append(f"{module}: has {own[0].relative_to(tests)}; drop its COVERED_ELSEWHERE entry")
    found += [f"{module}: in COVERED_ELSEWHERE but no such module" for module in elsewhere if module not in mods]
    return found


def test_every_module_has_a_test_file_or_a_reason() -> None:
    assert problems(PACKAGE, TESTS, COVERED_ELSEWHERE) == []


def test_test_files_have_unique_basenames_and_live_in_a_folder() -> None:
    files = [p for p in TESTS.rglob("test_*.py") if "real" not in p.relative_to(TESTS).parts]
    clashes = [name for name, n in Counter(p.name for p in files).items() if n > 1]
    assert clashes == []
    assert [p.name for p in files if p.parent == TESTS] == []  # a new test goes into its layer's folder


def test_every_test_folder_mirrors_a_package_or_is_named_as_cross_cutting() -> None:
    packages = {str(p.parent.relative_to(PACKAGE)) for p in PACKAGE.rglob("__init__.py")} - {"."}
    folders = {str(p.relative_to(TESTS)) for p in TESTS.rglob("*") if p.is_dir() and p.name != "__pycache__"}
    strays = sorted(f for f in folders if f not in packages and f.split("/")[0] not in NOT_MIRRORS
                    and not f.startswith("doctor/"))
    assert strays == []


def test_the_map_fails_for_a_new_module_without_tests(tmp_path: Path) -> None:
    package, tests = tmp_path / "orchestrator", tmp_path / "tests"
    for module in ("spec/units.py", "spec/fresh.py", "runtime/launch.py", "task/launch.py", "records/logs/view.py",
                   "cli.py", "commands/_torchrun.py"):
        (package / module).parent.mkdir(parents=True, exist_ok=True)
        (package / module).write_text("", encoding="utf-8")
    for test in ("spec/test_units_bounds.py", "runtime/test_runtime_launch.py", "task/test_launch_x.py",
                 "records/logs/test_logs_view.py", "commands/test_cli.py", "commands/test_torchrun.py"):
        (tests / test).parent.mkdir(parents=True, exist_ok=True)
        (tests / test).write_text("", encoding="utf-8")
    assert problems(package, tests, {}) == [
        "spec/fresh.py: no test file in its mirrored folder (see docs/testing.md) and no entry in COVERED_ELSEWHERE"]
    assert problems(package, tests, {"spec/fresh.py": "why"}) == []
    assert problems(package, tests, {"spec/fresh.py": "why", "spec/units.py": "x", "spec/gone.py": "y"}) == [
        "spec/units.py: has spec/test_units_bounds.py; drop its COVERED_ELSEWHERE entry",
        "spec/gone.py: in COVERED_ELSEWHERE but no such module"]
