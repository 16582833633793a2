"""The compiled grid summary: against the NumPy grid, against the posterior on a fine uniform
grid (the definition), and the sharing of one computation by pages with the same statistics."""

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changerate_bayes import BetaPrimePrior, CrawlHistory, GammaPrior, LogNormalPrior, posterior_summary
from changerate_bayes.bayes._grid import fit_grid, improper_pages
from changerate_bayes.bayes._sufficient import crawl_rates, exact_likelihood
from changerate_bayes.bayes._summary import distinct_pages, posterior_mean_interval

# the tests that compile the grid posterior's and the summary's kernels run in one pytest-xdist
# worker, so that a fresh checkout compiles them once, not once in every worker at the same time
pytestmark = pytest.mark.xdist_group("grid_kernels")


def random_history(rng, n_pages, *, max_len=40, crawl_rate=None):
    lengths = rng.integers(1, max_len, n_pages)
    tau = rng.exponential(5.0, lengths.sum()) * np.exp(rng.normal(0, 1.5, lengths.sum()))
    rate = np.repeat(rng.lognormal(-3, 1.5, n_pages), lengths)
    changed = (rng.random(lengths.sum()) < -np.expm1(-rate * tau)).astype(np.int8)
    if crawl_rate is None:
        crawl_rate = lengths / np.add.reduceat(tau, np.concatenate(([0], np.cumsum(lengths)[:-1])))
    return CrawlHistory.from_segments(changed, tau, lengths=lengths, crawl_rate=crawl_rate)


def numpy_grid_summary(h, prior, level):
    """The summary from the NumPy grid (._grid.fit_grid): Z_1/Z_0 and the quantiles of the Z_0 grid."""
    coef = prior.coefficients(crawl_rates(h)).as_arrays(h.lengths.size)
    lik = exact_likelihood(h)
    g0 = fit_grid(lik, coef)
    shifted = dict(coef, A=coef["A"] + 1.0)
    inf = improper_pages(lik, shifted)
    shifted["A"] = np.where(inf, coef["A"], shifted["A"])
    mean = np.where(inf, np.inf, np.exp(fit_grid(lik, shifted).log_norm - g0.log_norm))
    q = g0.quantile(np.array([(1 - level) / 2, (1 + level) / 2]))
    return mean, q[:, 0], q[:, 1]


@pytest.mark.parametrize(
    "prior", [BetaPrimePrior(1.0, 2.0), GammaPrior(0.5, 2.0), BetaPrimePrior(0.2, 1.5), LogNormalPrior(-2.0, 1.5)]
)
def test_compiled_summary_equals_the_numpy_grid(prior):
    # the same algorithm: equal to rounding (a few ulps per operation; 1e-12 relative)
    h = random_history(np.random.default_rng(5), 400)
    s = posterior_mean_interval(h, prior=prior, level=0.9)
    mean, lower, upper = numpy_grid_summary(h, prior, 0.9)
    for got, want in ((s.mean, mean), (s.lower, lower), (s.upper, upper)):
        assert np.array_equal(np.isfinite(got), np.isfinite(want))
        fin = np.isfinite(want)
        np.testing.assert_allclose(got[fin], want[fin], rtol=1e-12)


def _fine_grid_reference(changed, tau, a, b, level):
    """Mean and CDF of Δ under a Gamma(a, b) prior from the posterior on 300,001 equally spaced
    nodes of u = log Δ in [-60, 15] (trapezoid rule): the definition, no adaptation."""
    u = np.linspace(-60.0, 15.0, 300_001)
    eu = np.exp(u)
    f = a * u - b * eu - tau[changed == 0].sum() * eu  # Gamma prior in u (Jacobian e^u) and S0
    for t in tau[changed == 1]:
        f += np.log(-np.expm1(-t * eu))
    w = np.exp(f - f.max())
    z = np.trapezoid(w, u)
    mean = np.trapezoid(eu * w, u) / z
    cdf = np.concatenate(([0.0], np.cumsum(0.5 * (w[1:] + w[:-1]) * np.diff(u)))) / z
    return mean, lambda x: np.interp(np.log(x), u, cdf)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.floats(0.01, 100.0)), min_size=1, max_size=12),
    st.floats(0.5, 3.0),
    st.floats(0.1, 5.0),
)
def test_summary_matches_the_posterior_on_a_fine_uniform_grid(crawls, a, b):
    changed = np.array([c for c, _ in crawls], dtype=np.int8)
    tau = np.array([t for _, t in crawls])
    h = CrawlHistory.from_segments(changed, tau, lengths=[tau.size], crawl_rate=1.0)
    s = posterior_summary(h, prior=GammaPrior(a, b), level=0.8)
    mean, cdf = _fine_grid_reference(changed, tau, a, b, 0.8)
    # the fine grid's own error: trapezoid with step 2.5e-4 in u, < 1e-7 relative on smooth
    # log-concave densities; the adapted 64-node grid integrates to ~1e-10
    assert s.mean[0] == pytest.approx(mean, rel=1e-7)
    # the quantiles invert the 64-node grid's CDF (Simpson cell masses, log-linear inside a
    # cell): within 5e-5 in probability, as for the exact Gamma posterior (test_bayes_summary)
    assert cdf(s.lower[0]) == pytest.approx(0.1, abs=5e-5)
    assert cdf(s.upper[0]) == pytest.approx(0.9, abs=5e-5)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 5))
