"""numba kernels of :mod:`._index_allocation` (imported, and compiled or loaded from numba's
cache, on first use only).

Notation of :mod:`._index_allocation`: page i has nodes Δ_q = e^{m + s ξ_q} with weights a_q
(one node, ξ = 0, when s = 0); u = log t + m; x_q = Δ_q t = e^{u + s ξ_q};
ψ(x) = 1 − e^{−x}(1 + x); K(u) = log Σ_q a_q e^{−s ξ_q} ψ(x_q), the log of the index
w ν(t) up to the page's constant log w − m.
"""

import math

import numba
import numpy as np

_JIT = dict(cache=True, nogil=True, error_model="numpy")

#: Below this x, ψ(x)/x² is summed as its series (truncation below 1e-20 relative; the closed
#: form 1 − e^{−x}(1 + x) loses about 1e-16/ψ(x) relative, 5e-14 at x = 0.1).
_SERIES_BELOW = 0.1
#: x above which ψ(x) = 1 − e^{−x}(1 + x) rounds to 1 (e^{−45}·46 = 1.3e-18) and x² e^{−x}
#: (the slope's term) is below 1e-16 of it: no exponential is needed there.
_FLAT_ABOVE = 45.0


@numba.njit(inline="always", **_JIT)
def _node(x, e_s, small):
    """One node's terms (h, d, d2) of K, K' and K'' (common scale dropped):

    with ``small`` (u <= 0, scale e^{−2u}): h = e^{sξ} ψ(x)/x², d = e^{sξ} e^{−x},
    d2 = d (2 − x); else h = e^{−sξ} ψ(x), d = e^{−sξ} x² e^{−x}, d2 = d (2 − x).
    ``e_s`` = e^{sξ}. So K = log Σ a h (+ 2u), K' = Σ a d / Σ a h, K'' = Σ a d2 / Σ a h − K'².
    """
    if x < _SERIES_BELOW:
        # ψ(x)/x² = Σ_{k>=2} (−1)^k (k − 1)/k! x^{k−2}
        q = 0.5 - x * (
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
                        * (
                            1.0 / 840.0
                            - x * (1.0 / 5760.0 - x * (1.0 / 45360.0 - x * (1.0 / 403200.0 - x / 3991680.0)))
                        )
                    )
                )
            )
        )
        e = 1.0 - x * (1.0 - x * (0.5 - x * (1.0 / 6.0 - x * (1.0 / 24.0 - x / 120.0))))  # e^{−x}, for K', K''
        if small:
            d = e_s * e
            return e_s * q, d, d * (2.0 - x)
        d = x * x * e / e_s
        return x * x * q / e_s, d, d * (2.0 - x)
    if x > _FLAT_ABOVE:
        if small:
            return e_s / (x * x), 0.0, 0.0
        return 1.0 / e_s, 0.0, 0.0
    e = math.exp(-x)
    psi = 1.0 - e * (1.0 + x)
    if small:
        d = e_s * e
        return e_s * psi / (x * x), d, d * (2.0 - x)
    d = x * x * e / e_s
    return psi / e_s, d, d * (2.0 - x)


@numba.njit(inline="always", **_JIT)
def _k(u, n_nodes, xi_e, a):
    """K(u), K'(u), K''(u) for nodes e^{sξ_q} = ``xi_e[q]`` (q < ``n_nodes``), weights ``a``."""
    small = u <= 0.0
    eu = math.exp(u)
    h = 0.0
    d = 0.0
    d2 = 0.0
    for q in range(n_nodes):
        hq, dq, d2q = _node(eu * xi_e[q], xi_e[q], small)
        h += a[q] * hq
        d += a[q] * dq
        d2 += a[q] * d2q
    k = math.log(h) + (2.0 * u if small else 0.0)
    k1 = d / h
    return k, k1, d2 / h - k1 * k1


@numba.njit(**_JIT)
def spend_kernel(z, shift, m, s, b, dead, ulo, utop, inv_cap, xi, a, a1, u, k1, k2, state):
    """Solve every page's interval at the log price ``z``; return (S, dS/dz, evaluations).

    Per page: K(u) = c, c = z + b_i (b = m − log w), by Halley steps safeguarded by a
    bracket, from the start ``u[i]`` + ``shift``/``k1[i]`` (the last root moved to first
    order by the price's step; ``u[i]`` where ``k1[i]`` is 0), clamped to [ulo_i, utop_i]. Writes the solution to
    ``u``, K' and K'' there to ``k1`` and ``k2`` (0 and K(bound) at a bound) and ``state`` (0 interior, 1 at the lower bound
    ulo, 2 no root up to utop: the page gets the top interval, 1/``inv_cap``). S = Σ 1/I_i
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
    """
    n_q = xi.size
    xi_e = np.empty(n_q)
    a_one = np.empty(1)
    a_one[0] = a1
    spend = 0.0
    dspend = 0.0
    n_eval = 0
    for i in range(m.size):
        if dead[i]:
            continue
        bot = ulo[i]
        top = utop[i]
        c = z + b[i]
        if state[i] == 0 and k1[i] > 0.0 and shift != 0.0:
            du = shift / k1[i]
            if abs(du) <= 1e-5 and abs(k2[i] * du) <= 1e-4 * k1[i]:
                x = u[i] + du - 0.5 * k2[i] * du * du / k1[i]
                g1 = k1[i] + k2[i] * (x - u[i])
                if x > bot and x < top and g1 > 0.0:
                    u[i] = x
                    k1[i] = g1
                    inv = math.exp(m[i] - x)
                    spend += inv
                    dspend -= inv / g1
                    continue
        elif state[i] == 1 and k2[i] >= c:  # still at t_min: K(t_min), kept in k2, reaches c
            spend += math.exp(m[i] - bot)
            continue
        elif state[i] == 2 and k2[i] < c:  # still no root up to the top
            spend += inv_cap
            continue
        si = s[i]
        if si > 0.0:
            for q in range(n_q // 2):
                eq = math.exp(si * xi[q])
                xi_e[q] = eq
                xi_e[n_q - 1 - q] = 1.0 / eq
            if n_q % 2:
                xi_e[n_q // 2] = 1.0
            nn = n_q
            ww = a
        else:
            xi_e[0] = 1.0
            nn = 1
            ww = a_one
        lo = bot
        hi = top
        lo_ok = False  # K(lo) < c seen
        hi_ok = False  # K(hi) >= c seen
        if k1[i] > 0.0:  # the last root moved by the inverse's Taylor series to second order
            du = shift / k1[i]
            x = u[i] + du - 0.5 * k2[i] * du * du / k1[i]
        else:
            x = u[i]
        x = min(max(x, lo), hi)
        st = 0
        g1 = 0.0
        g2 = 0.0
        for _ in range(200):
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
        spend += inv
        if g1 > 0.0:
            dspend -= inv / g1
    return spend, dspend, n_eval
