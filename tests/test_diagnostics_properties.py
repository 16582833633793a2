"""Property tests of the diagnostics (hypothesis)."""

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from changerate_bayes.diagnostics import poisson_gof
from changerate_bayes.diagnostics._counts import dispersion_statistic, seasonal_exposure
from changerate_bayes.diagnostics._exponential import edf_statistics
from changerate_bayes.diagnostics._prep import prepare_events
from changerate_bayes.diagnostics._trend import laplace_statistic

gaps = st.lists(st.floats(min_value=1e-3, max_value=1e3), min_size=5, max_size=60)


@given(gaps, st.floats(min_value=1e-3, max_value=1e3), st.floats(min_value=-1e4, max_value=1e4))
def test_trend_and_count_statistics_are_affine_invariant(g, scale, shift):
    t = np.cumsum(g)
    z1, _ = laplace_statistic(t)
    z2, _ = laplace_statistic(t * scale + shift)
    assert np.isclose(z1, z2, atol=1e-6)
    _, _, _, counts = dispersion_statistic(t, 3)
    assert counts.sum() == t.size - 2


@given(gaps, st.floats(min_value=1e-3, max_value=1e3))
def test_edf_statistics_are_scale_free(g, scale):
    a, b = edf_statistics(np.array(g)), edf_statistics(np.array(g) * scale)
    for k in ("ks", "cvm"):
        assert np.isclose(a[k], b[k], rtol=1e-9, atol=1e-12)
    assert 0 <= a["ks"] <= 1


@given(
    st.floats(min_value=-1e4, max_value=1e4),
    st.floats(min_value=0, max_value=1e4),
    st.sampled_from([(24.0, 24), (168.0, 7), (24.0, 4)]),
)
def test_seasonal_exposure_adds_up_to_the_span(a, length, cycle):
    period, n_bins = cycle
    e = seasonal_exposure(a, a + length, period, n_bins)
    assert np.all(e >= -1e-9) and np.isclose(e.sum(), length, atol=1e-6 * max(1.0, abs(a)))


@given(st.lists(st.integers(min_value=0, max_value=200), min_size=0, max_size=50), st.integers(0, 10**6))
def test_jitter_keeps_every_event_in_its_cell(ticks, seed):
    t = np.sort(np.array(ticks, dtype=np.float64)) * 0.5  # a grid of step 0.5, ties likely
    prep = prepare_events(t, resolution=0.5, rng=seed)
    assert prep.times.size == t.size and prep.n_ties == int(np.sum(np.diff(t) == 0))
    if prep.jittered:
        assert np.array_equal(np.floor(prep.times / 0.5) * 0.5, t)


@settings(max_examples=15)
@given(st.lists(st.integers(min_value=0, max_value=40), min_size=0, max_size=25), st.booleans())
def test_poisson_gof_never_fails_on_small_or_tied_data(ticks, give_resolution):
    t = np.sort(np.array(ticks, dtype=np.float64)) * 0.1234567891  # no detectable decimal resolution
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = poisson_gof(t, resolution=0.1234567891 if give_resolution else None, n_resamples=19, rng=0)
    assert res.n_events == t.size
    for r in res.tests.values():
        assert (r.pvalue is None) == (not r.ran)
        if r.ran:
            assert 0.0 <= r.pvalue <= 1.0 and np.isfinite(r.statistic)
