"""Shared test configuration."""

import matplotlib
import numpy as np
import pytest
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")

# Deterministic, CI-sized hypothesis runs: same examples on every machine.
settings.register_profile(
    "ci", max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")


@pytest.fixture
def rng():
    """A fresh seeded generator per test."""
    return np.random.default_rng(12345)


# Tests that compile the same PyMC/nutpie models (about 15 s per model shape and
# process) run in one pytest-xdist worker (``--dist loadgroup``, set in pyproject.toml), so
# that each shape is compiled once for the whole suite (``changerate_bayes.bayes._nuts``
# keeps compiled models per process) instead of once in every worker: the modules set
# ``pytestmark = pytest.mark.xdist_group(...)`` ("nuts_posterior", "nuts_pooled"; the Dask
# tests share "dask_cluster", one local cluster). The mark must be there at collection:
# pytest-xdist reads it before a conftest's pytest_collection_modifyitems could add it.


def pytest_collection_modifyitems(config, items):
    # Modules with slow or grouped tests first (a stable sort: the order within and between
    # modules is kept otherwise, so module fixtures are set up once per worker as before):
    # pytest-xdist hands tests out in this order, so no worker is left with a long test at
    # the end of the run.
    long_modules = {
        item.nodeid.split("::")[0]
        for item in items
        if item.get_closest_marker("slow") is not None or item.get_closest_marker("xdist_group") is not None
    }
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in long_modules)
