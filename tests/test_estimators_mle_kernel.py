"""The compiled MLE path against the likelihood equation itself: at every prefix of
rectangular and ragged histories (past the exactly-solved first crawls, with every crawl
changed or none, tiny and huge intervals, extreme change-to-crawl ratios) the root is 0.0
while no crawl saw a change, inf while every crawl did, and otherwise the score
Σ I τ e^{−Δτ}/(1 − e^{−Δτ}) − Σ (1 − I) τ changes sign within 1e-12 relative of it (the
kernel certifies its roots to 1e-13); brentq checks every prefix of a few pages."""

import warnings

import numba as nb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal
from test_estimators import _brentq_root

from changerate_bayes import CrawlHistory, StatisticalWarning, estimate_path, simulate_history
from changerate_bayes.estimators._kernels import _cubic_step as _new_cubic_step
from changerate_bayes.estimators._kernels import _em1, _local_sums_changed
from changerate_bayes.estimators._kernels import _local_sums as _new_local_sums

# the tests that compile the estimators' kernels run in one pytest-xdist worker, so that a
# fresh checkout compiles them once, not once in every worker at the same time
pytestmark = pytest.mark.xdist_group("estimator_kernels")


_JIT = dict(cache=True, nogil=True, error_model="numpy")


def _new_path(history):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)
        out = estimate_path(history, "mle")
    return np.atleast_2d(out)


def _prefix_scores(changed, tau, prefixes, d, block=512):
    """Score of the likelihood equation of prefix j = prefixes[r] of one page at Δ = d[r]:
    s = Σ_{l<=j} I_l τ_l e^{−Δ τ_l}/(1 − e^{−Δ τ_l}) − Σ_{l<=j} (1 − I_l) τ_l (decreasing in Δ)."""
    out = np.empty(d.size)
    for s in range(0, d.size, block):
        r = slice(s, s + block)
        j = prefixes[r]
        c, t = changed[: j.max() + 1], tau[: j.max() + 1]
        x = d[r, None] * t
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            terms = np.where(c == 1, t * np.exp(-x) / -np.expm1(-x), -t)
        terms[np.arange(t.size)[None, :] > j[:, None]] = 0.0
        out[r] = terms.sum(axis=1)
    return out


def _assert_roots_of_the_likelihood_equation(history, path, rtol=1e-12):
    """0.0 / inf / NaN (padding) exactly where the definition puts them; every finite root
    brackets the sign change of the prefix score within ``rtol`` relative."""
    lengths = history.lengths
    assert path.shape == (lengths.size, int(lengths.max()))
    for i, (lo, hi) in enumerate(zip(history.offsets[:-1], history.offsets[1:])):
        changed, tau = history.flat_changed[lo:hi].astype(np.int64), history.flat_intervals[lo:hi]
        k = hi - lo
        ones = np.cumsum(changed)
        want = np.where(ones == 0, 0.0, np.where(ones == np.arange(1, k + 1), np.inf, np.nan))
        row = path[i]
        assert np.isnan(row[k:]).all()
        edge = ~np.isnan(want)
        assert_array_equal(row[:k][edge], want[edge])
        root = row[:k][~edge]
        assert np.all(np.isfinite(root) & (root > 0)), i
        if root.size:
            sub = np.flatnonzero(~edge)
            below = _prefix_scores(changed, tau, sub, root * (1 - rtol))
            above = _prefix_scores(changed, tau, sub, root * (1 + rtol))
            assert np.all(below > 0) and np.all(above < 0), (i, sub[~((below > 0) & (above < 0))][:5])


