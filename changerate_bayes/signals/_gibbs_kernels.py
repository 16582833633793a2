"""numba kernels of the Gibbs sampler of :mod:`._estimation` (imported, and compiled or loaded
from numba's cache, on first use only).

Every draw is by inversion of its distribution function at a uniform the caller drew with
the numpy Generator, so the draws are a function of the seed only. The distribution function
is summed from the probability of the first value (0, or 1 for a zero-truncated draw) by the
ratio of consecutive probabilities while the mean is small (below :data:`SMALL_MEAN`); above
it, the sum starts at the mode (probability from ``lgamma``) and goes down to where the terms
are below 1e-17 of it, then the search goes down or up from the mode: O(√mean) terms, and no
underflow of the first probability (e^{−mean}, (1 − p)^n) for large means.
"""

import math
from typing import Any

import numba
import numpy as np

_JIT: dict[str, Any] = dict(cache=True, nogil=True, error_model="numpy")
#: means below which the distribution function is summed from its first value
SMALL_MEAN = 10.0
#: a term below this fraction of the sum ends a sum (and a search stuck by rounding)
_NEGLIGIBLE = 1e-17
#: signal counts up to which (1 − π)^n is a product rather than an exponential
_POWER_BELOW = 8
#: pages per parallel work item of :func:`latent_sums_parallel`
TILE = 4096
#: chains × pages above which the draws run in parallel tiles (one thread below)
PARALLEL_ABOVE = 4 * TILE


@numba.njit(inline="always", **_JIT)
def _ratio_down(x, mu, n, r, binomial):
    """P(x − 1)/P(x) of Poisson(mu), or of Binomial(n, p) (``binomial``, r = p/(1 − p))."""
    if binomial:
        return x / ((n - x + 1.0) * r)
    return x / mu


@numba.njit(inline="always", **_JIT)
def _ratio_up(x, mu, n, r, binomial):
    """P(x + 1)/P(x) of Poisson(mu), or of Binomial(n, p) (``binomial``, r = p/(1 − p))."""
    if binomial:
        return (n - x) / (x + 1.0) * r
    return mu / (x + 1.0)


@numba.njit(inline="always", **_JIT)
def _from_mode(v, m, pm, mu, n, r, binomial):
    """Smallest x with P(X <= x) >= v, starting at the mode m of probability pm = P(m): X ~
    Poisson(mu), or Binomial(n, p) (``binomial``, r = p/(1 − p), x <= n). F(m) is summed down
    from m to where the terms are negligible, then the search goes down or up from m."""
    top = float(n) if binomial else math.inf
    c, p, x = pm, pm, m
    while x > 0:  # F(m)
        p *= _ratio_down(x, mu, n, r, binomial)
        x -= 1.0
        c += p
        if p < _NEGLIGIBLE * c:
            break
    x, p = m, pm
    if v <= c:
        while x > 0 and c - p >= v:  # F(x − 1) = F(x) − P(x) still >= v
            c -= p
            p *= _ratio_down(x, mu, n, r, binomial)
            x -= 1.0
        return x
    while c < v and x < top:
        p *= _ratio_up(x, mu, n, r, binomial)
        x += 1.0
        c += p
        if p < _NEGLIGIBLE * c:
            break
    return x


@numba.njit(**_JIT)
def _poisson_from_mode(v, mu):
    """Smallest x with P(X <= x) >= v, X ~ Poisson(mu), starting at the mode (mu >= 1)."""
    m = math.floor(mu)
    pm = math.exp(m * math.log(mu) - mu - math.lgamma(m + 1.0))
    return _from_mode(v, m, pm, mu, 0.0, 0.0, False)


@numba.njit(inline="always", **_JIT)
def _poisson_up(target, mu, p, x):
    """The smallest y >= ``x`` with p + P(x+1) + ... + P(y) >= ``target``, P(y) the Poisson(mu)
    probabilities summed upward from ``p`` = P(x) (stopping where the terms are negligible)."""
    c = p
    while c < target:
        x += 1.0
        p *= mu / x
        c += p
        if p < _NEGLIGIBLE * c and x > mu:
            break
    return x


@numba.njit(**_JIT)
def _poisson_core(v, mu, e0):
    """:func:`poisson_inv` given e0 = e^{−mu} (mu > 0)."""
    if mu >= SMALL_MEAN:
        return _poisson_from_mode(v, mu)
    return _poisson_up(v, mu, e0, 0.0)


