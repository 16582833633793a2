"""Trajectories of the roots of the MLE and moment-matching equations, crawl by crawl.

Both estimators solve an equation F_k(Δ) = Σ_{j≤k} φ(I_j, τ_j, Δ) − T_k = 0 whose terms
are completely monotone in Δ (decreasing and convex), so the root is unique:

* MLE (paper eq. 15): φ = I τ/(e^{Δτ} − 1), T_k = Σ (1 − I_j) τ_j;
* MM: Σ(1 − I_j) = Σ e^{−Δτ_j}, written Σ_{I=1} e^{−Δτ} + Σ_{I=0} (e^{−Δτ} − 1) = 0 so
  that each term is computed without cancellation (expm1), T_k = 0.

Re-solving at every k costs O(k) per evaluation. Instead, the sums are kept as Taylor
coefficients around an *anchor* Δ_a in the scaled variable t = (Δ − Δ_a)/Δ_a:

    Σ_j φ(Δ_a(1 + t)) = Σ_n A_n t^n,   A_n = Σ_j c_n(Δ_a τ_j),

so adding crawl k costs O(order) and the root for prefix k is a root of a polynomial of
fixed degree, found by Newton's method from t = 0, for |t| <= ρ. Each accepted root is
certified: the truncation error of the series on |t| <= ρ has an explicit bound E_k
(from complete monotonicity, or the Lagrange remainder of exp), the root must lie in
[−ρ, ρ] with margin E_k, and E_k/|Q'(t*)| (the root's error in t) must be below 1e-13.
When a prefix fails (the root drifted beyond ρ, or the bound is too loose), its root is
solved from scratch with a safeguarded Newton iteration on the exact O(k) sum, bracketed
by bisection, and the series is re-anchored there (O(k)). Re-anchoring is frequent for
the first crawls, when the estimate still jumps, and rare later.

Everything is vectorised over pages; a page's numbers do not depend on the other pages
or on how the crawls are split into blocks (running sums are accumulated sequentially,
iterations stop element by element), so the streaming estimators and the batch path
give the same roots.
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["RootPath", "MLE_KIND", "MM_KIND"]

ORDER = 18  # Taylor order N
RHO = 0.08  # accepted |t| = |Δ − Δ_a|/Δ_a
SPREAD = 0.5  # s in the complete-monotonicity bound |c_n| <= φ(x(1 − s))/s^n
CERTIFY = 1e-13  # largest accepted bound on the root's relative error
MAX_X = 800.0  # x = Δτ beyond which e^{−x} is 0 in float64
MIN_X = 1e-300
WINDOW_ELEMENTS = 2**16  # pages × crawls per vectorised block (bounds memory: × order)
MIN_WINDOW, MAX_WINDOW = 256, 8192
REANCHOR_CHUNK = 2048


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


def _powers(x: np.ndarray, order: int) -> np.ndarray:
    """x^0, ..., x^order stacked along a new first axis."""
    out = np.empty((order + 1,) + x.shape)
    out[0] = 1.0
    for n in range(1, order + 1):
        np.multiply(out[n - 1], x, out=out[n])
    return out


class _MLEKind:
    """φ = I τ / (e^{Δτ} − 1), T = Σ (1 − I) τ (paper eq. 15)."""

    name = "mle"

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
        xp, up = _powers(xc, order), _powers(u, order)
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

    def value_slope(self, delta, changed, tau):
        xc = np.clip(delta * tau, MIN_X, MAX_X)
        w = self._w(xc)
        return changed * tau * w, -changed * tau * tau * (w * (1.0 + w))


class _MMKind:
    """Σ_{I=1} e^{−Δτ} + Σ_{I=0} (e^{−Δτ} − 1) = 0 (moment matching), T = 0."""

    name = "mm"

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

    def value_slope(self, delta, changed, tau):
        xc = np.clip(delta * tau, MIN_X, MAX_X)
        em = np.exp(-xc)
        return np.where(changed > 0, em, np.expm1(-xc)), -tau * em


MLE_KIND = _MLEKind()
MM_KIND = _MMKind()


def _prefix_total(values: np.ndarray, start: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """start + Σ of the first ``lengths`` entries along the last axis, added sequentially."""
    acc = np.concatenate([start[..., None], values], axis=-1).cumsum(axis=-1)
    idx = np.broadcast_to(lengths, acc.shape[:-1])[..., None]
    return np.take_along_axis(acc, idx, axis=-1)[..., 0]


def _horner(coef: np.ndarray, t: np.ndarray):
    """Q(t) = Σ_n coef[n] t^n and Q'(t) (coef along axis 0; sums run over n in order)."""
    powers = _powers(t, coef.shape[0] - 1)
    q = (coef * powers).sum(axis=0)
    n = np.arange(1, coef.shape[0]).reshape((-1,) + (1,) * t.ndim)
    dq = (coef[1:] * n * powers[:-1]).sum(axis=0)
    return q, dq