def _histories():
    rng = np.random.default_rng(11)
    n, k = 24, 700
    delta, p = rng.uniform(0.2, 8.0, (n, 1)), rng.uniform(0.5, 4.0, (n, 1))
    tau = rng.exponential(1.0, (n, k)) / p
    changed = (rng.random((n, k)) < -np.expm1(-delta * tau)).astype(np.int8)
    changed[0, :60] = 1  # inf for 60 crawls, then finite (tracking starts from an inf root)
    changed[1, :300] = 0  # 0.0 for 300 crawls, then finite
    changed[2] = 1  # every crawl changed: inf throughout
    changed[3] = 0  # none: 0.0 throughout
    yield "rectangular", CrawlHistory(changed, tau)
    lengths = np.array([1, 2, 5, 31, 32, 33, 34, 100, 128, 129, 400, 1500, 3])
    m = int(lengths.sum())
    tau = rng.exponential(1.0, m) / 2.0
    changed = (rng.random(m) < 0.6).astype(np.int8)
    yield "ragged", CrawlHistory.from_segments(changed, tau, lengths=lengths)
    base = simulate_history(5.0, 3.0, 400, n_pages=6, rng=4)
    yield "tiny intervals", CrawlHistory(base.changed, base.intervals * 1e-150)
    yield "huge intervals", CrawlHistory(base.changed, base.intervals * 1e150)
    for delta, p in ((0.01, 10.0), (50.0, 0.5), (500.0, 0.1), (1e-4, 100.0)):
        yield f"delta={delta}, p={p}", simulate_history(delta, p, 300, n_pages=8, rng=3)
    yield "one long page", simulate_history(5.0, 3.0, 5000, rng=7)
    # short pages: the exact phase (first finite root from the equal-interval guess, then the
    # predictor) and the tracking right after it (frequent re-anchors, roots past the disk)
    yield "k=16 pages", simulate_history(5.0, 3.0, 16, n_pages=3000, rng=8)
    yield "k=128 pages", simulate_history(5.0, 3.0, 128, n_pages=300, rng=9)
    changed = (rng.random((50, 40)) < 0.5).astype(np.int8)
    yield "equal intervals", CrawlHistory(changed, np.full((50, 40), 0.37))  # the first guess is the root
    lengths = rng.permutation(np.repeat([2, 16, 17, 128, 129, 1000], [20, 60, 10, 12, 3, 2]))
    rates = np.repeat(rng.uniform(0.1, 20.0, lengths.size), lengths)
    tau = rng.exponential(1.0, int(lengths.sum())) / 2.0
    changed = (rng.random(tau.size) < -np.expm1(-rates * tau)).astype(np.int8)
    yield "ragged short and long", CrawlHistory.from_segments(changed, tau, lengths=lengths)
    # every length around the switch from the exact phase to the series (32 / 33 crawls), and
    # the very short pages whose steps are too large for the predictor's series reversion
    lengths = rng.permutation(np.repeat(np.arange(3, 41), 12))
    rates = np.repeat(rng.uniform(0.5, 10.0, lengths.size), lengths)
    tau = rng.exponential(1.0, int(lengths.sum())) / 3.0
    changed = (rng.random(tau.size) < -np.expm1(-rates * tau)).astype(np.int8)
    yield "pages of 3 to 40 crawls", CrawlHistory.from_segments(changed, tau, lengths=lengths)
    # more changed crawls before the first finite root than the exact phase gathers (64):
    # its sums then run over the whole prefix
    base = simulate_history(2.0, 3.0, 160, n_pages=4, rng=12)
    changed = base.changed.copy()
    changed[0, :80] = 1
    changed[1, :70] = 1
    changed[1, 70:75] = 0
    yield "long inf runs", CrawlHistory(changed, base.intervals)


@pytest.mark.parametrize(("name", "history"), list(_histories()), ids=lambda v: v if isinstance(v, str) else "")
def test_compiled_mle_path_solves_the_likelihood_equation_at_every_prefix(name, history):
    _assert_roots_of_the_likelihood_equation(history, _new_path(history))


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_every_prefix_of_any_short_page_solves_the_likelihood_equation(data):
    k = data.draw(st.integers(1, 80))
    changed = np.array(data.draw(st.lists(st.integers(0, 1), min_size=k, max_size=k)), dtype=np.int8)
    tau = np.array(data.draw(st.lists(st.floats(1e-3, 1e3), min_size=k, max_size=k)))
    h = CrawlHistory(changed[None, :], tau[None, :])
    _assert_roots_of_the_likelihood_equation(h, _new_path(h))