@numba.njit(**_JIT)
def poisson_inv(v, mu):
    """Smallest x >= 0 with P(X <= x) >= v, X ~ Poisson(mu): a Poisson draw from v ~ U(0, 1)."""
    if mu <= 0.0:
        return 0.0
    return _poisson_core(v, mu, math.exp(-mu))


@numba.njit(**_JIT)
def _truncated_poisson_core(v, mu, q):
    """:func:`truncated_poisson_inv` given q = 1 − e^{−mu} (mu > 0)."""
    if mu >= SMALL_MEAN:
        return max(1.0, _poisson_from_mode((1.0 - q) + v * q, mu))
    t = v * q  # P(1 <= X <= x) >= t, summed from x = 1: no cancellation for small mu
    return _poisson_up(t, mu, mu * (1.0 - q), 1.0)  # 1 − q = e^{−mu} to 1e-16, >= 4.5e-5 here


@numba.njit(**_JIT)
def truncated_poisson_inv(v, mu):
    """Inversion of X ~ Poisson(mu) given X >= 1 (1 if mu <= 0, the limit mu → 0)."""
    if mu <= 0.0:
        return 1.0
    return _truncated_poisson_core(v, mu, -math.expm1(-mu))


@numba.njit(inline="always", **_JIT)
def _binomial_up(target, n, r, p, x):
    """The smallest y >= ``x`` (y <= n) with p + P(x+1) + ... + P(y) >= ``target``, P(y) the
    Binomial(n, p) probabilities (r = p/(1 − p)) summed upward from ``p`` = P(x)."""
    c = p
    while c < target and x < n:
        p *= _ratio_up(x, 0.0, n, r, True)
        x += 1.0
        c += p
    return x


@numba.njit(**_JIT)
def _binomial_low(v, n, p, r):
    """Smallest x with P(X <= x) >= v, X ~ Binomial(n, p), 0 < p <= 1/2, r = p/(1 − p)."""
    if n * p < SMALL_MEAN:  # (1 − p)^n >= e^{−2 SMALL_MEAN}: no underflow
        return _binomial_up(v, n, r, math.exp(n * math.log1p(-p)), 0.0)
    m = min(math.floor((n + 1.0) * p), float(n))
    pm = math.exp(
        math.lgamma(n + 1.0)
        - math.lgamma(m + 1.0)
        - math.lgamma(n - m + 1.0)
        + m * math.log(p)
        + (n - m) * math.log1p(-p)
    )
    return _from_mode(v, m, pm, 0.0, n, r, True)


@numba.njit(**_JIT)
def binomial_inv(v, n, p):
    """Smallest x with P(X <= x) >= v, X ~ Binomial(n, p) (for p > 1/2, n − X is inverted at 1 − v)."""
    if n <= 0 or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return float(n)
    if p <= 0.5:
        return _binomial_low(v, n, p, p / (1.0 - p))
    return n - _binomial_low(1.0 - v, n, 1.0 - p, (1.0 - p) / p)


@numba.njit(**_JIT)
def _truncated_binomial_core(v, n, p, r, q, none):
    """:func:`truncated_binomial_inv` given r = p/(1 − p), q = 1 − (1 − p)^n and none = (1 − p)^n, 0 < p < 1."""
    if p > 0.5:  # Y = n − X ~ Binomial(n, 1 − p) given Y <= n − 1, whose F(n − 1) is q
        return max(1.0, n - min(_binomial_low(v * q, n, 1.0 - p, 1.0 / r), n - 1.0))
    if n * p >= SMALL_MEAN:
        return max(1.0, _binomial_low(none + v * q, n, p, r))
    t = v * q  # summed from x = 1: no cancellation for small n p
    return _binomial_up(t, n, r, n * r * none, 1.0)  # from P(1) = n p (1 − p)^{n − 1}


