"""Shared test configuration."""

import os

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


def pytest_configure(config):
    """A pytest-xdist worker runs numba's parallel kernels on its share of the cores.

    With every core already running a worker, a kernel's extra threads wait for a core held
    by another worker at each parallel region: a region over a few crawls then took ~50 ms
    of wall and ~25 ms of CPU time (spinning OpenMP threads) instead of ~0.03 ms on one
    thread, tens of seconds over the suite. The kernels' results do not depend on the
    number of threads (tests/test_bayes_grid_kernels.py checks this with 1 and 2 threads,
    set explicitly). Outside pytest-xdist numba's default is kept.
    """
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers is None:
        return
    import numba

    numba.set_num_threads(max(1, min(numba.config.NUMBA_NUM_THREADS, (os.cpu_count() or 1) // int(workers))))


@pytest.fixture
def rng():
    """A fresh seeded generator per test."""
    return np.random.default_rng(12345)


# Tests that compile the same PyMC/nutpie models (about 15 s per model shape and
# process) run in one pytest-xdist worker (``--dist loadgroup``, set in pyproject.toml), so
# that each shape is compiled once for the whole suite (``changerate_bayes.bayes._nuts``
# keeps compiled models per process) instead of once in every worker: the modules set
# ``pytestmark = pytest.mark.xdist_group(...)`` ("nuts_posterior", "nuts_pooled"; the Dask
# tests share "dask_cluster", one local cluster). pytest-xdist reads the marks in its own
# pytest_collection_modifyitems on each worker, so the hook below, which adds them to the
# doctests that fit NUTS models, runs first (tryfirst). tests/test_xdist_groups.py checks
# that the grouping takes effect.


#: doctests that fit a NUTS model join the group of the tests that compile it
DOCTEST_GROUPS = {"pooled_posterior(": "nuts_pooled", 'method="nuts"': "nuts_posterior"}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook, which reads the marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        if isinstance(item, pytest.DoctestItem) and item.get_closest_marker("xdist_group") is None:
            source = "".join(example.source for example in item.dtest.examples)
            group = next((g for call, g in DOCTEST_GROUPS.items() if call in source), None)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))
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
