"""The compiled parts of the index allocation: K against its definition, the table's
interpolant within its bound of K and its roots meeting their condition, and results
independent of the number of threads."""

import math

import numba
import numpy as np
import pytest
from scipy.special import gammainc

from changerate_bayes.scheduling import _index_allocation as ia

XI, A = np.polynomial.hermite_e.hermegauss(16)
A = A / A.sum()


def _k_reference(s, u):
    """K(u) = log Σ_q a_q e^{−sξ_q} ψ(e^{u + sξ_q}), ψ(x) = P(2, x) = 1 − e^{−x}(1 + x)."""
    xi, a = (XI, A) if s > 0 else (np.zeros(1), np.ones(1))
    return math.log(np.sum(a * np.exp(-s * xi) * gammainc(2.0, np.exp(u + s * xi))))


def test_k_and_its_slope_match_the_definition():
    s = np.array([0.0, 0.3, 1.0, 2.5])
    u0, hu, n_u = -20.0, 0.37, 100  # u from −20 to 16.6: series, closed form and flat nodes
    for s_i in s:
        tab = ia._kernels()["table"](XI, A, s_i, 2, u0, hu, n_u)  # rows s = 0 and s_i
        row = 0 if s_i == 0 else 1  # s = 0: a point mass
        for k in range(n_u):
            u = u0 + k * hu
            want = _k_reference(s_i, u)
            # ψ's closed form at x = 0.1 (the series below): 1e-16/ψ = 2e-14 relative in that node
            assert tab[row, k, 0] == pytest.approx(want, rel=0, abs=1e-13)
            h = 1e-5  # central difference of the definition: error O(h²) of the third derivative
            slope = (_k_reference(s_i, u + h) - _k_reference(s_i, u - h)) / (2 * h)
            assert tab[row, k, 1] / hu == pytest.approx(slope, rel=1e-8, abs=1e-9)
            h = 1e-3  # second difference: error O(h²) ~ 1e-7, rounding 1e-16 |K|/h² <= 1e-8
            curve = (_k_reference(s_i, u + h) - 2 * want + _k_reference(s_i, u - h)) / h**2
            assert tab[row, k, 2] / hu**2 == pytest.approx(curve, rel=1e-5, abs=1e-6)


def _k_of_pages(s, u):
    """K at (s_i, u_i) from the definition (:func:`_k_reference`, vectorised over pages)."""
    xi = np.where(s[:, None] > 0, XI[None, :], 0.0)
    a = np.where(s[:, None] > 0, A[None, :], np.where(np.arange(16) == 0, 1.0, 0.0)[None, :])
    x = np.exp(u[:, None] + s[:, None] * xi)
    return np.log(np.sum(a * np.exp(-s[:, None] * xi) * gammainc(2.0, x), axis=1))


def test_the_tables_interpolant_is_within_its_bound_of_k():
    # 20,000 points (s, u) with s <= 2 (10% point masses) and |u| <= 30, K from the definition:
    # the largest error on a fine grid is 1.35e-8 (at s near 2), the bound 2e-8
    rng = np.random.default_rng(7)
    n = 20000
    s = np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0.0, 2.0, n))
    u = rng.uniform(-30.0, 30.0, n)
    got = _interpolate(s, u)
    want = _k_of_pages(s, u)
    err = np.abs(got[:, 0] - want)
    assert err.max() <= ia.TABLE_ERROR
    assert np.median(err) < ia.TABLE_ERROR / 20  # the bound is set by a few cells, not all
    # on a row and at a node of u, the table itself (K exact to 1e-13 there)
    j, k = rng.integers(0, ia._TABLE_NS - 4, 50), rng.integers(0, ia._TABLE_NU - 1, 50)
    at = _interpolate(j * ia._TABLE_HS, ia._TABLE_U0 + k * ia._TABLE_HU)
    np.testing.assert_allclose(at[:, 0], ia._table()[j, k, 0], rtol=0, atol=1e-13)


def _interpolate(s, u):
    """(K, K', K'') of the table's interpolant at (s_i, u_i)."""
    from changerate_bayes.scheduling._index_allocation_kernels import _k_table

    tab = ia._table()

    @numba.njit
    def run(s, u, tab, hs, u0, hu):
        out = np.empty((s.size, 3))
        for i in range(s.size):
            out[i, 0], out[i, 1], out[i, 2] = _k_table(u[i], s[i], tab, hs, u0, hu)
        return out

    return run(np.asarray(s, dtype=float), np.asarray(u, dtype=float), tab, ia._TABLE_HS, ia._TABLE_U0, ia._TABLE_HU)


