"""The O(grid) exact log-likelihood state of the streaming estimator: exact at every Δ."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from changerate_bayes.bayes._lattice import NODES_PER_UNIT, LatticeLikelihood
from changerate_bayes.bayes._likelihood import ExactLikelihood


def _stream(changed, tau):
    lat = LatticeLikelihood(changed.shape[0])
    for j in range(changed.shape[1]):
        lat.update(changed[:, j] > 0, tau[:, j])
    return lat


@pytest.fixture(scope="module")
def wide():
    """Three pages, 120 crawls, τ from 1e-6 to 1e6 (log-uniform), about half changed."""
    gen = np.random.default_rng(11)
    tau = np.exp(gen.uniform(np.log(1e-6), np.log(1e6), (3, 120)))
    changed = (gen.random((3, 120)) < 0.5).astype(int)
    return changed, tau


def test_lattice_equals_the_exact_log_likelihood_at_any_rate(wide):
    changed, tau = wide
    lat, exact = _stream(changed, tau), ExactLikelihood(changed, tau)
    # inside the lattice (interpolated), and far beyond both ends (asymptotic forms)
    u = np.concatenate([np.linspace(-60.0, 30.0, 2001), np.linspace(-700.0, 700.0, 141)])
    got = lat.value_grid(np.broadcast_to(u, (3, u.size)).copy())
    ref = np.array([exact.value(np.full(3, x)) for x in u]).T
    assert_allclose(got, ref, rtol=1e-12, atol=1e-11)
    for x in (-40.0, -13.3, -2.71, 0.0, 5.5, 14.2, 200.0):
        g, h = lat.derivatives(np.full(3, x))
        g_ref, h_ref = exact.derivatives(np.full(3, x))
        assert_allclose(g, g_ref, rtol=1e-9, atol=1e-9)
        assert_allclose(h, h_ref, rtol=1e-6, atol=1e-7)


def test_lattice_spans_the_intervals_seen_and_grows_only_for_new_ones():
    lat = LatticeLikelihood(1)
    lat.update([True], [1.0])
    first = (lat.k_lo, lat.k_hi)
    # about 44 units of log Δ around log(1/τ) = 0, 16 nodes per unit
    assert first[0] / NODES_PER_UNIT <= -40.0 and first[1] / NODES_PER_UNIT >= np.log(40.0)
    assert first[1] - first[0] < 46 * NODES_PER_UNIT
    before = lat.values.copy()
    lat.update([False], [1e6])  # no change seen: only the exposure grows
    assert (lat.k_lo, lat.k_hi) == first and np.array_equal(lat.values, before) and lat.t0[0] == 1e6
    lat.update([True], [1e6])  # a change over a long interval: the lattice reaches down to log(1/1e6) − 40
    assert lat.k_lo / NODES_PER_UNIT <= -np.log(1e6) - 40.0 and lat.k_hi == first[1]
    # the new nodes hold the exact sum, as if they had been there from the start
    changes_only = ExactLikelihood(np.array([[1, 1]]), np.array([[1.0, 1e6]]))
    u = lat.nodes[::NODES_PER_UNIT]
    assert_allclose(
        lat.values[0, ::NODES_PER_UNIT], [changes_only.value(np.array([x]))[0] for x in u], rtol=1e-14, atol=1e-14
    )


@pytest.mark.parametrize("tau", [1e-300, 1e300])
def test_extreme_intervals_stay_exact(tau):
    lat = LatticeLikelihood(1)
    lat.update([True], [tau])
    lat.update([False], [tau])
    exact = ExactLikelihood(np.array([[1, 0]]), np.array([[tau, tau]]))
    for x in np.linspace(-np.log(tau) - 60, -np.log(tau) + 10, 57):
        assert lat.value(np.array([x]))[0] == pytest.approx(exact.value(np.array([x]))[0], rel=1e-12, abs=1e-12)


def test_merge_equals_one_lattice_over_all_crawls(wide):
    changed, tau = wide
    a, b = _stream(changed[:, :50], tau[:, :50]), _stream(changed[:, 50:], tau[:, 50:])
    whole, merged = _stream(changed, tau), a.merge(b)
    assert (merged.k_lo, merged.k_hi) == (min(a.k_lo, b.k_lo), max(a.k_hi, b.k_hi))
    u = np.broadcast_to(np.linspace(-40.0, 20.0, 301), (3, 301)).copy()
    assert_allclose(merged.value_grid(u), whole.value_grid(u), rtol=1e-12, atol=1e-10)
    assert_allclose(merged.t0, whole.t0, rtol=1e-14)
    assert np.array_equal(merged.n_changed, whole.n_changed)
    assert a.n_changed.sum() + b.n_changed.sum() == changed.sum()  # the parts are untouched