class RootPath:
    """Running state of the MLE or MM root for ``n_pages`` pages (the whole history is kept).

    Parameters
    ----------
    kind : MLE_KIND or MM_KIND
    n_pages : int
    """

    def __init__(self, kind, n_pages: int):
        self.kind = kind
        self.n_pages = n_pages
        self.order = ORDER
        self.length = 0
        self._changed = np.empty((n_pages, 64))
        self._tau = np.empty((n_pages, 64))
        self.anchor = np.ones(n_pages)  # any Δ_a > 0 is a valid expansion point
        self.coef = np.zeros((self.order + 1, n_pages))
        self.err = np.zeros(n_pages)
        self.target = np.zeros(n_pages)
        self.n_changed = np.zeros(n_pages)
        self.n_unchanged = np.zeros(n_pages)
        self.root = np.full(n_pages, np.nan)
        self.n_exact = 0  # prefixes solved from scratch (re-anchors), for benchmarks

    # ----------------------------------------------------------------- history
    def _append(self, changed, tau):
        add = changed.shape[1]
        need = self.length + add
        if need > self._changed.shape[1]:
            cap = max(need, 2 * self._changed.shape[1])
            for name in ("_changed", "_tau"):
                old = getattr(self, name)
                new = np.empty((self.n_pages, cap))
                new[:, : self.length] = old[:, : self.length]
                setattr(self, name, new)
        self._changed[:, self.length : need] = changed
        self._tau[:, self.length : need] = tau
        self.length = need

    def history(self):
        """The stored (changed, intervals), shape (n_pages, k)."""
        return self._changed[:, : self.length], self._tau[:, : self.length]

    # ----------------------------------------------------------------- public
    def extend(self, changed: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """Add crawls (arrays (n_pages, L)); return the roots after each, shape (n_pages, L)."""
        changed = np.ascontiguousarray(changed, dtype=np.float64)
        tau = np.ascontiguousarray(tau, dtype=np.float64)
        start = self.length
        self._append(changed, tau)
        n_new = changed.shape[1]
        out = np.empty((self.n_pages, n_new))
        pos = np.zeros(self.n_pages, dtype=np.int64)  # crawls of the new block consumed
        while True:
            active = np.flatnonzero(pos < n_new)
            if active.size == 0:
                break
            lo = int(pos[active].min())
            cap = max(MIN_WINDOW, min(MAX_WINDOW, WINDOW_ELEMENTS // active.size))
            width = min(n_new - lo, cap, max(16, start + lo))
            self._block(active, pos, start, width, n_new, out)
        return out

    # ----------------------------------------------------------------- internals
    def _block(self, pages, pos, start, width, n_new, out):
        cols = pos[pages, None] + np.arange(width)  # indices into the new block
        inside = cols < n_new
        gcols = np.minimum(cols, n_new - 1) + start  # global column indices
        ch = np.take_along_axis(self._changed[pages], gcols, axis=1) * inside
        tau = np.where(inside, np.take_along_axis(self._tau[pages], gcols, axis=1), 1.0)
        anchor = self.anchor[pages]
        x = np.ascontiguousarray(anchor[:, None] * tau)
        kind, order = self.kind, self.order
        d = kind.coefficients(x, ch, tau, order) * inside
        coef = np.concatenate([self.coef[:, pages, None], d], axis=2).cumsum(axis=2)[:, :, 1:]
        err = np.concatenate([self.err[pages, None], kind.bound(x, ch, tau, order) * inside], axis=1)
        err = err.cumsum(axis=1)[:, 1:]
        target = np.concatenate([self.target[pages, None], kind.rhs(ch, tau) * inside], axis=1)
        target = target.cumsum(axis=1)[:, 1:]
        n1 = self.n_changed[pages, None] + np.cumsum(ch, axis=1)
        n0 = self.n_unchanged[pages, None] + np.cumsum((1.0 - ch) * inside, axis=1)

        coef0 = coef.copy()
        coef0[0] -= target
        q_lo, _ = _horner(coef0, np.full(x.shape, -RHO))
        q_hi, _ = _horner(coef0, np.full(x.shape, RHO))
        in_disk = (q_lo > err) & (q_hi < -err)
        t = np.zeros(x.shape)
        todo = in_disk.copy()
        q, dq = _horner(coef0, t)
        for _ in range(60):
            if not todo.any():
                break
            with np.errstate(divide="ignore", invalid="ignore"):
                step = np.where(todo, q / dq, 0.0)
            t_new = np.clip(t - step, -RHO, RHO)
            todo = todo & (np.abs(t_new - t) > 1e-16)
            t = np.where(in_disk, t_new, t)
            q, dq = _horner(coef0, t)
        with np.errstate(divide="ignore", invalid="ignore"):
            certified = in_disk & ~todo & (2.0 * err <= CERTIFY * np.abs(dq))
        special_inf = n0 == 0
        special_zero = n1 == 0
        ok = (special_inf | special_zero | certified) & inside
        roots = np.where(special_inf, np.inf, np.where(special_zero, 0.0, anchor[:, None] * (1.0 + t)))

        n_ok = np.where(ok.all(axis=1), width, np.argmin(ok, axis=1))
        n_ok = np.minimum(n_ok, (n_new - pos[pages]))
        rows = np.repeat(np.arange(pages.size), width).reshape(pages.size, width)
        take = np.arange(width) < n_ok[:, None]
        out[pages[rows[take]], cols[take]] = roots[take]
        has = n_ok > 0
        last = np.maximum(n_ok - 1, 0)
        for name, arr in (("err", err), ("target", target), ("n_changed", n1), ("n_unchanged", n0)):
            state = getattr(self, name)
            state[pages[has]] = arr[has, last[has]]
        self.coef[:, pages[has]] = coef[:, has, last[has]]
        self.root[pages[has]] = roots[has, last[has]]
        pos[pages] += n_ok

        failed = pages[pos[pages] < np.minimum(pos[pages] - n_ok + width, n_new)]
        if failed.size:
            self._reanchor(failed, pos, start, out)

    def _reanchor(self, pages, pos, start, out):
        """Solve the failing prefix of each page exactly and expand around its root."""
        self.n_exact += pages.size
        lengths = start + pos[pages] + 1  # prefix length including the failing crawl
        m = int(lengths.max())
        ch_all = self._changed[pages, :m]
        tau_all = self._tau[pages, :m]
        inside = np.arange(m) < lengths[:, None]
        ch_all = ch_all * inside
        tau_all = np.where(inside, tau_all, 1.0)
        kind = self.kind
        zero = np.zeros(pages.size)
        target = _prefix_total(kind.rhs(ch_all, tau_all) * inside, zero, lengths)
        n1 = _prefix_total(ch_all, zero, lengths)
        n0 = lengths - n1
        guess = self.root[pages]
        bad_guess = ~(np.isfinite(guess) & (guess > 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            crude = -np.log(np.maximum(n0, 1.0) / lengths) / (_prefix_total(tau_all * inside, zero, lengths) / lengths)
        guess = np.where(bad_guess, crude, guess)
        regular = (n0 > 0) & (n1 > 0)
        root = np.where(n0 == 0, np.inf, 0.0)
        if regular.any():
            r = regular
            root[r] = _solve_exact(kind, ch_all[r], tau_all[r], inside[r], lengths[r], target[r], guess[r])
        anchor = np.where(regular, root, self.anchor[pages])
        # the series around the new anchor, over the whole prefix (chunked, sequential sums)
        coef = np.zeros((self.order + 1, pages.size))
        err = np.zeros(pages.size)
        for c0 in range(0, m, REANCHOR_CHUNK):
            c1 = min(m, c0 + REANCHOR_CHUNK)
            ins = inside[:, c0:c1]
            x = np.ascontiguousarray(anchor[:, None] * tau_all[:, c0:c1])
            lens = np.clip(lengths - c0, 0, c1 - c0)
            d = kind.coefficients(x, ch_all[:, c0:c1], tau_all[:, c0:c1], self.order) * ins
            coef = _prefix_total(d, coef, lens)
            b = kind.bound(x, ch_all[:, c0:c1], tau_all[:, c0:c1], self.order) * ins
            err = _prefix_total(b, err, lens)
        self.anchor[pages] = anchor
        self.coef[:, pages] = coef
        self.err[pages] = err
        self.target[pages] = target
        self.n_changed[pages] = n1
        self.n_unchanged[pages] = n0
        self.root[pages] = root
        out[pages, pos[pages]] = root
        pos[pages] += 1


_NOISE = 16 * np.finfo(np.float64).eps  # relative rounding noise of a float64 sum


def _solve_exact(kind, changed, tau, inside, lengths, target, guess, max_iter=400):
    """Root of Σ_{j<length} φ_j(Δ) − target by Newton's method safeguarded by bisection.

    Vectorised over rows; sums run sequentially over each row's prefix. The function is
    decreasing and convex in Δ, positive near 0 and negative for large Δ (both counts
    are > 0), so a Newton step from the left never overshoots and the bracket
    [lo, hi] (lo: F > 0, hi: F < 0) catches steps from the right. The iteration stops
    when |F| is within the rounding noise of the sum (16 ulp of Σ|terms|), when the
    Newton step or the bracket is below 16 ulp of Δ: near the root F only flips sign
    at the level of rounding, and a tighter test would cycle there.
    """
    lo = np.zeros(lengths.shape)
    hi = np.full(lengths.shape, np.inf)
    x = guess.copy()
    todo = np.ones(lengths.shape, dtype=bool)
    for _ in range(max_iter):
        val, slope = kind.value_slope(x[:, None], changed, tau)
        f = np.cumsum(val * inside, axis=-1)[:, -1] - target  # sequential; zeros past each length
        df = np.cumsum(slope * inside, axis=-1)[:, -1]
        # rounding noise of the sum: below it the sign of f carries no information
        noise = _NOISE * (np.abs(val * inside).sum(axis=-1) + np.abs(target))
        lo = np.where(todo & (f > 0), x, lo)
        hi = np.where(todo & (f < 0), x, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = x - f / df
            geometric = np.sqrt(lo * hi)
        ok = np.isfinite(newton) & (newton >= lo) & (newton <= hi)
        fallback = np.where(np.isinf(hi), 4.0 * np.maximum(x, lo), np.where(lo > 0, geometric, 0.5 * hi))
        x_new = np.where(ok, newton, fallback)
        small_step = ok & (np.abs(newton - x) <= _NOISE * np.abs(x))
        done = (np.abs(f) <= noise) | small_step | (np.isfinite(hi) & (hi - lo <= _NOISE * hi))
        x = np.where(todo & ~(f == 0), x_new, x)
        todo = todo & ~done
        if not todo.any():
            break
    else:  # pragma: no cover - the bracket halves at least every other step
        raise RuntimeError("MLE/MM root did not converge")
    return x