def _pages(n, seed):
    rng = np.random.default_rng(seed)
    rate = rng.lognormal(math.log(0.5), 1.5, n)
    sd = np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0.0, 4.0, n))
    m = np.log(rate)
    dead = np.zeros(n, dtype=bool)
    return m, sd, m.copy(), dead, math.log(1e-4), math.log(1e3)  # bounds of log t


def _solve(kernel, z, pages, *extra):
    m, s, b, dead, ulo, utop = pages
    n = m.size
    u, k1, k2, state = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int8)
    ia._start(u, z, b, s, ~dead)
    out = kernel(z, 0.0, m, s, b, dead, ulo, utop, 1e-3, XI, A, 1.0, u, k1, k2, state, *extra)
    return out, u, k1, state


def _table_args(n):
    """The table arguments of the kernels for n pages (the table of K, the table of roots)."""
    return (ia._table(), ia._TABLE_HS, ia._TABLE_U0, ia._TABLE_HU, 1e-5, *ia._roots(), np.zeros(n))


def _no_table_args():
    empty = np.zeros((0, 0, 3))
    return (empty, 1.0, 0.0, 1.0, 1e-5, empty, np.zeros(0), np.ones(3), np.zeros(0))


def test_the_tables_roots_meet_their_condition_within_its_bound():
    # pages of s up to 4 (beyond the table's s <= 2: exact steps): at each root u_i the exact K
    # (from the definition) is within the table's bound 2e-8 of c_i = z + b_i, so the index at
    # the interval is within 2e-8 relative of the price; the exact search's roots are where
    # K = c to rounding, so |δu| <= 2e-8/K'; nearly all pages end in the same state
    pages = _pages(4000, 3)
    m, s, b = pages[0], pages[1], pages[2]
    kernels = ia._kernels()
    for z in (-6.0, -2.0, 0.0):
        exact, u, k1, state = _solve(kernels["spend"], z, pages)
        table, u_t, k1_t, state_t = _solve(kernels["tiles"], z, pages, *_table_args(m.size))
        assert table[2] < exact[2] * np.mean(s > 2) * 1.5  # exact steps: pages of s > 2 (mostly)
        inside = ((state_t == 0) | (state_t == ia._TABLE_ROOT)) & (state == 0)
        wide = inside & (s > 2)  # they end on K itself
        assert np.abs(_k_of_pages(s[wide], u_t[wide]) - (z + b[wide])).max() <= 1e-11
        assert inside.sum() > 2500
        k_at = _k_of_pages(s[inside], u_t[inside])
        assert np.abs(k_at - (z + b[inside])).max() <= ia.TABLE_ERROR
        # the roots taken from the table of roots (s <= 1.5, the index below e^{−1} of its top)
        roots = state_t[inside] == ia._TABLE_ROOT
        assert roots.sum() > 800 and not np.any(s[inside][roots] > 1.5)
        assert np.abs(k_at - (z + b[inside]))[roots].max() <= ia.ROOTS_ERROR
        steep = inside & (k1 > 0.05)
        assert np.all(np.abs(u_t - u)[steep] <= ia.TABLE_ERROR / k1[steep] + 1e-12)
        assert (np.where(state_t == ia._TABLE_ROOT, 0, state_t) == state).mean() > 0.999
        # the spend and its slope from those roots
        inv = np.where(state_t == 1, 1e4, np.where(state_t == 2, 1e-3, np.exp(m - u_t)))
        assert table[0] == pytest.approx(inv.sum(), rel=1e-13)


