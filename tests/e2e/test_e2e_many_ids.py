"""End to end on the local Slurm cluster: ``orch status`` / the Python API asked about 20,000
job ids (the jobs the cluster holds among made-up ones) answer every id, with real squeue and sacct,
instead of dying with ``Argument list too long`` (ids are asked for in batches, ``client.id_batches``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from orchestrator.slurm import queries

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def test_twenty_thousand_ids_get_an_answer_each(slurm_env: SlurmCluster) -> None:
    known = list(queries.squeue())[:50]  # whatever the cluster holds now (other tests' jobs), maybe none
    made_up = [str(9_000_000 + i) for i in range(20_000)]
    ids = [*known, *made_up]
    found = queries.job_status(ids, details=False)
    assert set(found) == set(ids)
    assert all(found[i].state == "UNKNOWN" for i in made_up)
    assert all(found[i].state != "UNKNOWN" for i in known)
