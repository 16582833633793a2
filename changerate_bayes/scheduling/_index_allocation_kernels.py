"""numba kernels of :mod:`._index_allocation` (imported, and compiled or loaded from numba's
cache, on first use only).

Notation of :mod:`._index_allocation`: page i has nodes Δ_q = e^{m + s ξ_q} with weights a_q
(one node, ξ = 0, when s = 0); u = log t + m; x_q = Δ_q t = e^{u + s ξ_q};
ψ(x) = 1 − e^{−x}(1 + x); K(u) = log Σ_q a_q e^{−s ξ_q} ψ(x_q), the log of the index
w ν(t) up to the page's constant log w − m.

:func:`spend_kernel` solves every page's root at one price (tiles of pages on all cores,
the same numbers for any number of threads); :func:`spend_tiles` does the same with the
roots taken from the table of roots of :func:`u_table` and K from the table of
:func:`k_table` where they hold (large collections); :func:`intervals_of_roots` turns the
roots into intervals.
"""

import math

import numba
import numpy as np

_JIT = dict(cache=True, nogil=True, error_model="numpy")
#: pages per parallel work item of :func:`spend_kernel`
TILE = 2048
#: :func:`spend_kernel` runs its tiles in parallel above this many pages (one thread below)
PARALLEL_ABOVE = 32 * TILE

#: Below this x, ψ(x)/x² is summed as its series (truncation below 1e-20 relative; the closed
#: form 1 − e^{−x}(1 + x) loses about 1e-16/ψ(x) relative, 5e-14 at x = 0.1).
_SERIES_BELOW = 0.1
#: x above which ψ(x) = 1 − e^{−x}(1 + x) rounds to 1 (e^{−45}·46 = 1.3e-18) and x² e^{−x}
#: (the slope's term) is below 1e-16 of it: no exponential is needed there.
_FLAT_ABOVE = 45.0
#: A Halley step on the table's interpolant below this ends the root (the error after it,
#: O(step³) relative to the curvature, is below 1e-11 in K where the slope K' is not small)
TABLE_STEP = 3e-5
#: Pages of s up to this end their roots on the table's interpolant (within 2e-8 of K there);
#: wider ones (to the table's last rows, s <= 4) start on it and end on K itself
TABLE_EXACT_BELOW = 2.0
#: ``state`` of a page with no root yet: the next call starts it on the small-t bound
COLD = 4
#: ``state`` of a root ended by a Halley step below ROUGH_STEP, from a start on the small-t
#: bound (at a first price, within about 1e-2 of the last): the next call evaluates it again
ROUGH = 5
ROUGH_STEP = 1e-2
_LOG2 = math.log(2.0)


#: Cody-Waite split of log 2 (the high part has 32 trailing zero bits: n log 2 is exact for
#: n < 2^20) and 1/log 2, for :func:`_exp_neg`.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
#: Only the sums of :func:`_k` may be reordered (and multiply-adds fused): the loop over the
#: nodes then runs in SIMD lanes; no other IEEE rule is relaxed (infinities and NaN keep
#: their meaning).
_SIMD = dict(_JIT, fastmath={"contract", "reassoc"})


@numba.njit(inline="always", **_JIT)
def _exp_neg(x):
    """e^{−x} for 0 <= x <= 45 to 1 ulp, with no call: x = n log 2 − r, |r| <= log(2)/2,
    e^{−x} = 2^{−n} e^{r}, e^r by its Taylor polynomial to r^13 (remainder below 2e-17
    relative), 2^{−n} as a product of the powers of n's bits (n <= 65, exact). Unlike
    ``math.exp`` it compiles to SIMD code in a loop."""
    n = math.floor(x * _INV_LN2 + 0.5)
    r = (n * _LN2_HI - x) + n * _LN2_LO
    p = 1.0 + r * (
        1.0
        + r
        * (
            1.0 / 2.0
            + r
            * (
                1.0 / 6.0
                + r
                * (
                    1.0 / 24.0
                    + r
                    * (
                        1.0 / 120.0
                        + r
                        * (
                            1.0 / 720.0
                            + r
                            * (
                                1.0 / 5040.0
                                + r
                                * (
                                    1.0 / 40320.0
                                    + r
                                    * (
                                        1.0 / 362880.0
                                        + r
                                        * (
                                            1.0 / 3628800.0
                                            + r * (1.0 / 39916800.0 + r * (1.0 / 479001600.0 + r / 6227020800.0))
                                        )
                                    )
                                )
                            )
                        )
                    )
                )
            )
        )
    )
    k = np.int64(n)
    p *= 0.5 if k & 1 else 1.0
    p *= 0.25 if k & 2 else 1.0
    p *= 0.0625 if k & 4 else 1.0
    p *= 0.00390625 if k & 8 else 1.0
    p *= 1.52587890625e-05 if k & 16 else 1.0
    p *= 2.3283064365386963e-10 if k & 32 else 1.0
    p *= 5.421010862427522e-20 if k & 64 else 1.0
    return p