@numba.njit(**_JIT)
def truncated_binomial_inv(v, n, p):
    """Inversion of X ~ Binomial(n, p) given X >= 1, n >= 1 (1 if p <= 0, the limit p → 0)."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return float(n)
    a = n * math.log1p(-p)
    return _truncated_binomial_core(v, n, p, p / (1.0 - p), -math.expm1(a), math.exp(a))


@numba.njit(inline="always", **_JIT)
def _page_sums(c, g, s, u, nu, starts, tau, n, offset, uniforms, tail_n, page_uniforms, s_sum, u_sum):
    """ΣS and ΣU of page g in chain c (see :func:`latent_sums`)."""
    lam = s[c, g] + nu[c, g]
    pi = s[c, g] / lam if lam > 0 else 0.0
    false_share = nu[c, g] / lam if lam > 0 else 1.0  # 1 − π without cancellation
    log_false = math.log(false_share) if false_share > 0 else -np.inf
    rest = float(tail_n[g])  # signals left to a binomial: the tail's, then Σ(n − J)
    free_mean = 0.0  # Σuτ of the intervals with S >= 1
    s_tot = 0.0
    u_tot = 0.0
    rate = u[c, g]
    i0, i1 = starts[g], starts[g + 1]
    o = offset[i0] if i1 > i0 else 0
    for i in range(i0, i1):
        mu = rate * tau[i]
        y = -math.expm1(-mu)  # P(U >= 1)
        k = n[i]
        if k == 0:
            u_tot += _truncated_poisson_core(uniforms[c, o], mu, y) if mu > 0 else 1.0
            o += 1
            continue
        if k <= _POWER_BELOW:  # P(S = 0) = (1 − π)^k by products: k rounding errors
            e_a = false_share
            for _ in range(k - 1):
                e_a *= false_share
        else:
            e_a = math.exp(k * log_false)
        x = 1.0 - e_a if e_a <= 0.5 else -math.expm1(k * log_false)  # P(S >= 1)
        den = x + y * (1.0 - x)  # P(S + U >= 1), without cancellation
        if uniforms[c, o] * den < e_a * y:  # S = 0 (probability e_a y/den), U >= 1
            u_tot += _truncated_poisson_core(uniforms[c, o + 1], mu, y)
        else:
            free_mean += mu
            if k == 1 or pi >= 1.0 or pi <= 0.0:  # J = 1 (π = 0: the limit, reached only where u = 0)
                j = 1.0
            else:  # the smallest j with P(J <= j) = (1 − (1 − π)^j)/x >= v
                j = min(max(math.ceil(math.log1p(-uniforms[c, o + 1] * x) / log_false), 1.0), float(k))
            s_tot += 1.0  # the first true signal, at J; the k − J after it each true with probability π
            rest += k - j
        o += 2
    s_sum[c, g] = s_tot + binomial_inv(page_uniforms[c, g, 0], int(rest), pi)
    u_sum[c, g] = u_tot + poisson_inv(page_uniforms[c, g, 1], free_mean)


@numba.njit(**_JIT)
def latent_sums(s, u, nu, starts, tau, n, offset, uniforms, tail_n, page_uniforms, s_sum, u_sum):
    """Draw ΣS and ΣU of every page's changed intervals and tail given the rates, per (chain, page).

    s, u, nu: (chains, pages) rates per day; starts (pages + 1,): page g's changed
    intervals are starts[g]:starts[g + 1]; tau, n: each interval's length (days) and
    signals; offset: its first uniform in a row of ``uniforms`` (chains, ·): one for an
    interval without signals (U ~ Poisson(uτ) given U >= 1), two with (whether S = 0, then
    U given U >= 1 if so, else the first true signal J); tail_n: the signals after the last
    crawl (pages,); page_uniforms (chains, pages, 2). Writes ΣS and ΣU into s_sum, u_sum.

    Where S >= 1, S = 1 + Binomial(n − J, π) with J the position of the first true signal
    (truncated geometric), and U ~ Poisson(uτ) free: given the J, these binomials (with the
    tail's, all of the page's π) sum to one Binomial(Σ(n − J) + tail, π) and these Poissons
    to one Poisson(Σuτ), drawn once per page: the sums have the same distribution as the
    interval by interval draws, with one draw per page instead of two per interval.
    """
    chains, n_pages = s.shape
    for c in range(chains):
        for g in range(n_pages):
            _page_sums(c, g, s, u, nu, starts, tau, n, offset, uniforms, tail_n, page_uniforms, s_sum, u_sum)


@numba.njit(parallel=True, **_JIT)
def latent_sums_parallel(s, u, nu, starts, tau, n, offset, uniforms, tail_n, page_uniforms, s_sum, u_sum):
    """:func:`latent_sums` on tiles of :data:`TILE` pages of each chain in parallel (the same numbers)."""
    chains, n_pages = s.shape
    n_tiles = (n_pages + TILE - 1) // TILE
    for w in numba.prange(chains * n_tiles):
        c = w // n_tiles
        lo = (w % n_tiles) * TILE
        for g in range(lo, min(lo + TILE, n_pages)):
            _page_sums(c, g, s, u, nu, starts, tau, n, offset, uniforms, tail_n, page_uniforms, s_sum, u_sum)