def test_ragged_pages_equal_each_page_alone_and_solve_the_likelihood_equation():
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 260, 40)
    tau = rng.exponential(0.7, int(lengths.sum()))
    changed = (rng.random(int(lengths.sum())) < 0.5).astype(np.int8)
    h = CrawlHistory.from_segments(changed, tau, lengths=lengths)
    new = _new_path(h)
    _assert_roots_of_the_likelihood_equation(h, new)
    for i in (0, 7, int(np.argmax(lengths))):
        assert_array_equal(new[i, : lengths[i]], _new_path(h.page(i))[0])


@nb.njit(**_JIT)
def _em1_all(y, out):
    for i in range(y.size):
        out[i] = _em1(y[i])


def test_arithmetic_expm1_is_within_two_ulp_of_numpy():
    """The libm-free e^y − 1 of the MLE kernels, for the arguments they pass (0 <= y <= 709):
    subnormal to huge, and around the reduction's switch points (y near (n + 1/2) ln 2)."""
    rng = np.random.default_rng(2)
    edges = (np.arange(1, 1000) + 0.5) * np.log(2.0)
    y = np.concatenate(
        [
            [0.0, 5e-324, 1e-300, 1e-20, 1e-8, 709.0],
            10.0 ** rng.uniform(-300, np.log10(709.0), 4000),
            rng.uniform(0.0, 2.0, 2000),
            edges[edges <= 709.0] * (1 + rng.uniform(-1e-15, 1e-15, 1)),
        ]
    )
    got = np.empty_like(y)
    _em1_all(y, got)
    want = np.expm1(y)
    assert got[0] == 0.0 and got[1] == 5e-324
    ulp = np.abs(got - want) / np.spacing(np.maximum(np.abs(want), 5e-324))
    assert ulp.max() <= 2.0


# ----------------------------------------------------------------- pieces of the new kernel
def test_written_out_order_18_series_equals_the_recurrence_in_loops():
    """The order-18 crawl series written out per crawl (one vectorised loop) against the
    generic recurrence: the same coefficients to a few ulp (every term of the recurrence has
    one sign, so reassociating it moves each coefficient by rounding only), for block sizes
    that are and are not whole vectors of 4, and x clamped at both ends."""
    from changerate_bayes.estimators._kernels import _series_block, _series_block_any

    rng = np.random.default_rng(5)
    x_all = np.concatenate(
        [[1e-320, 1e-300, 1e-12, 1e-3, 0.5, 2.0, 30.0, 700.0, 800.0, 1e6], 10.0 ** rng.uniform(-8, 2.8, 22)]
    )
    for m in (1, 3, 4, 5, 17, 31, 32):
        x = rng.permutation(x_all)[:32]
        g_new, g_old = np.full((19, 32), np.nan), np.full((19, 32), np.nan)
        b_new, b_old = np.empty(32), np.empty(32)
        xs_new, xs_old = x.copy(), x.copy()
        _series_block(xs_new, m, 18, g_new, b_new, np.empty(32))
        _series_block_any(xs_old, m, 18, g_old, b_old, np.empty(32))
        assert_array_equal(xs_new[:m], np.clip(x[:m], 1e-300, 800.0))
        assert_array_equal(b_new[:m], b_old[:m])
        signs = (-1.0) ** np.arange(19)[:, None]  # g_n has the sign (−1)^n
        assert np.all(g_old[:, :m] * signs >= 0.0)
        nonzero = g_old[:, :m] != 0.0
        assert_array_equal(g_new[:, :m] != 0.0, nonzero)
        rel = np.abs(g_new[:, :m][nonzero] / g_old[:, :m][nonzero] - 1.0)
        assert rel.max() <= 64 * np.finfo(float).eps, m


@nb.njit(**_JIT)
def _cubic_all(h, t, err):
    for i in range(h.shape[0]):
        t[i], err[i] = _new_cubic_step(h[i])


