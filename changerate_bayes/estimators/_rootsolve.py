"""Exact roots of the MLE / moment-matching equation for one prefix of crawls.

Two solvers, vectorised over rows (pages):

* :func:`solve_robust`: safeguarded Newton iteration in s = log Δ on
  g(s) = log(left side) − log(right side), started inside a bracket proven to contain the
  root (``kind.log_bracket``). Every quantity is computed in log space, so it converges
  for any finite positive intervals (1e-300 next to 1e300 included), without overflow or
  NaN. Steps that leave the bracket or do not halve every second iteration are replaced
  by bisection (the rule of Numerical Recipes' ``rtsafe``), so it stops after at most
  ~130 evaluations; typically 4-8. It stops once a Newton step is below 1e-9 in s (the
  step then leaves an error ~1e-18 by quadratic convergence) or the bracket is a few ulp.
* :func:`local_sums` and friends: the scale-free function H (``kind.local_block``) and its
  first three derivatives at a point, for the local cubic model used crawl by crawl on
  the first crawls of a path (see ``_rootpath``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["solve_robust", "local_sums", "cubic_root", "shift", "local_error"]

MAX_ITER = 300
NEWTON_TOL = 1e-9
ROW_BLOCK = 256  # rows per block of local sums: (256, k <= 128) temporaries fit in L2
_EPS = np.finfo(np.float64).eps


def solve_robust(kind, changed, tau, inside, guess):
    """The root for each row, from its crawls ``inside`` the prefix.

    Parameters
    ----------
    kind : MLE_KIND or MM_KIND
    changed, tau : ndarray, shape (rows, m)
        Crawls; entries outside the prefix are ignored.
    inside : ndarray of bool, shape (rows, m)
        The prefix of each row (every row must hold a crawl that saw a change and one
        that did not).
    guess : ndarray, shape (rows,)
        Starting point (used when finite, > 0 and inside the bracket).

    Returns
    -------
    ndarray, shape (rows,)
        Δ = e^s with s within a few ulp of the root of g (relative error of Δ ~1e-15
        for |log Δ| < 4, ~1e-13 at Δ ~ 1e±300).
    """
    log_tau = np.log(np.where(inside, tau, 1.0))
    changed = np.asarray(changed, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        lo, hi = kind.log_bracket(log_tau, changed, inside)
        valid = np.isfinite(guess) & (guess > 0)
        g0 = np.log(np.where(valid, guess, 1.0))
        s = np.where(valid & (g0 > lo) & (g0 < hi), g0, 0.5 * (lo + hi))
        dx = dx_old = hi - lo
        todo = np.ones(s.shape, dtype=bool)
        for _ in range(MAX_ITER):
            g, dg = kind.log_balance(s, log_tau, changed, inside)
            lo = np.where(todo & (g > 0), s, lo)
            hi = np.where(todo & (g < 0), s, hi)
            newton = s - g / dg
            use_newton = (newton > lo) & (newton < hi) & (np.abs(2.0 * g) <= np.abs(dx_old * dg))
            scale = np.maximum(1.0, np.abs(s))
            # a Newton step below 1e-9 leaves an error ~ (g''/2g') step² ~ 1e-18 (quadratic
            # convergence), far below the rounding noise of g: take it and stop (it may round
            # to s itself, which is why it is tested before the bracket)
            converged = np.abs(newton - s) <= NEWTON_TOL * scale
            s_new = np.where(converged | use_newton, newton, 0.5 * (lo + hi))
            step = np.abs(s_new - s)
            done = (g == 0) | converged | (step <= 4.0 * _EPS * scale) | (hi - lo <= 4.0 * _EPS * scale)
            s = np.where(todo & ~(g == 0), s_new, s)
            dx_old, dx = np.where(todo, dx, dx_old), np.where(todo, step, dx)
            todo &= ~done
            if not todo.any():
                break
        else:  # pragma: no cover - the bracket halves at least every second step
            raise RuntimeError("MLE/MM root did not converge")
        return np.exp(s)


def local_sums(kind, root, changed, tau, target, n_unchanged):
    """H and its first three t-derivatives at Δ = root (t = Δ/root − 1), shape (4, rows).

    ``changed``, ``tau``: (rows, j), the whole prefix of each row (same length for all
    rows, so each row's sums do not depend on the other rows). Computed in blocks of
    ``ROW_BLOCK`` rows so that the temporaries stay in cache.
    """
    h = np.empty((4, root.size))
    for r0 in range(0, root.size, ROW_BLOCK):
        r1 = min(root.size, r0 + ROW_BLOCK)
        x = root[r0:r1, None] * tau[r0:r1]
        h[:, r0:r1] = kind.local_block(x, changed[r0:r1], root[r0:r1], target[r0:r1], n_unchanged[r0:r1])
    return h


def _model(h, t):
    """Q(t) = h0 + h1 t + h2 t²/2 + h3 t³/6 and Q'(t)."""
    q = h[0] + t * (h[1] + t * (h[2] / 2.0 + t * h[3] / 6.0))
    dq = h[1] + t * (h[2] + t * h[3] / 2.0)
    return q, dq


def cubic_root(h, iters=3):
    """The root near t = 0 of the local cubic model (Newton from 0, |t| clipped to 1/2).

    Three steps: an accepted root has |t| < 1e-4, where Newton's error after the third
    step is ~|t|^8, far below rounding.
    """
    t = np.zeros(h.shape[1:])
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(iters):  # a NaN (Q' = 0) propagates, and local_error rejects it
            q, dq = _model(h, t)
            t = np.minimum(np.maximum(t - q / dq, -0.5), 0.5)
    return t


def local_error(h, t):
    """Estimated relative error of r(1 + t) as the root: the tail Σ_{n>=4} of the series.

    Bounds |h_n|/n! <= |h1| K^{n−1} with K = max(1, |h2/(2 h1)|, |h3/(6 h1)|^{1/2}) (the radius
    of convergence in t is at least 1, so K >= 1 is conservative), giving
    |t| (K|t|)³/(1 − K|t|); inf when K|t| >= 1/2.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.maximum(1.0, np.maximum(np.abs(h[2] / (2.0 * h[1])), np.sqrt(np.abs(h[3] / (6.0 * h[1])))))
        kt = k * np.abs(t)
        err = np.abs(t) * kt**3 / (1.0 - kt)
    return np.where(np.isfinite(err) & (kt < 0.5), err, np.inf)


def shift(h, t):
    """The model's derivatives at t, in units of the new point r(1 + t); h0 set to 0 (a root)."""
    out = np.empty_like(h)
    out[0] = 0.0
    out[1] = (h[1] + t * (h[2] + t * h[3] / 2.0)) * (1.0 + t)
    out[2] = (h[2] + t * h[3]) * (1.0 + t) ** 2
    out[3] = h[3] * (1.0 + t) ** 3
    return out
