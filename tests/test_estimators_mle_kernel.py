"""The compiled MLE path against the kernel it replaced (kept here, verbatim but serial, as the
reference): the same roots to 1e-9 relative (in fact ~1e-13: both are certified to 1e-13) on
rectangular and ragged histories, past the exactly-solved first crawls, with every crawl
changed or none, tiny and huge intervals, and extreme change-to-crawl ratios."""

import warnings

import numba as nb
import numpy as np
import pytest
from numpy.testing import assert_array_equal

from changerate_bayes import CrawlHistory, StatisticalWarning, estimate_path, simulate_history
from changerate_bayes.estimators._kernels import _cubic_step as _new_cubic_step
from changerate_bayes.estimators._kernels import _em1, _local_sums_changed
from changerate_bayes.estimators._kernels import _local_sums as _new_local_sums
from changerate_bayes.estimators._rootkinds import _stirling_weights
from test_estimators import _brentq_root

_JIT = dict(cache=True, nogil=True, error_model="numpy")

# ----------------------------------------------------------------- the previous kernel (reference)
# Constants of the certified Taylor tracking, as in ``_rootkinds`` / ``_rootpath``.
_RHO = 0.08
_SPREAD = 0.5
_MAX_X = 800.0
_MIN_X = 1e-300
_LOCAL_MAX_X = 700.0
_NEWTON_TOL = 1e-9
_EPS = 2.220446049250313e-16


@nb.njit(inline="always", **_JIT)
def _w(x):
    """1/(e^x − 1) for x in [MIN_X, MAX_X]."""
    return np.exp(-x) / -np.expm1(-x)


@nb.njit(**_JIT)
def mle_exact(changed, tau, lo, hi, target, n1, guess):
    """The MLE root over crawls lo..hi−1 (some changed, some not; ``target`` = Σ_{I=0} τ > 0).

    Safeguarded Newton on the scale-free H(Δ) = Σ_{I=1} u(Δτ) − ΔT (u(x) = x/(e^x − 1)),
    which decreases from H(0) = n1 to H(n1/T) <= 0, in the variable t = Δ/d − 1 at the
    current point d: a Newton step that leaves the bracket is replaced by bisection. Stops
    once a Newton step is below 1e-9 relative (taken: the error left is ~1e-18).
    """
    a = 0.0
    b = n1 / target
    d = guess if (guess > a and guess < b) else 0.5 * b
    for _ in range(400):
        h = -d * target
        dh = h
        for j in range(lo, hi):
            if changed[j] != 0:
                x = min(max(d * tau[j], _MIN_X), _LOCAL_MAX_X)
                u = x / np.expm1(x)
                h += u
                dh += u * (1.0 - x - u)
        if h == 0.0:
            return d
        if h > 0.0:
            a = d
        else:
            b = d
        new = d * (1.0 - h / dh)
        if abs(new - d) <= _NEWTON_TOL * d and new > a and new < b:
            return new
        if not (new > a and new < b):
            new = 0.5 * (a + b) if a == 0.0 else np.sqrt(a * b)
        if b - a <= 4.0 * _EPS * b:
            return new
        d = new
    return d


@nb.njit(**_JIT)
def _local_sums(changed, tau, lo, hi, d, target, h):
    """H and its first three derivatives in t at Δ = d(1 + t), t = 0 (the scale-free H of
    ``_rootkinds``: x u' = u(1 − x − u), x² u'' = u(x + u)(x + 2u − 2),
    x³ u‴ = u(x + u)(3(x + 2u) − x² − 6u(x + u)))."""
    h0 = -d * target
    h1 = h0
    h2 = 0.0
    h3 = 0.0
    for j in range(lo, hi):
        if changed[j] != 0:
            x = min(max(d * tau[j], _MIN_X), _LOCAL_MAX_X)
            u = x / np.expm1(x)
            a = u * (x + u)
            su = x + 2.0 * u
            h0 += u
            h1 += u - a
            h2 += a * (su - 2.0)
            h3 += a * (3.0 * su - x * x - 6.0 * a)
    h[0] = h0
    h[1] = h1
    h[2] = h2
    h[3] = h3