def test_a_cold_start_ends_its_roots_at_the_next_call():
    # state 4 (no root yet) starts each root on the small-t bound inside the kernel and ends it
    # roughly (state 5: a Halley step below 1e-2); the next call at the same price evaluates
    # each again: the roots of a start on the bound (_start) to 1e-10, and no rough root left
    pages = _pages(3000, 5)
    m, s, b, dead, ulo, utop = pages
    n = m.size
    kernel = ia._kernels()["tiles"]
    runs = []
    for cold in (False, True):
        u, k1, k2 = np.zeros(n), np.zeros(n), np.zeros(n)
        state = np.full(n, ia._COLD if cold else 0, dtype=np.int8)
        if not cold:
            ia._start(u, -1.0, b, s, ~dead)
        out = kernel(-1.0, 0.0, m, s, b, dead, ulo, utop, 1e-3, XI, A, 1.0, u, k1, k2, state, *_table_args(n))
        if cold:
            rough = state == ia._ROUGH
            assert rough.mean() > 0.3 and not (state == ia._COLD).any()
            assert rough[s > 2].any()  # pages of 2 < s <= 4 start on the table too
            out = kernel(-1.0, 0.0, m, s, b, dead, ulo, utop, 1e-3, XI, A, 1.0, u, k1, k2, state, *_table_args(n))
        runs.append((out, u.copy(), state.copy()))
    np.testing.assert_array_equal(runs[0][2], runs[1][2])
    np.testing.assert_allclose(runs[1][1], runs[0][1], rtol=0, atol=1e-10)
    assert runs[1][0][0] == pytest.approx(runs[0][0][0], rel=1e-10)
    # the pages of s > 2 end on K itself: the exact kernel's roots
    exact = _solve(ia._kernels()["spend"], -1.0, pages)
    wide = (s > 2) & (exact[3] == 0)
    np.testing.assert_allclose(runs[1][1][wide], exact[1][wide], rtol=0, atol=1e-12)


def test_the_result_does_not_depend_on_the_number_of_threads():
    # above the one-thread size the tiles run in parallel: the same numbers as in one thread,
    # and as the tiles solved one at a time (each below the parallel size) with their sums
    # added in tile order
    from changerate_bayes.scheduling._index_allocation_kernels import TILE

    pages = _pages(5 * 2048 * 8 + 17, 4)
    n = pages[0].size
    for table in (None, _table_args(n)):  # the exact kernel and the table's
        kernel = ia._kernels()["tiles"]
        extra = table or _no_table_args()
        m, s, b, dead, ulo, utop = pages
        u, k1, k2, state = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int8)
        k3 = extra[-1]
        ia._start(u, -1.0, b, s, ~dead)
        sums = np.zeros(4)
        for start in range(0, n, TILE):
            t = slice(start, start + TILE)
            one = kernel(
                -1.0, 0.0, m[t], s[t], b[t], dead[t], ulo, utop, 1e-3, XI, A, 1.0, u[t], k1[t], k2[t], state[t],
                *extra[:-1], k3[t] if k3.size else k3,
            )  # fmt: skip
            sums += np.array(one, dtype=float)
        serial = (tuple(sums) if table else tuple(sums[:3]), u, k1, state)
        before = numba.get_num_threads()
        runs = []
        try:
            for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
                numba.set_num_threads(threads)
                if table is None:
                    runs.append(_solve(ia._kernels()["spend"], -1.0, pages))
                else:
                    runs.append(_solve(ia._kernels()["tiles"], -1.0, pages, *table))
        finally:
            numba.set_num_threads(before)
        for run in runs:  # (S, dS/dz, evaluations; the table's kernel adds d²S/dz²)
            assert tuple(float(x) for x in run[0]) == serial[0]
            for x, y in zip(run[1:], serial[1:], strict=True):
                np.testing.assert_array_equal(x, y)


def _top(s):
    """K's top, log Σ_q a_q e^{−sξ_q} (0 for a point mass), from the definition."""
    return np.where(s > 0, np.log(np.sum(A[None, :] * np.exp(-s[:, None] * XI[None, :]), axis=1)), 0.0)


def _roots_of_table(s, c):
    """(inside, u, u', u'', u''') of the table of roots at (s_i, c_i)."""
    from changerate_bayes.scheduling._index_allocation_kernels import _u_table

    utab, k_top, rgrid = ia._roots()

    @numba.njit
    def run(s, c, utab, k_top, rgrid):
        out = np.zeros((s.size, 5))
        for i in range(s.size):
            inside, u, d1, d2, d3 = _u_table(c[i], s[i], utab, k_top, rgrid)
            out[i] = (1.0 if inside else 0.0, u, d1, d2, d3)
        return out

    return run(np.asarray(s, dtype=float), np.asarray(c, dtype=float), utab, k_top, rgrid)


