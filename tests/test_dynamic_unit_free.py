"""The random walk's default volatilities are unit-free: c/√(each page's typical crawl interval)."""

from __future__ import annotations

import numpy as np
import pytest

from changerate_bayes import DynamicRateFilter, LogNormalPrior, dynamic_posterior
from changerate_bayes.dynamic import UNIT_FREE_SIGMAS
from changerate_bayes.dynamic._model import rounded_intervals, typical_intervals


def _pages(seed=0, n=4, k=30):
    rng = np.random.default_rng(seed)
    tau = rng.exponential(1.0, size=(n, k))
    changed = (rng.random((n, k)) < 0.4).astype(np.int8)
    return changed, tau


def test_default_does_not_depend_on_the_unit_of_time():
    # the same crawls with time in units 16 times smaller, and prior and lattice moved to
    # match (a factor 2^4 keeps the rounded typical interval exact), predict the same
    changed, tau = _pages()
    grid = np.geomspace(1e-3, 1e2, 120)
    a = dynamic_posterior((changed, tau), prior=LogNormalPrior(0.0, 2.0), grid=grid, smooth=False)
    b = dynamic_posterior(
        (changed, tau * 16.0), prior=LogNormalPrior(-np.log(16.0), 2.0), grid=grid / 16.0, smooth=False
    )
    np.testing.assert_allclose(
        a.predictions["change_probability"].values, b.predictions["change_probability"].values, rtol=1e-9
    )
    np.testing.assert_allclose(
        b.constant_data["typical_interval"].values, 16.0 * a.constant_data["typical_interval"].values, rtol=1e-12
    )
    # an absolute σ does depend on the unit
    c = dynamic_posterior((changed, tau), sigma=0.3, prior=LogNormalPrior(0.0, 2.0), grid=grid, smooth=False)
    d = dynamic_posterior(
        (changed, tau * 16.0), sigma=0.3, prior=LogNormalPrior(-np.log(16.0), 2.0), grid=grid / 16.0, smooth=False
    )
    assert not np.allclose(
        c.predictions["change_probability"].values, d.predictions["change_probability"].values, rtol=1e-6
    )


def test_default_equals_explicit_sigmas_per_page():
    # page i with the default is the absolute model with σ = c/√(rounded median τ_i)
    changed, tau = _pages(1)
    tau[2:] *= 40.0  # two crawl regimes
    grid = np.geomspace(1e-4, 1e2, 100)
    idata = dynamic_posterior((changed, tau), grid=grid, smooth=False)
    m = rounded_intervals(np.median(tau, axis=1))
    np.testing.assert_allclose(idata.constant_data["typical_interval"].values, m)
    np.testing.assert_array_equal(idata.posterior["sigma"].values, UNIT_FREE_SIGMAS)
    for i in range(4):
        ref = dynamic_posterior(
            (changed[i : i + 1], tau[i : i + 1]),
            sigma=np.array(UNIT_FREE_SIGMAS) / np.sqrt(m[i]),
            grid=grid,
            smooth=False,
        )
        np.testing.assert_allclose(
            idata.predictions["change_probability"].values[i],
            ref.predictions["change_probability"].values[0],
            rtol=1e-12,
        )


def test_rounding_and_typical_intervals():
    m = np.array([1.0, 3.0, 100.0, 1e-3])
    r = rounded_intervals(m)
    assert np.all(np.abs(np.log2(r / m)) <= 1 / 16 + 1e-12)
    np.testing.assert_array_equal(rounded_intervals(r), r)
    tau = np.array([[1.0, 2.0, 9.0], [4.0, 5.0, 6.0]])
    mask = np.array([[True, True, True], [False, False, False]])
    np.testing.assert_array_equal(typical_intervals(tau, mask), [2.0, 1.0])


def test_streaming_default_equals_batch_given_the_typical_interval():
    changed, tau = _pages(2)
    tau[1] *= 10.0
    grid = np.geomspace(1e-4, 1e2, 100)
    idata = dynamic_posterior((changed, tau), grid=grid, smooth=False)
    f = DynamicRateFilter(4, grid=grid, typical_interval=np.median(tau, axis=1))
    for j in range(tau.shape[1]):
        np.testing.assert_allclose(
            f.predict_change_probability(tau[:, j]), idata.predictions["change_probability"].values[:, j], rtol=1e-12
        )
        f.update(changed[:, j], tau[:, j])
    # without one, each page's first crawl interval is its typical interval
    g = DynamicRateFilter(4, grid=grid)
    assert np.all(np.isnan(g.typical_interval))
    g.update(changed[:, 0], tau[:, 0], np.array([True, True, False, True]))
    t = g.typical_interval
    np.testing.assert_allclose(t[[0, 1, 3]], rounded_intervals(tau[[0, 1, 3], 0]))
    assert np.isnan(t[2])


def test_typical_interval_input_checks():
    with pytest.raises(TypeError, match="typical_interval"):
        DynamicRateFilter(2, sigma=0.1, typical_interval=1.0)
    with pytest.raises(ValueError, match="typical_interval"):
        DynamicRateFilter(2, typical_interval=[1.0, 0.0])
    with pytest.raises(ValueError, match="typical_interval"):
        DynamicRateFilter(2, typical_interval=[1.0, 2.0, 3.0])
