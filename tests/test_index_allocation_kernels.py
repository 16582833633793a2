"""The compiled parts of the index allocation: K against its definition, the table's
interpolant against the exact roots, and results independent of the number of threads."""

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
        tab_k, tab_d = ia._kernels()["table"](XI, A, s_i, 2, u0, hu, n_u)  # rows s = 0 and s_i
        row = 0 if s_i == 0 else 1  # s = 0: a point mass
        for k in range(n_u):
            u = u0 + k * hu
            want = _k_reference(s_i, u)
            # ψ's closed form at x = 0.1 (the series below): 1e-16/ψ = 2e-14 relative in that node
            assert tab_k[row, k] == pytest.approx(want, rel=0, abs=1e-13)
            h = 1e-5  # central difference of the definition: error O(h²) of K''' ~ 1e-10
            slope = (_k_reference(s_i, u + h) - _k_reference(s_i, u - h)) / (2 * h)
            assert tab_d[row, k] == pytest.approx(slope, rel=1e-8, abs=1e-9)


def _pages(n, seed):
    rng = np.random.default_rng(seed)
    rate = rng.lognormal(math.log(0.5), 1.5, n)
    sd = np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0.0, 4.0, n))
    m = np.log(rate)
    dead = np.zeros(n, dtype=bool)
    return m, sd, m.copy(), dead, math.log(1e-4) + m, math.log(1e3) + m


def _solve(kernel, z, pages, *extra):
    m, s, b, dead, ulo, utop = pages
    n = m.size
    u, k1, k2, state = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int8)
    ia._start(u, z, b, s, ~dead)
    out = kernel(z, 0.0, m, s, b, dead, ulo, utop, 1e-3, XI, A, 1.0, u, k1, k2, state, *extra)
    return out, u, k1, state


def test_the_tables_roots_are_within_about_1e_6_of_the_exact_ones():
    # where the slope K' is not small (|δu| = |δK|/K'): 99% within 2e-6 (one Halley step ends
    # those), all within 2e-5; and nearly all end in the same state
    pages = _pages(4000, 3)
    tab_k, tab_d = ia._table()
    kernels = ia._kernels()
    for z in (-6.0, -2.0, 0.0):
        exact, u, k1, state = _solve(kernels["spend"], z, pages)
        table = (tab_k, tab_d, ia._TABLE_HS, ia._TABLE_U0, ia._TABLE_HU, 1e-5)
        approx, u_t, _, state_t = _solve(kernels["tiles"], z, pages, *table)
        assert approx[2] < exact[2] / 50  # the table's search evaluates K for few pages
        steep = (state == 0) & (k1 > 0.05)
        assert steep.sum() > 1000
        err = np.abs(u_t - u)[steep]
        assert np.quantile(err, 0.99) <= 2e-6
        assert err.max() <= 2e-5
        assert (state_t == state).mean() > 0.999


def test_the_result_does_not_depend_on_the_number_of_threads():
    # above the one-thread size the tiles run in parallel: the same numbers as in one thread,
    # and as the one-thread loop over the same tiles
    from changerate_bayes.scheduling._index_allocation_kernels import _spend_serial

    pages = _pages(5 * 2048 * 8 + 17, 4)
    empty = np.zeros((0, 0))
    serial = _solve(_spend_serial, -1.0, pages, empty, empty, 1.0, 0.0, 1.0, 1e-5)
    before = numba.get_num_threads()
    runs = []
    try:
        for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(threads)
            runs.append(_solve(ia._kernels()["spend"], -1.0, pages))
    finally:
        numba.set_num_threads(before)
    for run in runs:
        assert run[0] == serial[0]
        for x, y in zip(run[1:], serial[1:], strict=True):
            np.testing.assert_array_equal(x, y)
