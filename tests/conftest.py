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
# process) run in one pytest-xdist worker (``--dist loadgroup``), so that each shape is
# compiled once for the whole suite (``changerate_bayes.bayes._nuts`` keeps compiled
# models per process) instead of once in every worker. Two groups, one per family of
# models, so that the two workers share the sampling; the other tests fill in around them.
# (xdist_group needs ``--dist loadgroup``, set in pyproject.toml.)
XDIST_GROUPS = {
    "tests/test_bayes_posterior.py": "nuts_posterior",
    "tests/test_bayes_calibration.py": "nuts_posterior",
    "tests/test_bayes_pooled.py": "nuts_pooled",
    "tests/test_bayes_pooled_marginal.py": "nuts_pooled",
    "changerate_bayes/bayes/_pooled.py": "nuts_pooled",
    # one local Dask cluster (a module fixture, ~7 s to start) for all the tests using it
    "tests/test_cluster.py": "dask_cluster",
}


# README examples (tests/test_readme.py runs each one) that fit a model of one of the
# families above join its group, so that they reuse its compiled model.
README_NUTS = {"pooled_posterior(": "nuts_pooled"}


def _readme_group(item):
    callspec = getattr(item, "callspec", None)
    if callspec is None or "index" not in callspec.params:
        return None
    block = item.module.BLOCKS[callspec.params["index"]]
    return next((group for call, group in README_NUTS.items() if call in block), None)


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = item.nodeid.split("::")[0]
        group = XDIST_GROUPS.get(path)
        if group is None and path == "tests/test_readme.py":
            group = _readme_group(item)
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