def test_the_table_of_roots_meets_k_within_its_bound():
    # 20,000 points with s <= 1.5 (10% point masses) and c − K_top from −62 to −1 (the index
    # from e^{−62} to e^{−1} of its top): K at the root returned, from the definition, within
    # the table's bound of c (3.12e-10 at most on a grid of 601 × 6101 points); u' = 1/K' and
    # u'' = −K''/K'³ against differences of the definition
    rng = np.random.default_rng(12)
    n = 20000
    s = np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0.0, 1.5, n))
    c = _top(s) + rng.uniform(-62.0, -1.0, n)
    got = _roots_of_table(s, c)
    assert got[:, 0].all()
    u = got[:, 1]
    err = np.abs(_k_of_pages(s, u) - c)
    assert err.max() <= ia.ROOTS_ERROR
    assert np.median(err) < ia.ROOTS_ERROR / 20
    h = 1e-5
    slope = (_k_of_pages(s, u + h) - _k_of_pages(s, u - h)) / (2 * h)  # K', error O(h²)
    np.testing.assert_allclose(got[:, 2], 1.0 / slope, rtol=1e-7)
    h = 1e-3
    curve = (_k_of_pages(s, u + h) - 2 * _k_of_pages(s, u) + _k_of_pages(s, u - h)) / h**2
    np.testing.assert_allclose(got[:, 3], -curve / slope**3, rtol=1e-4, atol=1e-6)
    # u''' against a central difference of the table's own u'' (its interpolant is C² in c)
    d = 1e-4
    up, dn = _roots_of_table(s, c + d), _roots_of_table(s, c - d)
    np.testing.assert_allclose(got[:, 4], (up[:, 3] - dn[:, 3]) / (2 * d), rtol=1e-3, atol=1e-3)
    # outside: the index within e^{−1} of its top, or above it; below e^{−62}
    out = _roots_of_table(np.full(3, 0.7), _top(np.full(3, 0.7)) + np.array([-0.9, 0.5, -63.0]))
    assert not out[:, 0].any()


def test_roots_of_the_table_move_by_the_cubic_series_within_its_bound():
    # roots of the table (s <= 1.5) at the price z moved to z + δ, |δ| <= 1e-2, by the
    # inverse's cubic Taylor series: K there within 1.5e-9 (the series' remainder, at most
    # |K' u''''| δ⁴/24 <= 3.6 δ⁴/24) plus the table's bound of the new c; the spend from them
    pages = _pages(6000, 7)
    m, s, b, dead, ulo, utop = pages
    n = m.size
    tiles = ia._kernels()["tiles"]
    for delta in (1e-2, -7e-3, 1e-4):
        extra = _table_args(n)
        u, k1, k2, state = np.zeros(n), np.zeros(n), np.zeros(n), np.full(n, ia._COLD, dtype=np.int8)
        tiles(-2.0, 0.0, m, s, b, dead, ulo, utop, 1e-3, XI, A, 1.0, u, k1, k2, state, *extra)
        moved = state == ia._TABLE_ROOT
        assert moved.mean() > 0.2
        out = tiles(-2.0 + delta, delta, m, s, b, dead, ulo, utop, 1e-3, XI, A, 1.0, u, k1, k2, state, *extra)
        still = moved & (state == ia._TABLE_ROOT)
        assert still.sum() > 0.9 * moved.sum()
        err = np.abs(_k_of_pages(s[still], u[still]) - (-2.0 + delta + b[still]))
        assert err.max() <= 1.5e-9 + ia.ROOTS_ERROR
        inv = np.where(state == 1, 1e4, np.where(state == 2, 1e-3, np.exp(m - u)))
        assert out[0] == pytest.approx(inv.sum(), rel=1e-13)


def test_intervals_of_roots_from_the_definition():
    # I = e^{u − m} moved to first order by the last step (δ/K' for a root of K, δ u' for one of
    # the table of roots), held to [t_min, t_top]; t_min at the lower bound, M at the top and
    # for dead pages
    rng = np.random.default_rng(3)
    n = 2000
    m = rng.normal(0, 2, n)
    u = m + rng.uniform(-3, 3, n)
    k1 = rng.uniform(0.1, 2.0, n)
    state = rng.choice(np.array([0, 1, 2, ia._TABLE_ROOT], dtype=np.int8), n)
    dead = rng.random(n) < 0.05
    shift, t_min, t_top, cap = 1e-9, 0.06, 15.0, 20.0
    got = ia._kernels()["intervals"](u, m, k1, state, dead, shift, t_min, t_top, cap)
    move = np.where(state == ia._TABLE_ROOT, shift * k1, shift / k1)
    want = np.clip(np.exp(u + move - m), t_min, t_top)
    want = np.where(state == 1, t_min, want)
    want = np.where((state == 2) | dead, cap, want)
    np.testing.assert_allclose(got, want, rtol=1e-15)
