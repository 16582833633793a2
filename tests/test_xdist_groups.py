"""The suite's pytest-xdist groups take effect.

Tests that compile the same NUTS models, or share one Dask cluster, carry an
``xdist_group`` mark (see ``tests/conftest.py``). Under ``--dist loadgroup`` pytest-xdist
sends a group to one worker by appending ``@<group>`` to each test's node id on the worker.
pytest 9.2 no longer takes that rewrite (pytest-xdist 3.8 writes the old ``_nodeid``
field), so the groups spread over every worker without any error and each worker compiles
the same models again; the test extra pins pytest below 9.2 for that reason. The first test
fails if a pytest / pytest-xdist pair drops the grouping again.
"""

import pytest


@pytest.mark.xdist_group("nuts_pooled")
def test_a_grouped_test_carries_its_group_exactly_when_loadgroup_is_on(request):
    grouping = bool(getattr(request.config.option, "loadgroup", False))
    assert request.node.nodeid.endswith("@nuts_pooled") == grouping, (request.node.nodeid, grouping)


def test_the_doctest_that_fits_the_pooled_model_joins_the_pooled_group():
    """``conftest.DOCTEST_GROUPS`` recognises the NUTS doctest by the call in its source."""
    import doctest

    from conftest import DOCTEST_GROUPS

    from changerate_bayes.bayes import _pooled

    tests = {t.name.rsplit(".", 1)[-1]: t for t in doctest.DocTestFinder().find(_pooled) if t.examples}
    source = "".join(example.source for example in tests["pooled_posterior"].examples)
    assert [g for call, g in DOCTEST_GROUPS.items() if call in source] == ["nuts_pooled"]