def test_pages_with_the_same_statistics_share_one_computation_bit_for_bit(seed, n_base, copies):
    rng = np.random.default_rng(seed)
    base = random_history(rng, n_base, max_len=15, crawl_rate=0.2)
    pick = rng.integers(0, n_base, n_base * copies)  # each page repeated, the copies interleaved
    segs = [
        (
            base.flat_changed[base.offsets[i] : base.offsets[i + 1]],
            base.flat_intervals[base.offsets[i] : base.offsets[i + 1]],
        )
        for i in pick
    ]
    h = CrawlHistory.from_segments(
        np.concatenate([c for c, _ in segs]),
        np.concatenate([t for _, t in segs]),
        lengths=[c.size for c, _ in segs],
        crawl_rate=0.2,
    )
    alone = [posterior_summary(CrawlHistory.from_segments(c, t, lengths=[c.size], crawl_rate=0.2)) for c, t in segs]
    s = posterior_summary(h)
    for name in ("mean", "sd", "lower", "upper"):
        np.testing.assert_array_equal(getattr(s, name), np.concatenate([getattr(x, name) for x in alone]))
    coef = BetaPrimePrior(1.0, 2.0).coefficients(np.full(pick.size, 0.2)).as_arrays(pick.size)
    reps, inverse, _, _ = distinct_pages(
        h.flat_changed.astype(np.int8), h.flat_intervals, h.offsets, [coef[k] for k in "ABCMEL"]
    )
    # pages with the same crawls get one representative; the changed crawls' order does not matter
    assert reps.size <= np.unique(pick).size
    first = {}
    for row, i in enumerate(pick):
        first.setdefault(int(i), row)
        assert inverse[row] == inverse[first[int(i)]]


def test_shuffled_changed_crawls_share_the_computation():
    # the summary depends on the multiset of changed intervals and on S0: a page whose changed
    # crawls come in another order is the same page
    changed = np.array([1, 0, 1, 1, 0, 1], dtype=np.int8)
    tau = np.array([3.0, 2.0, 0.5, 7.0, 1.0, 0.25])
    order = np.array([3, 0, 5, 2, 1, 4])
    h = CrawlHistory.from_segments(
        np.concatenate([changed, changed[order]]), np.concatenate([tau, tau[order]]), lengths=[6, 6], crawl_rate=0.5
    )
    s = posterior_summary(h)
    assert s.mean[0] == s.mean[1] and s.lower[0] == s.lower[1] and s.upper[0] == s.upper[1]
    assert s.sd[0] == s.sd[1]


def test_summary_does_not_depend_on_the_threads():
    h = random_history(np.random.default_rng(9), 600)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = posterior_summary(h)
        numba.set_num_threads(max(1, numba.config.NUMBA_NUM_THREADS))
        many = posterior_summary(h)
    finally:
        numba.set_num_threads(before)
    for name in ("mean", "sd", "lower", "upper"):
        np.testing.assert_array_equal(getattr(one, name), getattr(many, name))


def test_a_failing_page_is_named_in_page_order():
    # page 1 saw no change: under a Gamma prior of shape 5e-324 its posterior is too flat in
    # log Δ for float64 quadrature (page 0 saw one, so its left tail has slope 1)
    h = CrawlHistory.from_segments([1, 0, 0], [1.0, 2.0, 1.0], lengths=[2, 1], crawl_rate=1.0)
    with pytest.raises(ValueError, match="the posterior of page 1 is too flat in log Δ"):
        posterior_summary(h, prior=GammaPrior(5e-324, 1.0))