@numba.njit(inline="always", **_JIT)
def _psi_series(x):
    """ψ(x)/x² = Σ_{k>=2} (−1)^k (k − 1)/k! x^{k−2}, for 0 <= x <= 0.1 (truncation below 1e-20 relative)."""
    return 0.5 - x * (
        1.0 / 3.0
        - x
        * (
            1.0 / 8.0
            - x
            * (
                1.0 / 30.0
                - x
                * (
                    1.0 / 144.0
                    - x
                    * (1.0 / 840.0 - x * (1.0 / 5760.0 - x * (1.0 / 45360.0 - x * (1.0 / 403200.0 - x / 3991680.0))))
                )
            )
        )
    )


@numba.njit(**_SIMD)
def _k(u, n_nodes, xi_e, a):
    """K(u), K'(u), K''(u) for nodes e^{sξ_q} = ``xi_e[q]`` (q < ``n_nodes``, with
    ``xi_e[n_nodes − 1 − q]`` = 1/``xi_e[q]``), weights ``a``.

    Each node's terms (h, d, d2), common scale dropped: for u <= 0 (scale e^{−2u})
    h = e^{sξ} ψ(x)/x², d = e^{sξ} e^{−x}; else h = e^{−sξ} ψ(x), d = e^{−sξ} x² e^{−x};
    d2 = d (2 − x). So K = log Σ a h (+ 2u), K' = Σ a d / Σ a h, K'' = Σ a d2 / Σ a h − K'².
    ψ(x)/x² is its series below x = 0.1; above x = 45, ψ(x) = 1 and d = 0 to rounding.
    Every branch is a select: the loop runs in SIMD lanes.
    """
    small = u <= 0.0
    eu = math.exp(u)
    h = 0.0
    d = 0.0
    d2 = 0.0
    for q in range(n_nodes):
        es = xi_e[q]
        inv_es = xi_e[n_nodes - 1 - q]
        x = eu * es
        xc = min(x, _FLAT_ABOVE)
        e = _exp_neg(xc)
        if x > _FLAT_ABOVE:
            e = 0.0
        series = x < _SERIES_BELOW
        qs = _psi_series(min(x, _SERIES_BELOW))
        psi = 1.0 - e * (1.0 + xc)
        if small:
            hq = es * (qs if series else psi / (x * x))
            dq = es * e
        else:
            hq = (x * x * qs if series else psi) * inv_es
            dq = xc * xc * e * inv_es
        h += a[q] * hq
        d += a[q] * dq
        d2 += a[q] * (dq * (2.0 - xc))
    k = math.log(h) + (2.0 * u if small else 0.0)
    k1 = d / h
    return k, k1, d2 / h - k1 * k1


@numba.njit(inline="always", **_JIT)
def _curve(inv, g1, g2):
    """d²(1/I)/dz² of an interior root (1/I = ``inv``, K' = ``g1``, K'' = ``g2``): (u'² − u'') / I
    with u' = 1/K', u'' = −K''/K'³."""
    t = 1.0 / g1
    return inv * t * t * (1.0 + g2 * t)


@numba.njit(**_JIT)
def spend_kernel(z, shift, m, s, b, dead, ulo, utop, inv_cap, xi, a, a1, u, k1, k2, state):
    """Solve every page's interval at the log price ``z``; return (S, dS/dz, evaluations).

    Per page: K(u) = c, c = z + b_i (b = m − log w), by Halley steps safeguarded by a
    bracket, from the start ``u[i]`` + ``shift``/``k1[i]`` (the last root moved to first
    order by the price's step; ``u[i]`` where ``k1[i]`` is 0), clamped to [``ulo`` + m_i, ``utop`` + m_i] (log t_min and log min(t_max, M)). Writes the solution to
    ``u``, K' and K'' there to ``k1`` and ``k2`` (0 and K(bound) at a bound) and ``state`` (0 interior, 1 at the lower bound
    ulo + m_i, 2 no root up to utop + m_i: the page gets the top interval, 1/``inv_cap``). S = Σ 1/I_i
    over live pages, I_i = e^{u − m} (or the top); ``dead`` pages (index 0) are left out.
    ``xi``/``a`` are the nodes and weights (symmetric: xi[n−1−q] = −xi[q]); ``a1`` the
    weight of the single node (s = 0). A Halley step below 2e-6 in u (log t) ends the
    search (the error after it is of order 1e-17), as does a bracket below 4 ulp of u.
    The start is the last root moved by the inverse's Taylor series to second order,
    δ − K'' δ²/(2K'), δ = ``shift``/K' (K'' at the last root in ``k2``). For a page at a
    bound ``k2`` keeps K there, which decides without evaluation whether it stays.

    An interior root that the price's step moves by δ = ``shift``/K' <= 1e-5 (with
    |K''/K'| δ <= 1e-4) is moved by the inverse function's Taylor series instead,
    δ − K'' δ²/(2K') (K'' at the root in ``k2``; the remainder is O(δ³)), with no
    evaluation of K.

    Tiles of :data:`TILE` pages run in parallel (:func:`spend_tiles`); their sums are added
    in tile order, so the result does not depend on the number of threads.
    """
    empty = np.zeros((0, 0, 3))
    sp, dsp, ne, _d2 = spend_tiles(
        z, shift, m, s, b, dead, ulo, utop, inv_cap, xi, a, a1, u, k1, k2, state,
        empty, 1.0, 0.0, 1.0, 1e-5, empty, np.zeros(0), np.ones(3), np.zeros(0),
    )  # fmt: skip
    return sp, dsp, ne