@nb.njit(**_JIT)
def _cubic_step(h):
    """The root near t = 0 of h0 + h1 t + h2 t²/2 + h3 t³/6 (three Newton steps from 0,
    |t| <= 1/2) and the tail bound of ``_rootsolve.local_error`` (inf if not accepted)."""
    t = 0.0
    for _ in range(3):
        q = h[0] + t * (h[1] + t * (h[2] / 2.0 + t * h[3] / 6.0))
        dq = h[1] + t * (h[2] + t * h[3] / 2.0)
        t = min(max(t - q / dq, -0.5), 0.5)
    k = max(1.0, max(abs(h[2] / (2.0 * h[1])), np.sqrt(abs(h[3] / (6.0 * h[1])))))
    kt = k * abs(t)
    err = abs(t) * kt**3 / (1.0 - kt) if kt < 0.5 else np.inf
    if not np.isfinite(err):
        err = np.inf
    return t, err


@nb.njit(**_JIT)
def mle_local(changed, tau, lo, hi, target, n1, point, h, local_tol):
    """The MLE root over crawls lo..hi−1 from a good starting point: local cubic models of
    H at the point (one O(k) pass each), accepted once the model's tail bound is below
    ``local_tol``. On return ``h`` holds H's derivatives at the root (in its units), for the
    next crawl's predictor. Returns NaN if three passes do not converge."""
    for _ in range(3):
        if not (point > 0.0 and np.isfinite(point)):
            return np.nan
        _local_sums(changed, tau, lo, hi, point, target, h)
        t, err = _cubic_step(h)
        new = point * (1.0 + t)
        if err <= local_tol:
            one = 1.0 + t
            h1 = (h[1] + t * (h[2] + t * h[3] / 2.0)) * one
            h2 = (h[2] + t * h[3]) * one * one
            h3 = h[3] * one * one * one
            h[0] = 0.0
            h[1] = h1
            h[2] = h2
            h[3] = h3
            return new
        point = new
    return np.nan


@nb.njit(**_JIT)
def _predict(root, h, changed_new, tau_new):
    """The root after one more crawl, from the cubic model of the previous prefix's H at its
    root plus the new crawl's exact term (two Newton steps, O(1))."""
    x = root * tau_new
    tt = 0.0
    for _ in range(2):
        one = 1.0 + tt
        if changed_new:
            xc = min(max(x * one, _MIN_X), _LOCAL_MAX_X)
            u = xc / np.expm1(xc)
            v0 = u
            v1 = u * (1.0 - xc - u) / one
        else:
            v0 = -x * one
            v1 = -x
        m = tt * (h[1] + tt * (h[2] / 2.0 + tt * h[3] / 6.0)) + v0
        dm = h[1] + tt * (h[2] + tt * h[3] / 2.0) + v1
        tt = min(max(tt - m / dm, -0.5), 1.0)
    if not np.isfinite(tt):
        tt = 0.0
    return root * (1.0 + tt)


@nb.njit(**_JIT)
def _add_coefficients(x, tau, weights, order, tail, coef, xp, up, acc):
    """coef[n] += τ · x^n w^{(n)}(x)/n! (the Taylor coefficients of τ w(x(1 + t)) in t), and
    returns the crawl's truncation bound on |t| <= RHO (complete monotonicity)."""
    xc = min(max(x, _MIN_X), _MAX_X)
    e = np.exp(-xc)
    w = e / -np.expm1(-xc)
    u = xc * w
    xp[0] = 1.0
    up[0] = 1.0
    for n in range(1, order + 1):
        xp[n] = xp[n - 1] * xc
        up[n] = up[n - 1] * u
    # acc[n] = Σ_k M[n,k] x^{n−k} u^k, summed over k in order (k outer, so that the n are
    # independent and vectorise); ``weights`` holds M transposed: weights[k, n] = M[n, k]
    for n in range(order + 1):
        acc[n] = weights[0, n] * xp[n]
    for k in range(1, order + 1):
        uk = up[k]
        for n in range(k, order + 1):
            acc[n] += weights[k, n] * xp[n - k] * uk
    scale = tau * w
    for n in range(order + 1):
        coef[n] += acc[n] * scale
    # the bound τ w(x/2) (ρ/s)^(N+1)/(1 − ρ/s) with s = 1/2: w(x/2) = w(x)(1 + e^{x/2})
    # = w + w/√(e^{−x}), no second exponential (for x/2 in [MIN_X, 700])
    xs = x * (1.0 - _SPREAD)
    if xs >= _MIN_X and xs <= 700.0 and xc == x:
        ws = w + w / np.sqrt(e)
    else:
        ws = _w(min(max(xs, _MIN_X), _MAX_X))
    return tau * ws * tail


