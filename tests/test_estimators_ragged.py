"""Pages of any length: ragged paths, final_estimates, streaming with masks, the compiled
kernels against the numpy implementations they replace, and crawl rates near the float64 limit."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from changerate_bayes import CrawlHistory, StatisticalWarning, estimate_path, final_estimates
from changerate_bayes.estimators import ESTIMATORS, METHODS
from changerate_bayes.estimators._crawlcheck import N_EDGES, poisson_distance_segments
from changerate_bayes.estimators._sa import stepsize_at, stepsizes
from changerate_bayes.estimators._sam import momenta, momentum_at

# the tests that compile the estimators' kernels run in one pytest-xdist worker, so that a
# fresh checkout compiles them once, not once in every worker at the same time
pytestmark = pytest.mark.xdist_group("estimator_kernels")


PARAMS = {"lln": {"alpha": "log"}, "sa": {"eta": 0.8, "initial": 0.5}, "sam": {"eta": 0.9, "beta": 0.6}}


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)
        return fn(*args, **kw)


def _ragged(lengths, rng, *, per_page_rate):
    n = int(sum(lengths))
    p = rng.uniform(0.5, 3.0, len(lengths)) if per_page_rate else 2.0
    rates = np.repeat(p, lengths) if per_page_rate else p
    tau = rng.exponential(1.0, n) / rates
    changed = (rng.random(n) < 0.45).astype(np.int8)
    return CrawlHistory.from_segments(changed, tau, lengths=lengths, crawl_rate=p)


def _same(a, b, rtol):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert_array_equal(np.isfinite(a), np.isfinite(b))
    assert_array_equal(a[~np.isfinite(a)], b[~np.isfinite(b)])  # inf/nan in the same places
    assert_allclose(a[np.isfinite(a)], b[np.isfinite(b)], rtol=rtol, atol=0)


# ------------------------------------------------------------------ ragged = per page
@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=2, max_size=6), st.integers(0, 2**31), st.booleans())
def test_ragged_paths_and_finals_equal_each_page_alone(lengths, seed, per_page_rate):
    h = _ragged(lengths, np.random.default_rng(seed), per_page_rate=per_page_rate)
    for method in METHODS:
        params = PARAMS.get(method, {})
        path = _quiet(estimate_path, h, method, **params)
        final = _quiet(final_estimates, h, method, **params)
        assert path.shape == (len(lengths), max(lengths)) and final.shape == (len(lengths),)
        for i, n in enumerate(lengths):
            alone = _quiet(estimate_path, h.page(i), method, **params)
            _same(path[i, :n], alone, 1e-12)
            assert np.isnan(path[i, n:]).all()
            _same(final[i], alone[-1], 1e-11 if method in ("mle", "mm") else 1e-15)
            assert _quiet(final_estimates, h.page(i), method, **params) == pytest.approx(final[i], rel=1e-11)


@pytest.mark.parametrize("method", ["mle", "mm"])
def test_ragged_roots_past_the_exact_regime_equal_each_page_alone(method):
    """Pages longer than the exactly-solved first crawls are Taylor-tracked; grouping by length
    does not change their roots."""
    h = _ragged([300, 7, 150, 40], np.random.default_rng(3), per_page_rate=True)
    path, final = estimate_path(h, method), final_estimates(h, method)
    for i, n in enumerate(h.lengths):
        alone = estimate_path(h.page(i), method)
        _same(path[i, :n], alone, 1e-12)
        _same(final[i], alone[-1], 1e-11)


def test_final_estimates_of_a_rectangular_history_are_the_last_column():
    rng = np.random.default_rng(5)
    h = CrawlHistory((rng.random((6, 30)) < 0.4).astype(int), rng.exponential(0.5, (6, 30)), crawl_rate=2.0)
    for method in METHODS:
        last = _quiet(estimate_path, h, method)[:, -1]
        _same(_quiet(final_estimates, h, method), last, 1e-11)
    one = CrawlHistory([1, 0, 1, 1], [0.4, 0.2, 0.5, 0.3], crawl_rate=3.0)
    assert final_estimates(one, "naive") == 3.0 * 3 / 4 and isinstance(final_estimates(one, "mle"), float)


def test_ragged_hand_values():
    h = CrawlHistory.from_segments([1, 0, 0, 1, 1, 0], [1.0, 2.0, 1.0, 0.5, 0.5, 3.0], lengths=[2, 4], crawl_rate=2.0)
    path = estimate_path(h, "naive")
    assert_array_equal(path[0, :2], [2.0, 1.0]) and np.isnan(path[0, 2:]).all()
    assert_array_equal(path[1], [0.0, 1.0, 2.0 * 2 / 3, 1.0])
    # MLE of page 0: 1/(e^Δ − 1) = 2, Δ = log(3/2)
    assert final_estimates(h, "mle")[0] == pytest.approx(math.log(1.5), rel=1e-14)
    assert_array_equal(final_estimates(h, "lln", alpha=1.0), [2.0 * 1 / (2 + 1 - 1), 2.0 * 2 / (4 + 1 - 2)])


def test_ragged_regular_check_uses_each_pages_own_crawls():
    h = CrawlHistory.from_segments(np.zeros(50, dtype=int), np.full(50, 0.5), lengths=[20, 30], crawl_rate=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StatisticalWarning)
        estimate_path(h, "regular")  # every τ = 1/p: no warning
    # mean p·τ = 1 but sd 0.5: bias ≈ (Δ̂/p)·0.25/2 ≈ 0.08 with half the crawls changed
    jitter = CrawlHistory.from_segments(
        np.tile([1, 0], 25), np.tile([0.25, 0.75], 25), lengths=[20, 30], crawl_rate=2.0
    )
    with pytest.warns(StatisticalWarning, match="2 of 2 page"):
        final_estimates(jitter, "regular")


# ------------------------------------------------------------------ Poisson check over segments
def _reference_distance(z):
    """The definition: u = 1 − e^{−z} (uniform for Poisson crawling), binned into N_EDGES
    equal cells; the largest gap between the empirical CDF of the cells and the uniform
    one at the inner cell edges l/N_EDGES, per page (rows of z) and pooled over all crawls."""
    cells = np.minimum(np.floor(-np.expm1(-z) * N_EDGES), N_EDGES - 1)
    levels = np.arange(1, N_EDGES) / N_EDGES
    below = cells[:, :, None] < np.arange(1, N_EDGES)  # crawl j falls below edge l
    per_page = np.abs(below.sum(axis=1) / z.shape[1] - levels).max(axis=1)
    pooled = float(np.abs(below.sum(axis=(0, 1)) / z.size - levels).max())
    return per_page, pooled


@pytest.mark.parametrize("k", [25, 31, 32, 200])  # both sides of the short-page path (k < 32)
@pytest.mark.parametrize("seed", range(4))
def test_poisson_distance_kernel_equals_its_definition(seed, k):
    rng = np.random.default_rng(seed)
    tau = rng.exponential(rng.uniform(0.05, 5.0), (40, k))
    if seed == 3:  # the cell edges themselves, the ends and beyond
        from changerate_bayes.estimators._crawlcheck import _cell_edges

        edges = _cell_edges()[0][1:-1]
        pts = np.concatenate([edges, np.nextafter(edges, 0), [5e-324, 1e-300, 50.0, 1e300]])
        tau = np.resize(pts, tau.shape)
    p = rng.uniform(0.5, 2.0, 40)
    h = CrawlHistory((tau > 1).astype(int), tau, crawl_rate=p)
    per_page, pooled = poisson_distance_segments(h)
    ref_page, ref_pool = _reference_distance(tau * p[:, None])
    # the same cells; the distances within an ulp (counts are exact integers; count/k is
    # rounded before the subtraction, an absolute error up to 2^-53, which the cancellation
    # leaves as it is)
    assert_allclose(per_page, ref_page, rtol=1e-15, atol=2.3e-16)
    assert pooled == pytest.approx(ref_pool, rel=1e-15, abs=1e-17)


def test_poisson_distance_kernel_on_pages_of_every_length_equals_its_definition():
    rng = np.random.default_rng(5)
    lengths = np.array([1, 2, 3, 31, 32, 33, 64, 130, 1, 31, 32])
    n = int(lengths.sum())
    tau = rng.exponential(0.7, n)
    tau[::7] = np.resize([1e-300, 1e300, 50.0], tau[::7].size)  # the first and the last cell
    p = rng.uniform(0.5, 2.0, lengths.size)
    h = CrawlHistory.from_segments(np.zeros(n, dtype=int), tau, lengths=lengths, crawl_rate=p)
    per_page, pooled = poisson_distance_segments(h)
    z = tau * np.repeat(p, lengths)
    pages = np.split(z, np.cumsum(lengths)[:-1])
    ref_page = np.array([_reference_distance(page[None, :])[0][0] for page in pages])
    assert_allclose(per_page, ref_page, rtol=1e-15, atol=2.3e-16)
    assert pooled == pytest.approx(_reference_distance(z[None, :])[1], rel=1e-15, abs=2.3e-16)


def test_poisson_check_on_ragged_histories():
    rng = np.random.default_rng(11)
    lengths = rng.integers(5, 60, 200)
    n = int(lengths.sum())
    poisson = CrawlHistory.from_segments(
        np.zeros(n, dtype=int), rng.exponential(0.5, n), lengths=lengths, crawl_rate=2.0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", StatisticalWarning)
        estimate_path(poisson, "lln")
    regular = CrawlHistory.from_segments(np.zeros(n, dtype=int), np.full(n, 0.5), lengths=lengths, crawl_rate=2.0)
    with pytest.warns(StatisticalWarning, match="Poisson crawling"):
        final_estimates(regular, "sa")


# ------------------------------------------------------------------ streaming with masks
def _rate_at(method, params, alone, count):
    if count > 0:
        return alone[count - 1]
    est = ESTIMATORS[method](crawl_rate=1.0, **params)
    return est.rate  # the value before any crawl


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("warm", [0, 3, 140])
def test_streaming_with_masks_equals_each_pages_path_after_every_update(method, warm):
    """Pages crawled at different times: after every update, each page's rate is its own path
    at its own number of crawls (after ``warm`` updates of every page)."""
    rng = np.random.default_rng(17 + warm)
    n_pages, steps = 6, warm + 30
    p = rng.uniform(0.5, 3.0, n_pages)
    masks = np.ones((steps, n_pages), dtype=bool)
    masks[warm:] = rng.random((steps - warm, n_pages)) < 0.6
    changed = (rng.random((steps, n_pages)) < 0.4).astype(np.int8)
    tau = rng.exponential(1.0, (steps, n_pages)) / p
    params = PARAMS.get(method, {})
    est = ESTIMATORS[method](crawl_rate=p, n_pages=n_pages, **params)
    paths = []
    for i in range(n_pages):
        sel = masks[:, i]
        page = CrawlHistory(changed[sel, i], tau[sel, i], crawl_rate=float(p[i]))
        paths.append(_quiet(estimate_path, page, method, **params))
    for s in range(steps):
        garbage = np.where(masks[s], changed[s], 7)  # unmasked entries are not used (nor checked)
        gtau = np.where(masks[s], tau[s], np.nan)
        _quiet(est.update, garbage, interval=gtau, mask=None if s < warm else masks[s])
        counts = masks[: s + 1].sum(axis=0)
        assert_array_equal(est.page_crawls, counts)
        want = [_rate_at(method, params, paths[i], counts[i]) for i in range(n_pages)]
        _same(est.rate, want, 1e-12)


@pytest.mark.parametrize("warm", [0, 1, 3])
@pytest.mark.parametrize("method", METHODS)
def test_mask_of_no_page_is_a_no_op(method, warm):
    """Every estimator class: an update whose mask is all False leaves every page's rate
    and crawl count as they were (before any crawl, after some, with pages already
    differing), and the next updates go on as if it had not happened."""
    rng = np.random.default_rng(5)
    n = 3
    params = PARAMS.get(method, {})
    est, ref = (ESTIMATORS[method](crawl_rate=1.5, n_pages=n, **params) for _ in range(2))
    steps = [
        (np.array([1, 0, 1]), np.array([0.5, 1.0, 2.0]), None),
        (np.array([0, 1, 1]), np.array([1.0, 0.3, 0.7]), None),
        (np.array([1, 1, 0]), np.array([0.2, 0.4, 1.1]), np.array([True, False, True])),
    ]
    for changed, tau, mask in steps[:warm]:
        for e in (est, ref):
            _quiet(e.update, changed, interval=tau, mask=mask)
    before = np.array(est.rate, dtype=float).copy()
    _quiet(est.update, rng.integers(0, 2, n), interval=rng.exponential(1.0, n), mask=np.zeros(n, dtype=bool))
    _same(est.rate, before, 0.0)
    assert_array_equal(est.page_crawls, ref.page_crawls)
    for e in (est, ref):
        _quiet(e.update, np.array([0, 1, 0]), interval=np.array([0.9, 0.8, 0.6]), mask=np.array([True, True, False]))
    _same(est.rate, ref.rate, 0.0)


def test_mask_leaves_unmasked_pages_untouched_and_is_checked():
    est = ESTIMATORS["sam"](crawl_rate=2.0, n_pages=3)
    est.update([1, 1, 1])
    before = est.estimate_.copy(), est.previous_.copy()
    est.update([0, 5, 1], mask=np.array([True, False, False]))
    assert est.estimate_[1:].tolist() == before[0][1:].tolist()
    assert est.previous_[1:].tolist() == before[1][1:].tolist()
    with pytest.raises(ValueError, match=r"`changed` must be 0 or 1; got 5 at index 1"):
        est.update([0, 5, 1], mask=np.array([True, True, False]))
    with pytest.raises(TypeError, match="`mask` must be a boolean array"):
        est.update([0, 1, 1], mask=[1, 0, 1])
    with pytest.raises(ValueError, match=r"`mask` must have shape \(3,\)"):
        est.update([0, 1, 1], mask=np.array([True, False]))
    with pytest.raises(ValueError, match="`mask` is for estimators of several pages"):
        ESTIMATORS["lln"](crawl_rate=1.0).update(1, mask=True)
    with pytest.raises(
        ValueError, match=r"`interval` must be finite and > 0 on the crawled pages; got -1.0 at index 1"
    ):
        ESTIMATORS["mle"](n_pages=3).update([1, 0, 0], interval=[1.0, -1.0, np.nan], mask=np.array([True, True, False]))


def test_masked_change_counts_merge_per_page():
    a, b = (ESTIMATORS["naive"](crawl_rate=1.0, n_pages=2) for _ in range(2))
    a.update([1, 0], mask=np.array([True, False]))
    b.update([1, 1])
    merged = a.merge(b)
    assert merged.page_crawls.tolist() == [2, 1]
    assert merged.rate.tolist() == [1.0, 1.0]


# ------------------------------------------------------------------ kernels against their recursions
def _reference_sa_path(changed, p, eta, initial):
    """The SA recursion y ← y + η_k (I_k (y + p) − y) on numpy arrays, crawl by crawl (time-major)."""
    etas = stepsizes(eta, changed.shape[1])
    y = np.full(changed.shape[0], float(initial))
    out = np.empty(changed.shape)
    for k in range(changed.shape[1]):
        y = y + etas[k] * (changed[:, k] * (y + p) - y)
        out[:, k] = y
    return out


def _reference_sam_path(changed, p, eta, beta, omega, initial):
    etas, zetas = stepsizes(eta, changed.shape[1]), momenta(eta, beta, omega, changed.shape[1])
    z = np.full(changed.shape[0], float(initial))
    zp = z.copy()
    out = np.empty(changed.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(changed.shape[1]):
            z, zp = z + etas[k] * (changed[:, k] * (z + p) - z) + zetas[k] * (z - zp), z
            out[:, k] = z
    return out


@pytest.mark.parametrize("seed", range(3))
def test_sa_and_sam_kernels_equal_the_previous_recursions(seed):
    rng = np.random.default_rng(seed)
    changed = (rng.random((50, 200)) < rng.uniform(0.1, 0.9)).astype(np.int8)
    p = rng.uniform(0.1, 10.0, 50)
    h = CrawlHistory(changed, crawl_rate=p)
    assert_allclose(
        estimate_path(h, "sa", eta=0.7, initial=1.5),
        _reference_sa_path(changed.astype(float), p, 0.7, 1.5),
        rtol=1e-12,
        atol=0,
    )
    assert_allclose(
        estimate_path(h, "sam", eta=0.9, beta=0.6, omega=1.2, initial=0.3),
        _reference_sam_path(changed.astype(float), p, 0.9, 0.6, 1.2, 0.3),
        rtol=1e-12,
        atol=0,
    )


def test_streaming_kernels_equal_the_previous_numpy_updates():
    rng = np.random.default_rng(8)
    n, steps = 1000, 60
    p = rng.uniform(0.5, 4.0, n)
    changed = rng.random((steps, n)) < 0.3
    sa, sam, lln = (ESTIMATORS[m](crawl_rate=p, n_pages=n) for m in ("sa", "sam", "lln"))
    y = np.zeros(n)
    z = zp = np.zeros(n)
    ones = np.zeros(n)
    for k in range(steps):
        c = changed[k]
        for est in (sa, sam, lln):
            est.update(c)  # booleans
        y = y + stepsize_at(0.75, k) * (c * (y + p) - y)
        z, zp = z + stepsize_at(0.75, k) * (c * (z + p) - z) + momentum_at(0.75, 0.6, 1.0, k) * (z - zp), z
        ones = ones + c
        assert_allclose(sa.rate, y, rtol=1e-12, atol=0)
        assert_allclose(sam.rate, z, rtol=1e-12, atol=0)
        assert_allclose(lln.rate, p * ones / (k + 1 + 1.0 - ones), rtol=1e-12, atol=0)


@pytest.mark.parametrize("method", ["lln", "sa", "sam", "naive"])
def test_a_bad_changed_value_leaves_the_state_untouched(method):
    est = ESTIMATORS[method](crawl_rate=2.0, n_pages=4)
    est.update(np.array([1, 0, 1, 1]))
    before = est.rate
    for bad, shown in ((np.array([1.0, 0.0, np.nan, 1.0]), "nan at index 2"), (np.array([0, 0, 0, 2]), "2 at index 3")):
        with pytest.raises(ValueError, match=f"`changed` must be 0 or 1; got {shown}"):
            est.update(bad)
    assert_array_equal(est.rate, before) and est.n_crawls_ == 1
    with pytest.raises(TypeError, match="`changed` must be 0/1 numbers"):
        est.update(np.array(["1", "0", "1", "1"]))


# ------------------------------------------------------------------ crawl rates near the float64 limit
P_HUGE = 1.7e308


def test_naive_at_a_huge_crawl_rate_is_finite():
    h = CrawlHistory([1, 1, 0, 1, 0], crawl_rate=P_HUGE)
    assert final_estimates(h, "naive") == pytest.approx(1.02e308, rel=1e-15)
    assert estimate_path(h, "naive")[-1] == pytest.approx(0.6 * P_HUGE, rel=1e-15)
    est = ESTIMATORS["naive"](crawl_rate=P_HUGE)
    for c in [1, 1, 0, 1, 0]:
        est.update(c)
    assert est.rate == pytest.approx(1.02e308, rel=1e-15)


@pytest.mark.parametrize("method", ["sa", "sam"])
def test_sa_and_sam_at_a_huge_crawl_rate_are_the_scaled_answer(method):
    """The recursions are linear in (y, p, y_0): at p = 1.7e308 each iterate is 1.7e308 times the
    iterate at p = 1 (y_0 = 0), so it is finite where that product is below 1.8e308 and +inf
    (never NaN) where the estimate itself is beyond the float64 range."""
    changed = [1, 1, 0, 1, 0, 0, 0, 1, 0, 0]
    unit = estimate_path(CrawlHistory(changed, crawl_rate=1.0), method)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StatisticalWarning)  # no overflow warning: nothing diverged
        huge = estimate_path(CrawlHistory(changed, crawl_rate=P_HUGE), method)
    with np.errstate(over="ignore"):
        want = unit * P_HUGE
    assert not np.isnan(huge).any()
    _same(huge, want, 1e-15)
    assert np.isfinite(huge[-1])
    est = ESTIMATORS[method](crawl_rate=P_HUGE)
    for j, c in enumerate(changed):
        est.update(c)
        _same(est.rate, huge[j], 1e-15)
    assert final_estimates(CrawlHistory(changed, crawl_rate=P_HUGE), method) == huge[-1]


# ------------------------------------------------------------------ compiled MLE path
@pytest.mark.parametrize("seed", range(3))
def test_compiled_mle_path_equals_the_previous_root_tracking(seed):
    """The compiled MLE path (exact first prefixes, then certified Taylor tracking) against the
    numpy root tracking it replaces for the MLE path (``RootPath``), past the exact regime."""
    from changerate_bayes.estimators._rootpath import MLE_KIND, RootPath

    rng = np.random.default_rng(seed)
    n, k = 40, 400
    delta, p = rng.uniform(0.2, 8.0, (n, 1)), rng.uniform(0.5, 4.0, (n, 1))
    tau = rng.exponential(1.0, (n, k)) / p
    changed = (rng.random((n, k)) < -np.expm1(-delta * tau)).astype(np.int8)
    changed[0, :50] = 1  # inf, then finite
    changed[1, :200] = 0  # 0.0, then finite
    new = estimate_path(CrawlHistory(changed, tau), "mle")
    old = RootPath(MLE_KIND, n).extend(changed.astype(float), tau)
    _same(new, old, 1e-9)
    assert np.max(np.abs(new[np.isfinite(old) & (old > 0)] / old[np.isfinite(old) & (old > 0)] - 1)) < 1e-12


def test_mle_pages_with_extreme_intervals_use_the_log_space_solver():
    tau = np.array([[1e-250, 1.0, 1e250, 2.0], [0.5, 1.0, 1.5, 2.0]])
    h = CrawlHistory([[1, 0, 1, 0], [1, 0, 1, 0]], tau)
    path = estimate_path(h, "mle")
    assert np.isfinite(path[:, 1:]).all()
    for i in range(2):
        _same(path[i], estimate_path(h.page(i), "mle"), 1e-12)
        assert final_estimates(h, "mle")[i] == pytest.approx(path[i, -1], rel=1e-11)


@pytest.mark.parametrize("delta,p", [(0.01, 10.0), (50.0, 0.5), (500.0, 0.1), (1e-4, 100.0)])
def test_compiled_mle_path_at_extreme_change_to_crawl_ratios(delta, p):
    """Almost no change seen, or almost every crawl changed: the predictor's derivatives vanish
    or the terms underflow; the compiled path still equals the previous root tracking."""
    from changerate_bayes import simulate_history
    from changerate_bayes.estimators._rootpath import MLE_KIND, RootPath

    h = simulate_history(delta, p, 300, n_pages=50, rng=3)
    new = _quiet(estimate_path, h, "mle")
    old = RootPath(MLE_KIND, 50).extend(h.changed.astype(float), h.intervals)
    _same(new, old, 1e-12)