@numba.njit(inline="always", **_JIT)
def _spend_tile(t, args, sums, evals):
    """Tile ``t`` (pages t :data:`TILE` .. (t + 1) :data:`TILE`, the last tile shorter) of
    :func:`spend_tiles` (``args`` its arguments): its sums into ``sums[t]``, its count of exact
    evaluations into ``evals[t]``."""
    n = args[2].size
    start, stop = t * TILE, min(n, t * TILE + TILE)
    if args[16].shape[0] > 0:
        sp, dsp, ne, d2 = _table_pages(start, stop, args)
    else:
        sp, dsp, ne, d2 = _spend_pages(start, stop, args, False)
    sums[t, 0] = sp
    sums[t, 1] = dsp
    sums[t, 2] = d2
    evals[t] = ne


@numba.njit(parallel=True, **_JIT)
def spend_tiles(
    z, shift, m, s, b, dead, ulo, utop, inv_cap, xi, a, a1, u, k1, k2, state,
    tab, hs, u0, hu, du_max, utab, k_top, rgrid, k3,
):  # fmt: skip
    """:func:`spend_kernel`, K taken from the table ``tab`` of :func:`k_table`
    (s = j ``hs``, u = ``u0`` + k ``hu``) where a page's s and the point u are inside it (an
    empty table: K exact everywhere), and the roots of pages of s <= :data:`U_TABLE_S` from
    the table of roots ``utab`` of :func:`u_table` (K_top per row ``k_top``, its grid
    ``rgrid``; ``k3`` holds the third derivative of those roots) where they are inside it;
    returns (S, dS/dz, exact evaluations, d²S/dz²). Tiles of :data:`TILE` pages, in parallel
    above :data:`PARALLEL_ABOVE` pages (below, starting threads costs more than it saves),
    their sums added in tile order: the same result for any number of threads."""
    args = (
        z, shift, m, s, b, dead, ulo, utop, inv_cap, xi, a, a1, u, k1, k2, state,
        tab, hs, u0, hu, du_max, utab, k_top, rgrid, k3,
    )  # fmt: skip
    n_tiles = (m.size + TILE - 1) // TILE
    sums = np.zeros((n_tiles, 3))
    evals = np.zeros(n_tiles, dtype=np.int64)
    if m.size > PARALLEL_ABOVE:
        for t in numba.prange(n_tiles):
            _spend_tile(t, args, sums, evals)
    else:
        for t in range(n_tiles):
            _spend_tile(t, args, sums, evals)
    spend = 0.0
    dspend = 0.0
    d2spend = 0.0
    n_eval = 0
    for t in range(n_tiles):
        spend += sums[t, 0]
        dspend += sums[t, 1]
        d2spend += sums[t, 2]
        n_eval += evals[t]
    return spend, dspend, n_eval, d2spend


