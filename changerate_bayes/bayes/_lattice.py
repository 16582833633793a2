"""The exact log-likelihood of a stream of crawls, kept in O(grid) memory per page.

After crawls with intervals τ_j and indicators I_j the log-likelihood in u = log Δ is

    log L(u) = R(u) − T0·e^u,   R(u) = Σ_{I_j = 1} g(u + log τ_j),   g(v) = log(1 − e^{−e^v}),

with T0 the total length of the intervals without change. T0 is one number. R is a
sum of shifted copies of one smooth function: g(v) = v − e^v/2 + ... for v → −∞ and
g(v) → 0 (as −e^{−e^v}) for v → ∞. So, with S the number of changes seen and
Λ = Σ log τ_j over them,

- left of L = −log(max τ_j) − 40, R(u) = S·u + Λ (every e^v < e^{-40}: error < 5e-18 per term);
- right of H = log 40 − log(min τ_j), R(u) = 0 (error < 5e-18 per term);
- in between, R is tabulated on the fixed lattice u_k = k/16 and interpolated by a
  12-point Lagrange polynomial (g is analytic in the strip |Im v| < π/2, so the error is
  ~1e-13 per term, measured against the exact sum).

A new crawl that saw a change adds g(u_k + log τ) at every node (O(G)); one without
change adds τ to T0 (O(1)). When a τ lies outside the range seen so far, the lattice
grows at its ends, and the new nodes take the values of the asymptotic forms above, so
the state always equals the exact sum: nothing is lost, and the range of Δ covered is
every real number. The lattice spans about 44 + log(max τ / min τ) units of log Δ
(16 nodes per unit), shared by all pages.

References
----------
Paper "Online estimators of change rates", Section 3.1 (E[I | τ] = 1 − e^{−Δτ}).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ._likelihood import log1mexp_exp

__all__ = ["LatticeLikelihood", "NODES_PER_UNIT", "STENCIL"]

#: lattice nodes per unit of log Δ
NODES_PER_UNIT = 16
#: points of the Lagrange interpolation stencil
STENCIL = 12
#: beyond these margins (in log Δτ) one term of R is its asymptotic form to < 5e-18
LEFT_MARGIN = 40.0
RIGHT_MARGIN = math.log(40.0)
#: the lattice grows by at least this many nodes at a time (amortised reallocation)
GROW_CHUNK = 64


class LatticeLikelihood:
    """Exact log-likelihood of many pages' crawls, updated one crawl at a time.

    Parameters
    ----------
    n_pages : int

    Attributes
    ----------
    n_pages : int
    n_changed : ndarray, shape (n_pages,)
        S, crawls that saw a change.
    t0 : ndarray, shape (n_pages,)
        T0, total length of the intervals without change.
    t1 : ndarray, shape (n_pages,)
        Total length of the intervals with a change (for the starting value only).
    log_tau_sum : ndarray, shape (n_pages,)
        Λ = Σ log τ_j over the crawls that saw a change.
    k_lo : int
        Index of the first lattice node (u = k_lo / 16).
    values : ndarray, shape (n_pages, G)
        R at the lattice nodes.
    """

    def __init__(self, n_pages: int):
        self.n_pages = int(n_pages)
        self.n_changed = np.zeros(self.n_pages)
        self.t0 = np.zeros(self.n_pages)
        self.t1 = np.zeros(self.n_pages)
        self.log_tau_sum = np.zeros(self.n_pages)
        self.k_lo = 0
        self.values = np.zeros((self.n_pages, 0))

    # ----------------------------------------------------------------- state
    @property
    def k_hi(self) -> int:
        """One past the index of the last node."""
        return self.k_lo + self.values.shape[1]

    @property
    def nodes(self) -> np.ndarray:
        """The lattice nodes u_k, shape (G,)."""
        return np.arange(self.k_lo, self.k_hi) / NODES_PER_UNIT

    def copy(self) -> LatticeLikelihood:
        new = object.__new__(LatticeLikelihood)
        new.n_pages, new.k_lo = self.n_pages, self.k_lo
        for name in ("n_changed", "t0", "t1", "log_tau_sum", "values"):
            setattr(new, name, getattr(self, name).copy())
        return new

    def _cover(self, k_lo: int, k_hi: int, *, chunk: int = GROW_CHUNK) -> None:
        """Grow the lattice to include nodes k_lo .. k_hi − 1, by at least ``chunk`` nodes per end grown.

        New nodes take the values of the asymptotic forms (exact to < 5e-18 per term).
        """
        if self.values.shape[1] == 0:
            self.k_lo = k_lo
            self.values = np.zeros((self.n_pages, k_hi - k_lo))
            return
        add_lo = max(0, self.k_lo - k_lo)
        add_hi = max(0, k_hi - self.k_hi)
        if not (add_lo or add_hi):
            return
        add_lo = add_lo and max(add_lo, chunk)
        add_hi = add_hi and max(add_hi, chunk)
        new_lo = self.k_lo - add_lo
        left_u = np.arange(new_lo, self.k_lo)[None, :] / NODES_PER_UNIT
        left = self.n_changed[:, None] * left_u + self.log_tau_sum[:, None]
        self.values = np.concatenate([left, self.values, np.zeros((self.n_pages, add_hi))], axis=1)
        self.k_lo = new_lo

    def update(self, changed: np.ndarray, intervals: np.ndarray) -> None:
        """Add one crawl of every page: ``changed`` (bool) and ``intervals`` (> 0), shape (n_pages,)."""
        changed = np.asarray(changed, dtype=bool)
        tau = np.asarray(intervals, dtype=np.float64)
        self.t0 = self.t0 + np.where(changed, 0.0, tau)
        if not changed.any():
            return
        log_tau = np.log(tau[changed])
        k_lo = math.floor((-float(log_tau.max()) - LEFT_MARGIN) * NODES_PER_UNIT)
        k_hi = math.ceil((-float(log_tau.min()) + RIGHT_MARGIN) * NODES_PER_UNIT) + 1
        self._cover(k_lo, k_hi)
        rows = np.flatnonzero(changed)
        self.values[rows] += log1mexp_exp(self.nodes[None, :] + log_tau[:, None])
        self.n_changed = self.n_changed + changed
        self.t1 = self.t1 + np.where(changed, tau, 0.0)
        self.log_tau_sum[rows] += log_tau

    def merge(self, other: LatticeLikelihood) -> LatticeLikelihood:
        """The likelihood of both crawl sets (a new object; the lattices are aligned on u = k/16)."""
        a, b = self.copy(), other.copy()
        ranges = [(x.k_lo, x.k_hi) for x in (a, b) if x.values.shape[1]]
        if ranges:
            lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
            for x in (a, b):
                x._cover(lo, hi, chunk=0)
        a.values = a.values + b.values
        for name in ("n_changed", "t0", "t1", "log_tau_sum"):
            setattr(a, name, getattr(a, name) + getattr(b, name))
        return a

    # ----------------------------------------------- the likelihood interface
    @property
    def start(self) -> np.ndarray:
        """Crude starting value of the mode: each changed interval counts half as exposure."""
        with np.errstate(divide="ignore"):
            return np.log((self.n_changed + 0.5) / (self.t0 + 0.5 * self.t1))

    def right_tail_finite(self) -> np.ndarray:
        """True where the likelihood alone decays as Δ → ∞ (some crawl saw no change)."""
        return self.t0 > 0

    def _interpolate(self, u: np.ndarray, derivatives: bool):
        """R (and R', R'') at u of shape (n_pages, m) from the lattice and the asymptotic forms."""
        left = u < self.k_lo / NODES_PER_UNIT
        r = np.where(left, self.n_changed[:, None] * u + self.log_tau_sum[:, None], 0.0)
        g = self.n_changed[:, None] * left if derivatives else None
        h = np.zeros_like(u) if derivatives else None
        size = self.values.shape[1]
        t = u * NODES_PER_UNIT - self.k_lo  # position in node units
        inside = (t >= 0) & (t <= size - 1)
        if size < STENCIL or not inside.any():
            return r, g, h
        t = np.where(inside, t, 0.0)
        first = np.clip(np.floor(t).astype(np.intp) - (STENCIL // 2 - 1), 0, size - STENCIL)
        flat = first + (np.arange(u.shape[0]) * size)[:, None]
        stencil = self.values.reshape(-1)[flat[..., None] + np.arange(STENCIL)]
        val, d1, d2 = _interpolate_stencil(stencil, t - first, derivatives)
        r = np.where(inside, val, r)
        if derivatives:
            assert g is not None and h is not None and d1 is not None and d2 is not None  # made with derivatives
            g = np.where(inside, d1 * NODES_PER_UNIT, g)
            h = np.where(inside, d2 * NODES_PER_UNIT**2, h)
        return r, g, h

    def value(self, u: np.ndarray) -> np.ndarray:
        """log L at u (shape (n_pages,))."""
        r, _, _ = self._interpolate(np.asarray(u, dtype=np.float64)[:, None], False)
        return r[:, 0] - _times_exp(self.t0, u)

    def value_grid(self, u: np.ndarray) -> np.ndarray:
        """log L at u of shape (n_pages, G)."""
        r, _, _ = self._interpolate(u, False)
        return r - _times_exp(self.t0[:, None], u)

    def derivatives(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First and second derivatives of log L in u (each of shape (n_pages,))."""
        _, g, h = self._interpolate(np.asarray(u, dtype=np.float64)[:, None], True)
        t0e = _times_exp(self.t0, u)
        return g[:, 0] - t0e, h[:, 0] - t0e

    def block(self, start: int, stop: int) -> LatticeLikelihood:
        """The likelihood of pages ``start:stop`` (views on the same arrays)."""
        new = object.__new__(LatticeLikelihood)
        new.n_pages, new.k_lo = stop - start, self.k_lo
        for name in ("n_changed", "t0", "t1", "log_tau_sum", "values"):
            setattr(new, name, getattr(self, name)[start:stop])
        return new


#: barycentric weights of equispaced nodes 0..STENCIL−1: (−1)^k C(STENCIL − 1, k)
_BETA = np.array([(-1) ** k * math.comb(STENCIL - 1, k) for k in range(STENCIL)], dtype=np.float64)


@functools.lru_cache(maxsize=1)
def _differentiation_matrix() -> np.ndarray:
    """D with (D y)_i = p'(i), p the interpolating polynomial of y at nodes 0..m−1.

    D_ij = (β_j/β_i)/(i − j) for j ≠ i and D_ii = −Σ_{j≠i} D_ij (Berrut and Trefethen
    2004, SIAM Review 46(3), eq. 9.4).
    """
    idx = np.arange(STENCIL)
    with np.errstate(divide="ignore"):
        d = (_BETA[None, :] / _BETA[:, None]) / (idx[:, None] - idx[None, :])
    np.fill_diagonal(d, 0.0)
    np.fill_diagonal(d, -d.sum(axis=1))
    return d


def _interpolate_stencil(
    y: np.ndarray, t: np.ndarray, derivatives: bool
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Interpolating polynomial through (j, y[..., j]), j = 0..m−1, at t (and its derivatives).

    Second barycentric form p = Σ a_k y_k / Σ a_k with a_k = β_k/(t − k) (Berrut and
    Trefethen 2004), exact at the nodes. p' and p'' are polynomials of lower degree, so
    they are the same interpolation of their values at the nodes, D y and D² y.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        a = _BETA / (t[..., None] - np.arange(STENCIL))
        norm = a.sum(axis=-1)
        p = (a * y).sum(axis=-1) / norm
    hit = ~np.isfinite(p)  # t at a node: that node's value
    if hit.any():
        node = np.rint(t[hit]).astype(np.intp)
        p[hit] = np.take_along_axis(y[hit], node[:, None], axis=-1)[:, 0]
        a[hit] = np.arange(STENCIL) == node[:, None]
        norm[hit] = 1.0
    if not derivatives:
        return p, None, None
    d = _differentiation_matrix()
    y1 = y @ d.T
    return p, (a * y1).sum(axis=-1) / norm, (a * (y1 @ d.T)).sum(axis=-1) / norm


def _times_exp(t, u):
    """t·e^u, 0 where t = 0 (no overflow warning where e^u is inf but unused)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(t > 0, t * np.exp(u), 0.0)
