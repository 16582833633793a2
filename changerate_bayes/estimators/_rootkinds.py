"""The two root equations of the MLE and moment matching, in the three forms the solvers use.

With x_j = Δτ_j and u(x) = x/(e^x − 1) (so 0 < u <= 1):

* MLE (paper eq. 15): Σ_{I=1} τ/(e^{Δτ} − 1) = Σ_{I=0} τ, i.e. Σ_{I=1} u(x_j) = Σ_{I=0} x_j
  after multiplying by Δ;
* MM (Upadhyay et al.): Σ_{I=1} e^{−x_j} = Σ_{I=0} (1 − e^{−x_j}).

Each kind provides

* ``coefficients`` / ``bound`` / ``rhs``: the Taylor coefficients in t = (Δ − Δ_a)/Δ_a of
  its terms around an anchor Δ_a and a bound on their truncation error (the certified
  tracking of ``_rootpath``);
* ``local_block`` (and ``local_terms`` / ``local_linear`` for one crawl): the scale-free
  function H(Δ) (MLE: Δ·F(Δ), MM: F itself), whose zero is the root, and its first
  three derivatives in t = Δ/r − 1 at a point r, summed over a prefix (the exact solver
  of the first crawls, ``_rootsolve.local_sums``);
* ``log_balance`` / ``log_bracket``: the equation as log(left side) − log(right side)
  in s = log Δ, with its derivative, and a bracket [s_lo, s_hi] proven to contain the
  root, computed in log space so that any finite positive intervals work, from 1e-300
  to 1e300 (the bracketed solver ``_rootsolve.solve_robust``).

Both equations decrease in Δ from a positive value to a negative one when some crawls
saw a change and some did not, so the root is unique. The MM equation is summed in a
split form (terms e^{−x} where x >= ln 2, 1 − e^{−x} where x < ln 2, and an exact
integer), which keeps it well conditioned when both of its usual sides are 1 − tiny.
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["MLE_KIND", "MM_KIND"]

RHO = 0.08  # accepted |t| = |Δ − Δ_a|/Δ_a of the Taylor tracking
SPREAD = 0.5  # s in the complete-monotonicity bound |c_n| <= φ(x(1 − s))/s^n
MAX_X = 800.0  # x = Δτ beyond which e^{−x} is 0 in float64
MIN_X = 1e-300
LOCAL_MAX_X = 700.0  # local terms: u(x) for x > 700 is below 1e-301 and taken at x = 700
LOG_X_MAX = 709.0  # log-space terms: x = e^{lx} is capped at e^709 (its terms are then 0)
_LN2 = math.log(2.0)
_LN_LN2 = math.log(_LN2)


@functools.cache
def _stirling_weights(order: int) -> np.ndarray:
    """M[n, k] = (−1)^n k! S(n+1, k+1)/n!, so x^n w^{(n)}(x)/n! = w Σ_k M[n,k] x^{n−k} u^k.

    Uses Li_{−n}(z) = Σ_k k! S(n+1, k+1) (z/(1−z))^{k+1} with z = e^{−x}, w = 1/(e^x − 1),
    u = x w; all terms have one sign, so no cancellation.
    """
    size = order + 2
    s2 = [[0] * (size + 1) for _ in range(size + 1)]  # Stirling numbers of the second kind
    s2[0][0] = 1
    for n in range(1, size + 1):
        for k in range(1, n + 1):
            s2[n][k] = k * s2[n - 1][k] + s2[n - 1][k - 1]
    out = np.zeros((order + 1, order + 1))
    for n in range(order + 1):
        for k in range(n + 1):
            out[n, k] = (-1) ** n * math.factorial(k) * s2[n + 1][k + 1] / math.factorial(n)
    return out


def powers(x: np.ndarray, order: int) -> np.ndarray:
    """x^0, ..., x^order stacked along a new first axis."""
    out = np.empty((order + 1,) + x.shape)
    out[0] = 1.0
    for n in range(1, order + 1):
        np.multiply(out[n - 1], x, out=out[n])
    return out


def _log_softplus(z):
    """log(log(1 + e^z)), accurate for z from −inf to +inf."""
    with np.errstate(divide="ignore"):
        return np.where(z < -30.0, z, np.log(np.logaddexp(0.0, np.maximum(z, -30.0))))


def _masked_max(values, mask, empty):
    return np.where(mask, values, empty).max(axis=-1)


def _lse(values, mask):
    """log Σ_{mask} e^{values} along the last axis, and the softmax weights (0 off the mask).

    The sum runs sequentially (cumsum), so a row's value does not depend on padding.
    """
    v = np.where(mask, values, -np.inf)
    top = v.max(axis=-1)
    safe_top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(v - safe_top[..., None])
    total = np.cumsum(e, axis=-1)[..., -1]
    with np.errstate(divide="ignore"):  # an empty mask: log 0 = −inf, weights 0
        return safe_top + np.log(total), e / np.where(total > 0, total, 1.0)[..., None]


def _small_ratio(x, fn):
    """fn(x)/x for 0 <= x <= 1 with the limit 1 at x = 0 (x may underflow to 0)."""
    safe = np.where(x > 0, x, 1.0)
    return np.where(x > 0, fn(safe) / safe, 1.0)


def _log_u(lx):
    """x = e^{lx} (capped at e^709) and log u(x) = log(x/(e^x − 1)), for any real lx.

    Below x = 1: −log(expm1(x)/x) (the limit 0 when x underflows); above:
    lx − x − log(1 − e^{−x}). Both are accurate to a few ulp.
    """
    lx = np.minimum(lx, LOG_X_MAX)
    x = np.exp(lx)
    small = x <= 1.0
    xs = np.where(small, x, 0.0)
    xl = np.where(small, 2.0, x)
    return x, small, xs, np.where(small, -np.log(_small_ratio(xs, np.expm1)), lx - xl - np.log(-np.expm1(-xl)))


class _MLEKind:
    """φ = I τ / (e^{Δτ} − 1), T = Σ (1 − I) τ (paper eq. 15)."""

    name = "mle"

    # ------------------------------------------------------------- Taylor tracking
    @staticmethod
    def rhs(changed, tau):
        return (1.0 - changed) * tau

    @staticmethod
    def _w(x):
        return np.exp(-x) / -np.expm1(-x)

    def coefficients(self, x, changed, tau, order):
        xc = np.clip(x, MIN_X, MAX_X)
        w = self._w(xc)
        u = xc * w
        xp, up = powers(xc, order), powers(u, order)
        m = _stirling_weights(order)
        # c_n = w Σ_{k<=n} M[n,k] x^{n−k} u^k, accumulated over k for all n at once
        acc = m[:, 0].reshape((-1,) + (1,) * x.ndim) * xp
        for k in range(1, order + 1):
            acc[k:] += m[k:, k].reshape((-1,) + (1,) * x.ndim) * xp[: order + 1 - k] * up[k]
        return acc * (changed * tau * w)

    def bound(self, x, changed, tau, order):
        ratio = RHO / SPREAD
        xc = np.clip(x * (1.0 - SPREAD), MIN_X, MAX_X)
        return changed * tau * self._w(xc) * (ratio ** (order + 1) / (1.0 - ratio))

    # ------------------------------------------------------------- local (exact) terms
    @staticmethod
    def local_terms(x, changed):
        """Per crawl: the terms of H = Σ_{I=1} u(x) and x^n u^{(n)}(x), n = 1, 2, 3.

        The no-change part −Σ_{I=0} x_j (= −rT, and the same in its first derivative)
        is added by the caller from the running sum T. Uses x u' = u(1 − x − u),
        x² u'' = u(x + u)(x + 2u − 2), x³ u''' = u(x + u)(3(x + 2u) − x² − 6u(x + u)).
        """
        xc = np.minimum(np.maximum(x, MIN_X), LOCAL_MAX_X)
        u = np.expm1(xc)
        np.divide(xc, u, out=u)
        u *= changed
        a = xc + u
        a *= u  # u (x + u)
        su = u + u
        su += xc  # x + 2u
        h1 = u - a
        h2 = su - 2.0
        h2 *= a
        h3 = su * 3.0
        xc *= xc
        h3 -= xc
        h3 -= 6.0 * a
        h3 *= a
        return u, h1, h2, h3

    @staticmethod
    def local_linear(root, target, n_unchanged):
        """The no-change part −Δ Σ_{I=0} τ_j = −rT: its value and t-derivative (both −rT)."""
        v = -root * target
        return v, v

    def local_block(self, x, changed, root, target, n_unchanged):
        """H and its t-derivatives h0..h3 at Δ = root for rows (x = root·τ, shape (rows, j))."""
        h = np.stack([t.sum(axis=-1) for t in self.local_terms(x, changed)])
        c0, c1 = self.local_linear(root, target, n_unchanged)
        h[0] += c0
        h[1] += c1
        return h

    # ------------------------------------------------------------- log space
    @staticmethod
    def log_balance(s, log_tau, changed, inside):
        """g(s) = log Σ_{I=1} u(x_j) − log Σ_{I=0} x_j and g'(s) (s = log Δ, x_j = e^{s + log τ_j}).

        g' = −Σ_{I=1} p_j (x_j + u_j) <= −1 with p_j the softmax weights of log u_j.
        """
        x, _, _, log_u = _log_u(s[..., None] + log_tau)
        ones = inside & (changed > 0)
        zeros = inside & (changed == 0)
        top, weight = _lse(log_u, ones)
        log_t, _ = _lse(log_tau, zeros)
        u = np.exp(log_u)
        slope = -(weight * (x + u)).sum(axis=-1)
        return top - s - log_t, slope

    @staticmethod
    def log_bracket(log_tau, changed, inside):
        """[s_lo, s_hi] containing log of the root: Σ_{I=1} u <= n1 gives Δ <= n1/T, and one
        changed crawl alone gives Δ >= log(1 + τ_m/T)/τ_m."""
        ones = inside & (changed > 0)
        zeros = inside & (changed == 0)
        n1 = ones.sum(axis=-1)
        log_t, _ = _lse(log_tau, zeros)
        hi = np.log(n1) - log_t
        lo = _masked_max(_log_softplus(log_tau - log_t[..., None]) - log_tau, ones, -np.inf)
        return lo, hi


class _MMKind:
    """Σ_{I=1} e^{−Δτ} + Σ_{I=0} (e^{−Δτ} − 1) = 0 (moment matching), T = 0."""

    name = "mm"

    # ------------------------------------------------------------- Taylor tracking
    @staticmethod
    def rhs(changed, tau):
        return np.zeros_like(tau)

    def coefficients(self, x, changed, tau, order):
        xc = np.clip(x, MIN_X, MAX_X)
        em = np.exp(-xc)
        out = np.empty((order + 1,) + x.shape)
        out[0] = np.where(changed > 0, em, np.expm1(-xc))
        term = em
        for n in range(1, order + 1):
            term = term * (-xc) / n
            out[n] = term
        return out

    def bound(self, x, changed, tau, order):
        # Lagrange remainder of e^{−x(1+t)} for |t| <= ρ: e^{−x(1−ρ)} (xρ)^{N+1}/(N+1)!
        xc = np.clip(x, MIN_X, MAX_X)
        log_b = -xc * (1.0 - RHO) + (order + 1) * np.log(xc * RHO) - math.lgamma(order + 2)
        return np.exp(log_b)

    # ------------------------------------------------------------- local (exact) terms
    @staticmethod
    def local_terms(x, changed):
        """Per crawl: e^{−x} and (−x)^n e^{−x}, n = 1, 2, 3 (H = Σ e^{−x} − n0)."""
        e = np.exp(-x)
        xe = x * e
        x2e = x * xe
        return e, -xe, x2e, -(x * x2e)

    @staticmethod
    def local_linear(root, target, n_unchanged):
        """The constant part of H = Σ e^{−x_j} − n0: value −n0, t-derivative 0."""
        return -n_unchanged, 0.0

    @staticmethod
    def local_block(x, changed, root, target, n_unchanged):
        """H and its t-derivatives h0..h3 at Δ = root for rows (x = root·τ, shape (rows, j)).

        H = Σ_j e^{−x_j} − n0 is summed in the split form of :meth:`log_balance`:
        Σ_{x >= ln 2} e^{−x} − Σ_{x < ln 2} (1 − e^{−x}) + (m − n0), m = #{x < ln 2}, every
        term at most 1/2 and the integer m − n0 exact, so h0 is accurate relative to
        |h1| >= 0.69 max(both sums) whatever the magnitudes.
        """
        e = np.exp(-x)
        small = x < _LN2
        term0 = np.where(small, np.expm1(-x), e)
        xe = x * e
        x2e = x * xe
        h = np.stack([term0.sum(axis=-1), -xe.sum(axis=-1), x2e.sum(axis=-1), -(x * x2e).sum(axis=-1)])
        h[0] += small.sum(axis=-1) - n_unchanged
        return h

    # ------------------------------------------------------------- log space
    @staticmethod
    def log_balance(s, log_tau, changed, inside):
        """g(s) = log(L + c⁺) − log(S + c⁻) and g'(s) < 0, in the split form of the equation.

        Σ_j e^{−x_j} = n0 (the MM equation) is rewritten, splitting the crawls at x = ln 2,
        as L + c = S with L = Σ_{x >= ln 2} e^{−x}, S = Σ_{x < ln 2} (1 − e^{−x}) and the
        integer c = #{x < ln 2} − n0, so that every term is at most 1/2 and carries its
        information in full (the form Σ_{I=1} e^{−x} = Σ_{I=0} (1 − e^{−x}) loses it when
        both sides are 1 − tiny). L decreases and S increases with Δ, so g decreases; the
        split follows s, and every split gives the same root, so Newton steps stay valid.
        """
        lx = np.minimum(s[..., None] + log_tau, LOG_X_MAX)
        x, small_x, xs, log_u = _log_u(lx)
        # log(1 − e^{−x}): lx + log((1 − e^{−x})/x) below x = 1, directly above
        ratio = _small_ratio(xs, lambda v: -np.expm1(-v))
        log_one_minus = np.where(small_x, lx + np.log(ratio), np.log(-np.expm1(-np.where(small_x, 2.0, x))))
        u = np.exp(log_u)  # d log(1 − e^{−x}) / d log x = u(x)
        small = inside & (lx < _LN_LN2)
        large = inside & ~(lx < _LN_LN2)
        c = small.sum(axis=-1) - (inside & (changed == 0)).sum(axis=-1)
        log_l, p = _lse(-x, large)
        log_s, q = _lse(log_one_minus, small)
        with np.errstate(divide="ignore"):
            left = np.logaddexp(log_l, np.log(np.maximum(c, 0)))
            right = np.logaddexp(log_s, np.log(np.maximum(-c, 0)))
        slope = -(p * x).sum(axis=-1) * np.exp(log_l - left) - (q * u).sum(axis=-1) * np.exp(log_s - right)
        return left - right, slope

    @staticmethod
    def log_bracket(log_tau, changed, inside):
        """[s_lo, s_hi] containing log of the root.

        With a, A (b, B) the smallest and largest interval of the crawls that saw a
        change (no change): at Δ >= max(ln 2/b, log(2 n1/n0)/a) the left side is <= n0/2
        <= the right side; at Δ <= min(ln 2/A, n1/(2 n0 B)) the left side is >= n1/2 >= the
        right side (1 − e^{−x} <= x).
        """
        ones = inside & (changed > 0)
        zeros = inside & (changed == 0)
        n1 = ones.sum(axis=-1).astype(np.float64)
        n0 = zeros.sum(axis=-1).astype(np.float64)
        log_a = -_masked_max(-log_tau, ones, -np.inf)
        log_big_a = _masked_max(log_tau, ones, -np.inf)
        log_b = -_masked_max(-log_tau, zeros, -np.inf)
        log_big_b = _masked_max(log_tau, zeros, -np.inf)
        lo = np.minimum(_LN_LN2 - log_big_a, np.log(n1) - np.log(2.0 * n0) - log_big_b)
        ratio = 2.0 * n1 / n0
        second = np.where(ratio > 1.0, np.log(np.log(np.where(ratio > 1.0, ratio, math.e))) - log_a, -np.inf)
        hi = np.maximum(_LN_LN2 - log_b, second)
        return lo, hi


MLE_KIND = _MLEKind()
MM_KIND = _MMKind()