@numba.njit(inline="always", **_JIT)
def _nodes(si, xi, a, a_one, xi_e):
    """The scales e^{sξ_q} of a page into ``xi_e``: (number of nodes, weights) to use."""
    if si > 0.0:
        n_q = xi.size
        for q in range(n_q // 2):
            eq = math.exp(si * xi[q])
            xi_e[q] = eq
            xi_e[n_q - 1 - q] = 1.0 / eq
        if n_q % 2:
            xi_e[n_q // 2] = 1.0
        return n_q, a
    xi_e[0] = 1.0
    return 1, a_one


@numba.njit(**_JIT)
def k_table(xi, a, hs, n_s, u0, hu, n_u):
    """K, ``hu`` K' and ``hu``² K'' of s = j ``hs`` (j < ``n_s``) at u = ``u0`` + k ``hu``
    (k < ``n_u``), exact (:func:`_k`), shape (``n_s``, ``n_u``, 3): the table
    :func:`_k_table` interpolates (the derivatives scaled to the cell's width)."""
    tab = np.empty((n_s, n_u, 3))
    xi_e = np.empty(xi.size)
    a_one = np.ones(1)
    for j in range(n_s):
        nn, ww = _nodes(j * hs, xi, a, a_one, xi_e)
        for k in range(n_u):
            kk, k1, k2 = _k(u0 + k * hu, nn, xi_e, ww)
            tab[j, k, 0] = kk
            tab[j, k, 1] = hu * k1
            tab[j, k, 2] = hu * hu * k2
    return tab


#: The rows of :func:`_k_table`'s interpolation in s: j − 2 .. j + 3 around s = (j + t) h_s.
S_ROWS_BELOW = 2
S_ROWS_ABOVE = 3


@numba.njit(inline="always", **_JIT)
def _s_rows(si, hs, n_rows):
    """Lagrange weights of degree 5 in s over the six rows j − 2 .. j + 3 around s = (j + t) h_s
    (``n_rows`` rows in all): (j, w0 .. w5)."""
    fs = si * (1.0 / hs)
    j = min(max(int(fs), S_ROWS_BELOW), n_rows - 1 - S_ROWS_ABOVE)
    t = fs - j
    tm2 = t + 2.0
    tm1 = t + 1.0
    t1 = t - 1.0
    t2 = t - 2.0
    t3 = t - 3.0
    p01 = tm2 * tm1
    p23 = t1 * t2
    w0 = (-1.0 / 120.0) * tm1 * t * p23 * t3
    w1 = (1.0 / 24.0) * tm2 * t * p23 * t3
    w2 = (-1.0 / 12.0) * p01 * p23 * t3
    w3 = (1.0 / 12.0) * p01 * t * t2 * t3
    w4 = (-1.0 / 24.0) * p01 * t * t1 * t3
    w5 = (1.0 / 120.0) * p01 * t * p23
    return j, w0, w1, w2, w3, w4, w5


@numba.njit(inline="always", **_JIT)
def _cell(tab, j, k, w0, w1, w2, w3, w4, w5, v):
    """The quintic Hermite interpolant at v in [0, 1] of the cell k .. k + 1 of ``tab``, its
    three values (f, h f', h² f'') at each end interpolated over the rows j − 2 .. j + 3 with
    the weights w: (p, h p', h² p'', h³ p''') at v (exact for quintics)."""
    r0 = tab[j - 2, k]
    r1 = tab[j - 1, k]
    r2 = tab[j, k]
    r3 = tab[j + 1, k]
    r4 = tab[j + 2, k]
    r5 = tab[j + 3, k]
    q0 = tab[j - 2, k + 1]
    q1 = tab[j - 1, k + 1]
    q2 = tab[j, k + 1]
    q3 = tab[j + 1, k + 1]
    q4 = tab[j + 2, k + 1]
    q5 = tab[j + 3, k + 1]
    y0 = w0 * r0[0] + w1 * r1[0] + w2 * r2[0] + w3 * r3[0] + w4 * r4[0] + w5 * r5[0]
    d0 = w0 * r0[1] + w1 * r1[1] + w2 * r2[1] + w3 * r3[1] + w4 * r4[1] + w5 * r5[1]
    e0 = w0 * r0[2] + w1 * r1[2] + w2 * r2[2] + w3 * r3[2] + w4 * r4[2] + w5 * r5[2]
    y1 = w0 * q0[0] + w1 * q1[0] + w2 * q2[0] + w3 * q3[0] + w4 * q4[0] + w5 * q5[0]
    d1 = w0 * q0[1] + w1 * q1[1] + w2 * q2[1] + w3 * q3[1] + w4 * q4[1] + w5 * q5[1]
    e1 = w0 * q0[2] + w1 * q1[2] + w2 * q2[2] + w3 * q3[2] + w4 * q4[2] + w5 * q5[2]
    # p(v) = y0 + d0 v + e0 v²/2 + c3 v³ + c4 v⁴ + c5 v⁵ with p, p', p'' = y, d, e at v = 0 and 1
    dy = y1 - y0
    c3 = 10.0 * dy - 6.0 * d0 - 4.0 * d1 - 1.5 * e0 + 0.5 * e1
    c4 = -15.0 * dy + 8.0 * d0 + 7.0 * d1 + 1.5 * e0 - e1
    c5 = 6.0 * dy - 3.0 * d0 - 3.0 * d1 - 0.5 * e0 + 0.5 * e1
    val = y0 + v * (d0 + v * (0.5 * e0 + v * (c3 + v * (c4 + v * c5))))
    g1 = d0 + v * (e0 + v * (3.0 * c3 + v * (4.0 * c4 + v * (5.0 * c5))))
    g2 = e0 + v * (6.0 * c3 + v * (12.0 * c4 + v * (20.0 * c5)))
    g3 = 6.0 * c3 + v * (24.0 * c4 + v * (60.0 * c5))
    return val, g1, g2, g3


@numba.njit(inline="always", **_JIT)
def _k_table(u, si, tab, hs, u0, hu):
    """K, K', K'' at (s, u) from the table ``tab`` of :func:`k_table`: Lagrange interpolation
    over the six rows j − 2 .. j + 3 around s (degree 5), quintic Hermite in u (K, K', K''
    at both ends of the cell: exact for quintics, error h_u⁶ K⁽⁶⁾/46080 at most)."""
    j, w0, w1, w2, w3, w4, w5 = _s_rows(si, hs, tab.shape[0])
    fu = (u - u0) * (1.0 / hu)
    k = min(int(fu), tab.shape[1] - 2)
    val, g1, g2, _g3 = _cell(tab, j, k, w0, w1, w2, w3, w4, w5, fu - k)
    inv_hu = 1.0 / hu
    return val, g1 * inv_hu, g2 * (inv_hu * inv_hu)


@numba.njit(**_JIT)
def _root_exact(c, nn, xi_e, ww):
    """u with K(u) = c, for c below the top of K (log Σ a_q e^{−sξ_q}, which ``ww``·``xi_e``
    gives): Newton steps in a bracket from the small-t bound (at or below the root), bisection
    where a step leaves the bracket, to a step below 1e-15 relative or a bracket of 4 ulp."""
    top = 0.0
    for q in range(nn):
        top += ww[q] * xi_e[q]  # Σ a e^{sξ} = Σ a e^{−sξ} (symmetric nodes and weights)
    lo = 0.5 * (c - math.log(top) + _LOG2)  # 2u + log(Σ a e^{sξ}/2) >= K(u)
    hi = lo + 1.0
    while _k(hi, nn, xi_e, ww)[0] < c:
        hi = lo + 2.0 * (hi - lo)
    x = lo
    for _ in range(200):
        k, g1, _g2 = _k(x, nn, xi_e, ww)
        if k < c:
            lo = x
        else:
            hi = x
        xn = x - (k - c) / g1 if g1 > 0.0 else 0.5 * (lo + hi)
        if not (lo <= xn <= hi):
            xn = 0.5 * (lo + hi)
        if abs(xn - x) <= 1e-15 * max(1.0, abs(x)) or hi - lo <= 8.9e-16 * max(1.0, abs(x)):
            return xn
        x = xn
    return x


@numba.njit(**_JIT)
def u_table(xi, a, hs, n_s, c0, hc, n_c):
    """The roots of K (exact) on a grid, for :func:`_u_table`: at s = j ``hs`` (j < ``n_s``)
    and ĉ = ``c0`` + k ``hc`` (k < ``n_c``), the root u of K(u) = K_top(s) + ĉ (K_top =
    log Σ a_q e^{−sξ_q}, the top of K), ``hc`` du/dc = ``hc``/K' and ``hc``² d²u/dc² =
    −``hc``² K''/K'³: shape (``n_s``, ``n_c``, 3); and K_top per row.

    Below the top (ĉ <= −1: the index below e^{−1} of its largest value) u is smooth in c,
    with du/dc from 1/2 (where the index grows as t²) to about 1."""
    tab = np.empty((n_s, n_c, 3))
    k_top = np.empty(n_s)
    xi_e = np.empty(xi.size)
    a_one = np.ones(1)
    for j in range(n_s):
        nn, ww = _nodes(j * hs, xi, a, a_one, xi_e)
        top = 0.0
        for q in range(nn):
            top += ww[q] * xi_e[q]
        k_top[j] = math.log(top)
        for k in range(n_c):
            u = _root_exact(k_top[j] + c0 + k * hc, nn, xi_e, ww)
            _kk, k1, k2 = _k(u, nn, xi_e, ww)
            tab[j, k, 0] = u
            tab[j, k, 1] = hc / k1
            tab[j, k, 2] = -hc * hc * k2 / (k1 * k1 * k1)
    return tab, k_top


#: ``state`` of an interior root taken from :func:`_u_table`: ``k1``, ``k2``, ``k3`` hold u', u'',
#: u''' in c there (not K', K'')
TABLE_ROOT = 3
#: A root of :func:`_u_table` is moved by the inverse's cubic Taylor series for price steps up
#: to this (in c = log λ + b): the remainder, |u''''| δ⁴/24, is at most 1.5e-9 in K (|K' u''''| <=
#: 3.6 over the table)
CUBIC_SHIFT = 1e-2
#: The widest s whose roots are taken from :func:`_u_table` (its rows reach s = 1.5 + 3 h_s)
U_TABLE_S = 1.5


@numba.njit(inline="always", **_JIT)
def _u_table(c, si, utab, k_top, rgrid):
    """The root u of K(u) = c for a page of log-sd ``si`` from the table ``utab`` of
    :func:`u_table` (K_top per row ``k_top``, the grid ``rgrid`` = (h_s, c0, h_c)): Lagrange
    interpolation of degree 5 over six rows in s, quintic Hermite in ĉ = c − K_top(s); with
    its derivatives in c there: (inside, u, u', u'', u''') (u' = 1/K'); ``inside`` is False where (s, ĉ) is outside the
    table (the other values then mean nothing)."""
    hs = rgrid[0]
    c0 = rgrid[1]
    hc = rgrid[2]
    j, w0, w1, w2, w3, w4, w5 = _s_rows(si, hs, utab.shape[0])
    top = (
        w0 * k_top[j - 2]
        + w1 * k_top[j - 1]
        + w2 * k_top[j]
        + w3 * k_top[j + 1]
        + w4 * k_top[j + 2]
        + w5 * k_top[j + 3]
    )
    fc = (c - top - c0) * (1.0 / hc)
    if not (fc >= 0.0 and fc < utab.shape[1] - 1):
        return False, 0.0, 0.0, 0.0, 0.0
    k = int(fc)
    u, g1, g2, g3 = _cell(utab, j, k, w0, w1, w2, w3, w4, w5, fc - k)
    inv_hc = 1.0 / hc
    return True, u, g1 * inv_hc, g2 * (inv_hc * inv_hc), g3 * (inv_hc * inv_hc * inv_hc)


@numba.njit(parallel=True, **_JIT)
def intervals_of_roots(u, m, k1, state, dead, shift, t_min, t_top, cap):
    """Each page's interval from its root u (I = e^{u − m}), the interior roots first moved to
    first order by a last price step ``shift`` (by ``shift``/K', K' in ``k1``; by ``shift`` u'
    for a root of the table of roots, u' in ``k1``) and held to [t_min, ``t_top``]; t_min for a
    page at its lower bound, ``cap`` (M) for one at the top and for dead pages."""
    n = u.size
    out = np.empty(n)
    for i in numba.prange(n):
        st = state[i]
        if dead[i] or st == 2:
            out[i] = cap
        elif st == 1:
            out[i] = t_min
        else:
            x = u[i]
            if shift != 0.0 and k1[i] > 0.0:
                x += shift * k1[i] if st == TABLE_ROOT else shift / k1[i]
            out[i] = min(max(math.exp(x - m[i]), t_min), t_top)
    return out


@numba.njit(inline="always", **_JIT)
def _end_root(i, st, x, g1, g2, bot, top, m, inv_cap, u, k1, k2, state):
    """Store page i's root: ``st`` 1 at the lower bound ``bot``, 2 at the top ``top`` (K there
    kept in ``g2``), 0 interior at ``x`` with K' = ``g1`` and K'' = ``g2``; return its
    (1/I, d(1/I)/dz, d²(1/I)/dz²)."""
    if st == 1:
        x = bot
        g1 = 0.0
        inv = math.exp(m[i] - x)
    elif st == 2:
        x = top
        g1 = 0.0
        inv = inv_cap
    else:
        inv = math.exp(m[i] - x)
    u[i] = x
    k1[i] = g1
    k2[i] = g2
    state[i] = st
    if g1 > 0.0:
        return inv, -inv / g1, _curve(inv, g1, g2)
    return inv, 0.0, 0.0


@numba.njit(inline="always", **_JIT)
def _kept_root(i, c, shift, bot, top, du_max, m, inv_cap, u, k1, k2, state):
    """Page i's root at c without evaluating K, where its last one allows: an interior root
    moved by the inverse's Taylor series (δ = ``shift``/K' <= ``du_max``, |K''/K'| δ <=
    10 ``du_max``; the series to second order, δ − K'' δ²/(2K')), a root at the lower bound
    ``bot`` whose K there (kept in ``k2``) still reaches c, one with no root up to ``top``
    that still has none. Return (kept, 1/I, d(1/I)/dz, d²(1/I)/dz²)."""
    st = state[i]
    if st == 0 and k1[i] > 0.0 and shift != 0.0:  # (not a ROUGH root: evaluated again)
        du = shift / k1[i]
        if abs(du) <= du_max and abs(k2[i] * du) <= 10.0 * du_max * k1[i]:
            x = u[i] + du - 0.5 * k2[i] * du * du / k1[i]
            g1 = k1[i] + k2[i] * (x - u[i])
            if x > bot and x < top and g1 > 0.0:
                u[i] = x
                k1[i] = g1
                inv = math.exp(m[i] - x)
                return True, inv, -inv / g1, _curve(inv, g1, k2[i])
    elif st == 1 and k2[i] >= c:  # still at t_min: K(t_min), kept in k2, reaches c
        return True, math.exp(m[i] - bot), 0.0, 0.0
    elif st == 2 and k2[i] < c:  # still no root up to the top
        return True, inv_cap, 0.0, 0.0
    return False, 0.0, 0.0, 0.0


@numba.njit(inline="always", **_JIT)
def _table_root(i, x, g1, g2, g3, m, u, k1, k2, k3, state):
    """Store page i's interior root ``x`` of the table of roots, with u', u'', u''' in c
    (``g1``, ``g2``, ``g3``; 1/K' = u'); return its (1/I, d(1/I)/dz, d²(1/I)/dz²)."""
    u[i] = x
    k1[i] = g1
    k2[i] = g2
    k3[i] = g3
    state[i] = TABLE_ROOT
    inv = math.exp(m[i] - x)
    return inv, -inv * g1, inv * (g1 * g1 - g2)


@numba.njit(**_JIT)
def _spend_pages(start, stop, args, exact):
    """:func:`spend_kernel` on pages ``start`` to ``stop`` − 1 (``args`` those of
    :func:`spend_tiles`; K exact everywhere if ``exact``): (S, dS/dz, evaluations, d²S/dz²)."""
    z, shift, m, s, b, dead, ulo, utop, inv_cap, xi, a, a1, u, k1, k2, state = args[:16]
    tab, hs, u0, hu, du_max = args[16:21]
    n_q = xi.size
    xi_e = np.empty(n_q)
    a_one = np.empty(1)
    a_one[0] = a1
    s_tab = hs * (tab.shape[0] - 1 - S_ROWS_ABOVE)  # rows j − 2 .. j + 3 around s
    u_tab = u0 + hu * (tab.shape[1] - 1) - 1e-9 * hu
    spend = 0.0
    dspend = 0.0
    d2spend = 0.0
    n_eval = 0
    for i in range(start, stop):
        if dead[i]:
            continue
        bot = ulo + m[i]
        top = utop + m[i]
        c = z + b[i]
        kept, inv, dsp, d2 = _kept_root(i, c, shift, bot, top, du_max, m, inv_cap, u, k1, k2, state)
        if kept:
            spend += inv
            dspend += dsp
            d2spend += d2
            continue
        si = s[i]
        nn = 0  # the nodes' scales e^{sξ} are computed at the first exact evaluation
        ww = a
        in_table = not exact and tab.shape[0] > 0 and si <= s_tab
        lo = bot
        hi = top
        lo_ok = False  # K(lo) < c seen
        hi_ok = False  # K(hi) >= c seen
        if state[i] == COLD:  # no root yet: the small-t bound, at or below the root
            x = 0.5 * (c - 0.5 * si * si + _LOG2)
        elif k1[i] > 0.0:  # the last root moved by the inverse's Taylor series to second order
            du = shift / k1[i]
            x = u[i] + du - 0.5 * k2[i] * du * du / k1[i]
        else:
            x = u[i]
        x = min(max(x, lo), hi)
        st = 0
        g1 = 0.0
        g2 = 0.0
        for _ in range(200):
            if in_table and x >= u0 and x <= u_tab:
                k, g1, g2 = _k_table(x, si, tab, hs, u0, hu)
            else:
                if nn == 0:
                    nn, ww = _nodes(si, xi, a, a_one, xi_e)
                k, g1, g2 = _k(x, nn, xi_e, ww)
                n_eval += 1
            f = k - c
            if f < 0.0:
                if x >= top:
                    st = 2
                    g2 = k  # K at the bound, kept in k2
                    break
                lo = x
                lo_ok = True
            else:
                if x <= bot:
                    st = 1
                    g2 = k
                    break
                hi = x
                hi_ok = True
            if g1 > 0.0:
                step = -f / g1
                den = 1.0 + 0.5 * step * g2 / g1  # Halley: 1 − f K''/(2 K'^2)
                if den > 0.5:
                    step = step / den
                if abs(step) <= 2e-6:  # converged: the error after this step is O(step^3)
                    xn = min(max(x + step, lo), hi)
                    g1 += g2 * (xn - x)  # K' at the root (to O(step^2)): the next price's steps use it
                    x = xn
                    break
                xn = x + step
            else:
                xn = math.inf if f < 0.0 else -math.inf
            if not (xn > lo and xn < hi):
                if xn >= hi and not hi_ok:
                    xn = hi  # the top, not yet evaluated: is the root below it?
                elif xn <= lo and not lo_ok:
                    xn = lo
                else:
                    xn = 0.5 * (lo + hi)
            x = xn
            if lo_ok and hi_ok and hi - lo <= 8.9e-16 * max(1.0, abs(x)):
                break
        inv, dsp, d2 = _end_root(i, st, x, g1, g2, bot, top, m, inv_cap, u, k1, k2, state)
        spend += inv
        dspend += dsp
        d2spend += d2
    return spend, dspend, n_eval, d2spend


@numba.njit(**_JIT)
def _k_exact(x, si, xi, a, a_one, xi_e):
    """K, K', K'' at u = ``x`` for a page of log-sd ``si`` (its nodes' scales into ``xi_e``)."""
    nn, ww = _nodes(si, xi, a, a_one, xi_e)
    return _k(x, nn, xi_e, ww)


@numba.njit(**_JIT)
def _table_pages(start, stop, args):
    """:func:`_spend_pages` with K from the table ``tab`` (exact where a page's s or the point
    u is outside it), the roots' Halley steps taken in sweeps over the pages: one step of
    every page still searching, then the next, so the steps of different pages overlap
    (one page's steps wait on each other). Each page takes the steps of :func:`_spend_pages`;
    the sums are added in page order."""
    z, shift, m, s, b, dead, ulo, utop, inv_cap, xi, a, a1, u, k1, k2, state = args[:16]
    tab, hs, u0, hu, du_max, utab, k_top, rgrid, k3 = args[16:]
    n_q = xi.size
    xi_e = np.empty(n_q)
    a_one = np.empty(1)
    a_one[0] = a1
    s_tab = hs * (tab.shape[0] - 1 - S_ROWS_ABOVE)
    u_tab = u0 + hu * (tab.shape[1] - 1) - 1e-9 * hu
    nt = stop - start
    inv_r = np.zeros(nt)  # each page's 1/I and its term of dS/dz, summed in page order at the end
    dsp_r = np.zeros(nt)
    d2_r = np.zeros(nt)  # and of d²S/dz²
    px = np.empty(nt)
    plo = np.empty(nt)
    phi = np.empty(nt)
    pc = np.empty(nt)
    pok = np.zeros(nt, dtype=np.int8)  # 1: K(lo) < c seen, 2: K(hi) >= c seen
    ptol = np.empty(nt)  # the Halley step that ends the root
    pend = np.empty(nt, dtype=np.int64)
    n_pend = 0
    n_eval = 0
    for r in range(nt):
        i = start + r
        if dead[i]:
            continue
        bot = ulo + m[i]
        top = utop + m[i]
        c = z + b[i]
        if state[i] == TABLE_ROOT and abs(shift) <= CUBIC_SHIFT:  # the inverse's cubic Taylor series
            d1 = k1[i]  # du/dc, d²u/dc², d³u/dc³ at the last root
            d2 = k2[i]
            d3 = k3[i]
            x = u[i] + shift * (d1 + shift * (0.5 * d2 + shift * (d3 * (1.0 / 6.0))))
            g = d1 + shift * (d2 + 0.5 * d3 * shift)  # du/dc at the new root
            if x > bot and x < top and g > 0.0:
                inv_r[r], dsp_r[r], d2_r[r] = _table_root(i, x, g, d2 + d3 * shift, d3, m, u, k1, k2, k3, state)
                continue
        else:
            kept, inv, dsp, d2 = _kept_root(i, c, shift, bot, top, du_max, m, inv_cap, u, k1, k2, state)
            if kept:
                inv_r[r], dsp_r[r], d2_r[r] = inv, dsp, d2
                continue
        if s[i] > s_tab:  # beyond the table's rows: every step exact, as in _spend_pages
            sp, dsp, ne, d2p = _spend_pages(i, i + 1, args, True)
            inv_r[r] = sp
            dsp_r[r] = dsp
            d2_r[r] = d2p
            n_eval += ne
            continue
        if s[i] <= U_TABLE_S and utab.shape[0] > 0:  # the root from the table of roots
            inside, x, g1, g2, g3 = _u_table(c, s[i], utab, k_top, rgrid)
            if inside:
                if x <= bot or x >= top:  # at a bound: c kept in k2 (K(t_min) >= c, or K(top) < c)
                    st = 1 if x <= bot else 2
                    inv_r[r], dsp_r[r], d2_r[r] = _end_root(i, st, x, 0.0, c, bot, top, m, inv_cap, u, k1, k2, state)
                else:
                    inv_r[r], dsp_r[r], d2_r[r] = _table_root(i, x, g1, g2, g3, m, u, k1, k2, k3, state)
                continue
        ptol[r] = TABLE_STEP
        if state[i] == COLD:
            x = 0.5 * (c - 0.5 * s[i] * s[i] + _LOG2)
            ptol[r] = ROUGH_STEP  # the price is not yet known to better than 1e-2
        elif state[i] == TABLE_ROOT:  # (k1 is u' there)
            x = u[i] + shift * k1[i]
        elif k1[i] > 0.0:
            du = shift / k1[i]
            x = u[i] + du - 0.5 * k2[i] * du * du / k1[i]
        else:
            x = u[i]
        px[r] = min(max(x, bot), top)
        plo[r] = bot
        phi[r] = top
        pc[r] = c
        pok[r] = 0
        pend[n_pend] = r
        n_pend += 1
    for sweep in range(200):
        if n_pend == 0:
            break
        kept = 0
        for p in range(n_pend):
            r = pend[p]
            i = start + r
            x = px[r]
            lo = plo[r]
            hi = phi[r]
            c = pc[r]
            ok = pok[r]
            bot = ulo + m[i]
            top = utop + m[i]
            si = s[i]
            if si <= s_tab and x >= u0 and x <= u_tab and (si <= TABLE_EXACT_BELOW or ptol[r] == ROUGH_STEP):
                k, g1, g2 = _k_table(x, si, tab, hs, u0, hu)
            else:  # outside the table, or a root of s > 2 ended on K itself
                k, g1, g2 = _k_exact(x, si, xi, a, a_one, xi_e)
                n_eval += 1
            f = k - c
            st = -1  # searching
            if f < 0.0:
                if x >= top:
                    st = 2
                    g2 = k
                else:
                    lo = x
                    ok |= 1
            else:
                if x <= bot:
                    st = 1
                    g2 = k
                else:
                    hi = x
                    ok |= 2
            if st < 0:
                if g1 > 0.0:
                    step = -f / g1
                    den = 1.0 + 0.5 * step * g2 / g1
                    if den > 0.5:
                        step = step / den
                    if abs(step) <= ptol[r]:
                        xn = min(max(x + step, lo), hi)
                        g1 += g2 * (xn - x)
                        x = xn
                        st = 0 if ptol[r] == TABLE_STEP else ROUGH
                    else:
                        xn = x + step
                else:
                    xn = math.inf if f < 0.0 else -math.inf
                if st < 0:
                    if not (xn > lo and xn < hi):
                        if xn >= hi and not (ok & 2):
                            xn = hi
                        elif xn <= lo and not (ok & 1):
                            xn = lo
                        else:
                            xn = 0.5 * (lo + hi)
                    x = xn
                    if ok == 3 and hi - lo <= 8.9e-16 * max(1.0, abs(x)):
                        st = 0
                    elif sweep == 199:
                        st = 0
            if st < 0:
                px[r] = x
                plo[r] = lo
                phi[r] = hi
                pok[r] = ok
                pend[kept] = r
                kept += 1
                continue
            inv_r[r], dsp_r[r], d2_r[r] = _end_root(i, st, x, g1, g2, bot, top, m, inv_cap, u, k1, k2, state)
        n_pend = kept
    spend = 0.0
    dspend = 0.0
    d2spend = 0.0
    for r in range(nt):
        spend += inv_r[r]
        dspend += dsp_r[r]
        d2spend += d2_r[r]
    return spend, dspend, n_eval, d2spend
