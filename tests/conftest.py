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
NUTS_GROUPS = {
    "tests/test_bayes_posterior.py": "nuts_posterior",
    "tests/test_bayes_calibration.py": "nuts_posterior",
    "tests/test_bayes_pooled.py": "nuts_pooled",
    "tests/test_bayes_pooled_marginal.py": "nuts_pooled",
    "changerate_bayes/bayes/_pooled.py": "nuts_pooled",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        group = NUTS_GROUPS.get(item.nodeid.split("::")[0])
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
