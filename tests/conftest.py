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


# Tests that compile PyMC/nutpie models (about 15 s per model shape and process) run in
# one pytest-xdist worker (``--dist loadgroup``), so that each shape is compiled once
# for the whole suite (``changerate_bayes.bayes._nuts`` keeps compiled models per
# process) instead of once in every worker; the other workers share the rest.
NUTS_MODULES = (
    "tests/test_bayes_posterior.py",
    "tests/test_bayes_calibration.py",
    "tests/test_bayes_pooled.py",
    "tests/test_bayes_pooled_marginal.py",
    "tests/test_readme.py",
    "changerate_bayes/bayes/_pooled.py",
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.split("::")[0] in NUTS_MODULES:
            item.add_marker(pytest.mark.xdist_group("nuts"))