@nb.njit(inline="always", **_JIT)
def _horner(coef, order, target, t):
    q = coef[order]
    dq = 0.0
    for n in range(order - 1, -1, -1):
        dq = dq * t + q
        q = q * t + coef[n]
    return q - target, dq


@nb.njit(**_JIT)
def _mle_page(changed, tau, lo, hi, weights, order, k_exact, certify, out, row, write, coef, xp, up, acc, stats):
    """The MLE after every crawl of one page (crawls lo..hi−1); returns the last root."""
    n1 = 0.0
    n0 = 0.0
    target = 0.0
    root = np.nan
    anchored = False
    anchor = 1.0
    err = 0.0
    t = 0.0
    has_local = False
    hloc = np.zeros(4)
    ratio = _RHO / _SPREAD
    tail = ratio ** (order + 1) / (1.0 - ratio)
    for j in range(hi - lo):
        g = lo + j
        c = changed[g] != 0
        if c:
            n1 += 1.0
        else:
            n0 += 1.0
            target += tau[g]
        if n1 == 0.0:
            root = 0.0
            has_local = False
        elif n0 == 0.0:
            root = np.inf
            has_local = False
        else:
            solved = False
            if anchored:
                if c:
                    err += _add_coefficients(anchor * tau[g], tau[g], weights, order, tail, coef, xp, up, acc)
                ok = False
                q_lo, _ = _horner(coef, order, target, -_RHO)
                q_hi, _ = _horner(coef, order, target, _RHO)
                if q_lo > err and q_hi < -err:
                    dq = 0.0
                    for _ in range(60):
                        q, dq = _horner(coef, order, target, t)
                        t_new = min(max(t - q / dq, -_RHO), _RHO)
                        if abs(t_new - t) <= 1e-16:
                            t = t_new
                            ok = True
                            break
                        t = t_new
                    # Q' at the last iterate (within 1e-16 of the root): the root's error in t
                    ok = ok and 2.0 * err <= certify * abs(dq)
                if ok:
                    root = anchor * (1.0 + t)
                    solved = True
            if not solved:
                if anchored:  # the root left the disk (or the bound is loose): solve from its edge
                    root = mle_local(changed, tau, lo, g + 1, target, n1, anchor * (1.0 + t), hloc, 1e-15)
                    if not np.isfinite(root):
                        root = mle_exact(changed, tau, lo, g + 1, target, n1, anchor * (1.0 + t))
                        stats[0] += 1
                    has_local = False
                else:
                    new = np.nan
                    if has_local:
                        new = mle_local(changed, tau, lo, g + 1, target, n1,
                                        _predict(root, hloc, c, tau[g]), hloc, 1e-15)
                    if not np.isfinite(new):
                        new = mle_exact(changed, tau, lo, g + 1, target, n1, root)
                        _local_sums(changed, tau, lo, g + 1, new, target, hloc)
                        hloc[0] = 0.0
                        stats[0] += 1
                    root = new
                    has_local = True
                if j + 1 > k_exact:  # (re-)anchor the series at the exact root
                    anchored = True
                    anchor = root
                    t = 0.0
                    err = 0.0
                    for n in range(order + 1):
                        coef[n] = 0.0
                    for i in range(lo, g + 1):
                        if changed[i] != 0:
                            err += _add_coefficients(anchor * tau[i], tau[i], weights, order, tail, coef, xp, up, acc)
                    stats[1] += 1
        if write:
            out[row, j] = root
    return root


