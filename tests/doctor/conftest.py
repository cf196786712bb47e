"""The doctor's tests: under pytest-xdist the workers share the doctor's readings of the corpus (real_corpus.SHARED),
so a script the corpus's scores, its held-out sets and its fixes all read is read once per run, not once per
worker."""

from __future__ import annotations

import os

import pytest
import real_corpus


@pytest.fixture(scope="session", autouse=True)
def _shared_readings(tmp_path_factory: pytest.TempPathFactory) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker's base folder is in the run's own, which its peers share
        real_corpus.SHARED = tmp_path_factory.getbasetemp().parent / "doctor-readings"
