"""W&B and MLflow, opt in: one tracker run per job folder, whatever the attempt (no torch here).

W&B: ``wandb.init(id=<run id>, resume="allow", group=<sweep>)``: every attempt of a job continues the
run of its id. MLflow has no ids of our choosing: the run carries the tag ``orch.run_id`` and every
attempt finds it by that tag (and creates it only when there is none); a sweep's elements are children
(``mlflow.parentRunId``) of one parent run tagged with the sweep's group id. Offline modes work as
the packages define them (``WANDB_MODE=offline``, ``MLFLOW_TRACKING_URI=file:...``).
The packages are extras (``orch[wandb]``, ``orch[mlflow]``): a missing one is a ConfigError naming it.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orchestrator.spec.tracking import TRACKERS, missing_extra

RUN_TAG = "orch.run_id"
PARENT_TAG = "mlflow.parentRunId"
DEFAULT_PROJECT = "orch"  # W&B project / MLflow experiment unless WANDB_PROJECT / MLFLOW_EXPERIMENT_NAME say


def import_tracker(name: str) -> Any:
    module = TRACKERS[name][0]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise missing_extra(name) from None


class WandbSink:
    def __init__(self, *, job_dir: Path, run_id: str, group: str | None, job_name: str,
                 config: Mapping[str, Any]) -> None:
        wandb = import_tracker("wandb")
        name = f"{job_name}-{job_dir.parent.name}-{job_dir.name}" if group else job_dir.name
        self.run = wandb.init(id=run_id, resume="allow", group=group, name=name, dir=str(job_dir),
                              project=os.environ.get("WANDB_PROJECT") or DEFAULT_PROJECT, config=dict(config),
                              job_type="train")

    def scalars(self, values: Mapping[str, float], step: int) -> None:
        self.run.log(dict(values), step=step)

    def close(self, status: str) -> None:
        self.run.finish(exit_code=0 if status in ("completed", "preempted") else 1)


def mlflow_experiment(client: Any) -> str:
    name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_PROJECT
    found = client.get_experiment_by_name(name)
    return str(found.experiment_id) if found is not None else str(client.create_experiment(name))


def mlflow_run(client: Any, experiment: str, run_id: str, *, name: str, parent: str | None = None) -> str:
    """The MLflow run tagged ``orch.run_id = run_id`` (created when there is none); its MLflow id."""
    found = client.search_runs([experiment], filter_string=f"tags.`{RUN_TAG}` = '{run_id}'", max_results=1)
    if found:
        mlflow_id = str(found[0].info.run_id)
        client.update_run(mlflow_id, status="RUNNING")
        return mlflow_id
    tags = {RUN_TAG: run_id, "mlflow.runName": name, **({PARENT_TAG: parent} if parent else {})}
    return str(client.create_run(experiment, tags=tags).info.run_id)


def mlflow_run_id(*, job_dir: Path, run_id: str, group: str | None, job_name: str) -> str:
    """The job folder's MLflow run id (its sweep's parent run first, when it is an array element)."""
    import_tracker("mlflow")
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    experiment = mlflow_experiment(client)
    parent = mlflow_run(client, experiment, group, name=f"{job_name}-{job_dir.parent.name}") if group else None
    if parent is not None:
        client.set_terminated(parent, status="FINISHED")  # the parent only groups: it never runs itself
    return mlflow_run(client, experiment, run_id, name=job_dir.name if not group else
                      f"{job_name}-{job_dir.parent.name}-{job_dir.name}", parent=parent)


class MlflowSink:
    def __init__(self, *, job_dir: Path, run_id: str, group: str | None, job_name: str,
                 config: Mapping[str, Any]) -> None:
        import_tracker("mlflow")
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient()
        self.run_id = mlflow_run_id(job_dir=job_dir, run_id=run_id, group=group, job_name=job_name)
        logged = self.client.get_run(self.run_id).data.params
        from mlflow.entities import Param

        fresh = [Param(str(k), str(v)[:500]) for k, v in config.items() if str(k) not in logged]
        if fresh:  # parameters are immutable in MLflow: the first attempt logs them
            self.client.log_batch(self.run_id, params=fresh)

    def scalars(self, values: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(k, float(v), stamp, step) for k, v in values.items()])

    def close(self, status: str) -> None:
        ended = {"completed": "FINISHED", "preempted": "KILLED"}.get(status, "FAILED")
        self.client.set_terminated(self.run_id, status=ended)


SINKS: dict[str, type[WandbSink] | type[MlflowSink]] = {"wandb": WandbSink, "mlflow": MlflowSink}


def open_sink(name: str, *, job_dir: Path, run_id: str, group: str | None, job_name: str,
              config: Mapping[str, Any]) -> WandbSink | MlflowSink:
    return SINKS[name](job_dir=job_dir, run_id=run_id, group=group, job_name=job_name, config=config)