def test_local_cubic_step_finds_a_known_root_on_both_sides_of_the_reversion_switch():
    """h0 = −(h1 t* + h2 t*²/2 + h3 t*³/6) puts the cubic's root at t* (to the rounding of h0):
    the step finds it to 1e-14 relative whether its first Newton step −h0/h1 is below the
    series-reversion switch (1e-3; a Newton step after the reversion above 1e-5, none below)
    or above it (three clamped Newton steps), wherever the
    tail bound is small enough to matter (<= 1e-9; the roots are accepted at 1e-15), and the tail
    bound is |t|(k|t|)³/(1 − k|t|), k = max(1, |h2/(2 h1)|, |h3/(6 h1)|^½)."""
    rng = np.random.default_rng(8)
    n = 4000
    t_star = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-12, -1.5, n)
    h1 = -(10.0 ** rng.uniform(0, 3, n))
    h2 = -h1 * rng.uniform(-3, 3, n)
    h3 = -h1 * rng.uniform(-6, 6, n)
    h0 = -(h1 * t_star + h2 * t_star**2 / 2 + h3 * t_star**3 / 6)
    h = np.ascontiguousarray(np.stack([h0, h1, h2, h3], axis=1))
    t, err = np.empty(n), np.empty(n)
    _cubic_all(h, t, err)
    first = np.abs(h0 / h1)
    near = err <= 1e-9  # |t| below ~5e-3: three Newton steps from 0 have converged too
    assert (near & (first <= 1e-3)).sum() > 400 and (near & (first > 1e-3)).sum() > 40  # both paths
    assert (near & (first <= 1e-5)).sum() > 200 and (near & (first > 1e-5) & (first <= 1e-3)).sum() > 200  # with
    # and without the Newton step after the reversion
    slack = 4 * np.finfo(float).eps * np.abs(h0 / h1)  # the root moved by the rounding of h0
    assert np.all(np.abs(t - t_star)[near] <= (1e-14 * np.abs(t_star) + slack)[near])
    assert np.all(np.abs(t - t_star) <= 1e-6 * np.abs(t_star))  # farther out: a start for the next pass
    k = np.maximum(1.0, np.maximum(np.abs(h2 / (2 * h1)), np.sqrt(np.abs(h3 / (6 * h1)))))
    kt = k * np.abs(t)
    want = np.where(kt < 0.5, np.abs(t) * kt**3 / (1 - kt), np.inf)
    np.testing.assert_allclose(err, want, rtol=1e-12)


def test_tracked_roots_match_brentq_at_every_prefix():
    """Pages of 200 crawls at several change rates: every prefix's root, from the exact phase
    through the tracking (certified with the s = 7/8 truncation bound, up to ~0.14 from the
    anchor), equals brentq's to 1e-12 relative (both are accurate to ~1e-13 or better)."""
    h = simulate_history(np.array([0.3, 2.0, 5.0, 5.0, 30.0]), 3.0, 200, n_pages=5, rng=21)
    path = _new_path(h)
    changed, tau = h.changed.astype(float), h.intervals
    worst = 0.0
    for i in range(5):
        ones = np.cumsum(changed[i])
        for j in range(200):
            if ones[j] == 0 or ones[j] == j + 1:
                assert path[i, j] == (0.0 if ones[j] == 0 else np.inf)
                continue
            ref = _brentq_root(changed[i, : j + 1], tau[i, : j + 1], "mle")
            worst = max(worst, abs(path[i, j] / ref - 1.0))
    assert worst <= 1e-12


@nb.njit(**_JIT)
def _sums_both(changed, tau, ct, hi, m, d, target, full, compact):
    _new_local_sums(changed, tau, 0, hi, d, target, full, np.empty(64), np.empty(64))
    _local_sums_changed(ct, m, d, target, compact, np.empty(128), np.empty(128))


def test_sums_over_the_changed_crawls_alone_equal_the_sums_over_the_prefix():
    """The exact phase's sums over the changed crawls' intervals only are the same numbers, bit
    for bit, as the sums over the whole prefix (whose unchanged crawls add exact zeros), for
    short runs and blocks, at points where x = dτ is tiny, moderate and clamped (700)."""
    rng = np.random.default_rng(13)
    for hi in (1, 2, 4, 5, 7, 8, 9, 16, 33, 64, 90):
        tau = rng.exponential(0.5, hi)
        changed = (rng.random(hi) < 0.6).astype(np.int8)
        changed[0] = 1
        ct = np.zeros(90)
        m = int(changed.sum())
        ct[:m] = tau[changed == 1]
        for d in (1e-12, 0.3, 4.0, 2e4):
            full, compact = np.empty(4), np.empty(4)
            _sums_both(changed, tau, ct, hi, m, d, 1.7, full, compact)
            assert_array_equal(compact, full)