@nb.njit(**_JIT)
def mle_segments(changed, tau, offsets, pages, weights, k_exact, certify, out, final, stats):
    """The MLE after every crawl (``out[r, j]``, if ``out.shape[1]``) of each page ``pages[r]``
    of the CSR history, and after its last crawl (``final[r]``), pages in parallel.

    The first ``k_exact`` crawls of a page are solved exactly (``mle_exact``, warm-started
    from the previous root); later ones are tracked with the certified Taylor series around
    an anchor (O(order²) per crawl), re-solved exactly and re-anchored when the
    certificate fails. ``stats`` (2,) receives the exact solves and the re-anchors.
    """
    order = weights.shape[0] - 1
    write = out.shape[1] > 0
    n = pages.size
    n_chunks = min(n, 64)
    exact = np.zeros(n_chunks, dtype=np.int64)
    anchors = np.zeros(n_chunks, dtype=np.int64)
    for ch in range(n_chunks):
        coef = np.zeros(order + 1)
        xp = np.empty(order + 1)
        up = np.empty(order + 1)
        acc = np.empty(order + 1)
        st = np.zeros(2, dtype=np.int64)
        for r in range(ch * n // n_chunks, (ch + 1) * n // n_chunks):
            i = pages[r]
            final[r] = _mle_page(changed, tau, offsets[i], offsets[i + 1], weights, order, k_exact, certify,
                                 out, r, write, coef, xp, up, acc, st)
        exact[ch] = st[0]
        anchors[ch] = st[1]
    stats[0] += exact.sum()
    stats[1] += anchors.sum()


REF_K_EXACT = 128  # the previous kernel solved the first 128 prefixes exactly


def _reference_path(history):
    """The previous kernel's path, shape (n_pages, longest page), NaN past each page's end."""
    lengths = history.lengths
    out = np.full((lengths.size, int(lengths.max())), np.nan)
    weights = np.ascontiguousarray(_stirling_weights(18).T)
    mle_segments(history.flat_changed, history.flat_intervals, history.offsets, np.arange(lengths.size), weights,
                 REF_K_EXACT, 1e-13, out, np.empty(lengths.size), np.zeros(2, dtype=np.int64))
    return out


def _new_path(history):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)
        out = estimate_path(history, "mle")
    return np.atleast_2d(out)


def _assert_same_roots(new, old, rtol=1e-9):
    """0.0, inf and NaN (padding) in the same places; finite positive roots within rtol."""
    assert new.shape == old.shape
    regular = np.isfinite(old) & (old > 0)
    assert_array_equal(np.isfinite(new) & (new > 0), regular)
    assert_array_equal(new[~regular & ~np.isnan(old)], old[~regular & ~np.isnan(old)])
    assert_array_equal(np.isnan(new), np.isnan(old))
    rel = np.abs(new[regular] / old[regular] - 1.0)
    assert rel.max(initial=0.0) <= rtol
    return rel.max(initial=0.0)


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
def test_compiled_mle_path_equals_the_previous_kernel(name, history):
    rel = _assert_same_roots(_new_path(history), _reference_path(history))
    assert rel <= 1e-12, name  # both certified to 1e-13


def test_ragged_pages_equal_each_page_alone_and_the_previous_kernel():
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 260, 40)
    tau = rng.exponential(0.7, int(lengths.sum()))
    changed = (rng.random(int(lengths.sum())) < 0.5).astype(np.int8)
    h = CrawlHistory.from_segments(changed, tau, lengths=lengths)
    new = _new_path(h)
    _assert_same_roots(new, _reference_path(h))
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
    y = np.concatenate([[0.0, 5e-324, 1e-300, 1e-20, 1e-8, 709.0], 10.0 ** rng.uniform(-300, np.log10(709.0), 4000),
                        rng.uniform(0.0, 2.0, 2000), edges[edges <= 709.0] * (1 + rng.uniform(-1e-15, 1e-15, 1))])
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
    x_all = np.concatenate([[1e-320, 1e-300, 1e-12, 1e-3, 0.5, 2.0, 30.0, 700.0, 800.0, 1e6],
                            10.0 ** rng.uniform(-8, 2.8, 22)])
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
