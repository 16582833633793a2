"""Exact 1-D quadrature of the posterior of u = log Δ, vectorised over pages.

The log-posterior f(u) = log L(e^u) + log π(u) is concave in u for every likelihood
and prior of this package, so per page:

1. the mode m solves f'(u) = 0 by safeguarded Newton (bisection fallback inside a
   bracket where f' changes sign);
2. σ = (−f''(m))^{-1/2}; each tail ends where f has dropped by ``drop`` below f(m),
   found from a probe at m ± 5σ: if f is still above that level there, the tangent
   at the probe reaches it further out (f lies under its tangents); if f is already
   below it, a few Newton steps walk back towards the level and, by concavity, stay
   beyond it. Either way the drop at the end point is at least ``drop``;
3. nodes u = m + σ sinh(s), s uniform between the two ends: dense near the mode,
   sparse in long tails; the density of s, e^{f(u(s))} σ cosh(s), is smooth and
   negligible at both ends, so the trapezoid rule converges geometrically;
4. draws invert the CDF of the interpolant that is linear in the log-density
   (exact for exponential tails).

The loops below run over Newton iterations, grid nodes and blocks of
:data:`BLOCK_PAGES` pages (to bound memory and keep work arrays in cache), never over
single pages.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import integrate

from ._priors import log_prior_u

__all__ = ["GridPosterior", "fit_grid", "improper_pages", "inverse_cdf"]

U_MIN, U_MAX = -700.0, 700.0  # e^u stays a normal float64 inside
DEFAULT_GRID_SIZE = 64
DEFAULT_DROP = 30.0
PROBE_SCALES = 5.0  # first look for each tail end at mode ± 5 scale
INWARD_STEPS = 3  # Newton steps back from a probe beyond the cut level


def improper_pages(lik, coef: dict) -> np.ndarray:
    """Boolean mask of pages whose posterior does not integrate (improper prior + data).

    The left tail (Δ → 0) of the log-posterior has slope S + A (S = changes seen) when
    the prior has no log-normal part; the right tail (Δ → ∞) decays when some crawl saw
    no change, the prior has a Gamma or log-normal part, or A − E < 0.
    """
    no_c = coef["C"] <= 0
    left_bad = no_c & (lik.n_changed + coef["A"] <= 0)
    right_ok = lik.right_tail_finite() | (coef["B"] > 0) | ~no_c | (coef["A"] - coef["E"] < 0)
    return left_bad | ~right_ok


def _log_post(lik, coef, u):
    return lik.value(u) + log_prior_u(u, coef)


def _derivs(lik, coef, u):
    g, h = lik.derivatives(u)
    return g + log_prior_u(u, coef, 1), h + log_prior_u(u, coef, 2)


def _mode(lik, coef, *, tol=1e-7, max_iter=200):
    """Per-page mode of the concave log-posterior (safeguarded Newton)."""
    n = lik.n_pages
    lo = np.clip(lik.start - 20.0, U_MIN, U_MAX)
    hi = np.clip(lik.start + 20.0, U_MIN, U_MAX)
    width = 20.0
    for _ in range(8):  # widen the bracket until f'(lo) > 0 > f'(hi)
        g_lo, _ = _derivs(lik, coef, lo)
        g_hi, _ = _derivs(lik, coef, hi)
        bad_lo, bad_hi = (g_lo <= 0) & (lo > U_MIN), (g_hi >= 0) & (hi < U_MAX)
        if not (bad_lo.any() or bad_hi.any()):
            break
        width *= 4.0
        lo = np.where(bad_lo, np.maximum(lo - width, U_MIN), lo)
        hi = np.where(bad_hi, np.minimum(hi + width, U_MAX), hi)
    u = np.clip(lik.start, lo, hi)
    done = np.zeros(n, dtype=bool)
    for _ in range(max_iter):
        g, h = _derivs(lik, coef, u)
        lo = np.where(g > 0, u, lo)
        hi = np.where(g < 0, u, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            new = u - g / h
        outside = ~((new >= lo) & (new <= hi))
        new = np.where(outside, 0.5 * (lo + hi), new)
        new = np.where((g == 0) | done, u, new)
        done |= np.abs(new - u) <= tol
        u = new
        if done.all():
            break
    if not np.isfinite(u).all() or ((u <= U_MIN) | (u >= U_MAX)).any():  # pragma: no cover - guarded by improper_pages
        raise FloatingPointError("grid posterior: the mode of log Δ is outside [-700, 700]")
    return u


@dataclass(frozen=True)
class GridPosterior:
    """A tabulated posterior of u = log Δ for each page.

    Attributes
    ----------
    s : ndarray, shape (n_pages, G)
        Uniform nodes of the quadrature variable s (u = mode + scale·sinh(s)).
    u : ndarray, shape (n_pages, G)
        The nodes in log Δ.
    log_density : ndarray, shape (n_pages, G)
        Log posterior density of s at the nodes; the trapezoid rule over s integrates
        its exponential to one.
    mode, scale : ndarray, shape (n_pages,)
        Posterior mode of log Δ and (−f''(mode))^{-1/2}.
    """

    s: np.ndarray
    u: np.ndarray
    log_density: np.ndarray
    mode: np.ndarray
    scale: np.ndarray

    @property
    def step(self) -> np.ndarray:
        return self.s[:, 1] - self.s[:, 0]

    def _trapezoid(self, values):
        w = np.full(self.s.shape[1], 1.0)
        w[[0, -1]] = 0.5
        return (values * np.exp(self.log_density) * w).sum(axis=1) * self.step

    def mean(self) -> np.ndarray:
        """Posterior mean of Δ per page (quadrature)."""
        return self._trapezoid(np.exp(self.u))

    def quantile(self, probs) -> np.ndarray:
        """Posterior quantiles of Δ; ``probs`` of shape (m,) or (n_pages, m)."""
        probs = np.broadcast_to(np.asarray(probs, dtype=np.float64), (self.s.shape[0], np.shape(probs)[-1]))
        s = inverse_cdf(self.s[:, 0], self.step, self.log_density, probs)
        return np.exp(self.mode[:, None] + self.scale[:, None] * np.sinh(s))

    def sample(self, n_draws: int, rng: np.random.Generator) -> np.ndarray:
        """Independent draws of Δ, shape (n_pages, n_draws)."""
        return self.quantile(rng.random((self.s.shape[0], n_draws)))


def fit_grid(lik, coef: dict, *, size: int = DEFAULT_GRID_SIZE, drop: float = DEFAULT_DROP) -> GridPosterior:
    """Tabulate the posterior of log Δ of every page on ``size`` adapted nodes.

    Parameters
    ----------
    lik : ExactLikelihood or MarginalLikelihood
    coef : dict of ndarray
        Prior coefficients (``PriorCoefficients.as_arrays``).
    size : int
        Nodes per page.
    drop : float
        Each tail is cut where the log-density is ``drop`` below its maximum
        (relative mass beyond ≈ e^{-drop}).
    """
    m = _mode(lik, coef)
    f_m = _log_post(lik, coef, m)
    _, h = _derivs(lik, coef, m)
    scale = 1.0 / np.sqrt(np.maximum(-h, 1e-300))
    ends = []
    level = f_m - drop
    for side in (-1.0, 1.0):
        probe = np.clip(m + side * PROBE_SCALES * scale, U_MIN, U_MAX)
        f_p = _log_post(lik, coef, probe)
        g_p, _ = _derivs(lik, coef, probe)
        short = f_p > level
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # not yet at the level: the tangent reaches it further out (f lies below it)
            out = probe + side * (f_p - level) / np.abs(g_p)
            end = np.where(short, np.where(np.isfinite(out), out, U_MAX * side), probe)
            # past the level (a steep tail): Newton steps back towards it stay outside it
            for _ in range(INWARD_STEPS):
                back = ~short & np.isfinite(f_p) & (np.abs(g_p) > 0)
                if not back.any():
                    break
                end = np.where(back, end - (f_p - level) / g_p, end)
                f_p = np.where(back, _log_post(lik, coef, end), f_p)
                g_p = np.where(back, _derivs(lik, coef, end)[0], g_p)
        ends.append(np.clip(end, U_MIN, U_MAX))
    s_lo = -np.arcsinh((m - ends[0]) / scale)
    s_hi = np.arcsinh((ends[1] - m) / scale)
    s = s_lo[:, None] + (s_hi - s_lo)[:, None] * np.linspace(0.0, 1.0, size)
    u = m[:, None] + scale[:, None] * np.sinh(s)
    log_d = np.empty_like(u)
    for j in range(size):  # one vectorised pass over all pages per node
        log_d[:, j] = _log_post(lik, coef, u[:, j])
    log_d += np.log(scale)[:, None] + np.log(np.cosh(s))
    log_d -= log_d.max(axis=1, keepdims=True)
    w = np.full(size, 1.0)
    w[[0, -1]] = 0.5
    log_d -= np.log((np.exp(log_d) * w).sum(axis=1) * (s[:, 1] - s[:, 0]))[:, None]
    return GridPosterior(s=s, u=u, log_density=log_d, mode=m, scale=scale)


def inverse_cdf(x0: np.ndarray, step: np.ndarray, log_density: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Invert, per row, the CDF of a density whose log is linear between grid nodes.

    Parameters
    ----------
    x0, step : ndarray, shape (n,)
        First node and node spacing of each row.
    log_density : ndarray, shape (n, G)
        Log of the (unnormalised) density at the nodes; may be -inf.
    probs : ndarray, shape (n, m)
        Probabilities in [0, 1].

    Returns
    -------
    ndarray, shape (n, m)
        x with CDF(x) = probs, exact for the piecewise log-linear interpolant (exact
        for exponential tails, the shape of a log-concave density's tails).
    """
    n, size = log_density.shape
    dens = np.exp(log_density - log_density.max(axis=1, keepdims=True))
    # cell masses by cumulative Simpson (4th order), so the CDF at the nodes is as
    # accurate as the quadrature; the log-linear shape only places draws inside a cell
    cdf = integrate.cumulative_simpson(dens, dx=1.0, axis=1, initial=0.0)
    cdf = np.maximum.accumulate(cdf, axis=1)  # Simpson may dip next to a cliff
    cdf /= cdf[:, -1:]
    with np.errstate(invalid="ignore"):
        beta = np.diff(log_density, axis=1)
    beta = np.where(np.isnan(beta), 0.0, beta)
    # branch-free binary search for the largest j in [0, G-2] with cdf[j] <= p
    offset = (np.arange(n, dtype=np.intp) * size)[:, None]
    flat_cdf = cdf.ravel()
    j = np.zeros(probs.shape, dtype=np.intp)
    jump = 1 << int(np.ceil(np.log2(size - 1)))
    while jump >= 1:
        cand = np.minimum(j + jump, size - 2)
        j = np.where(flat_cdf[offset + cand] <= probs, cand, j)
        jump //= 2
    flat_j = offset + j
    low = flat_cdf[flat_j]
    mass = flat_cdf[flat_j + 1] - low
    with np.errstate(invalid="ignore", divide="ignore"):
        phi = np.clip((probs - low) / mass, 0.0, 1.0)
    phi = np.where(mass > 0, phi, 0.0)
    # inside the cell the density is ∝ e^{bt}, t in [0, 1]; invert its CDF, using the
    # mirror image for b > 0 so that expm1 never overflows
    b = beta.ravel()[offset // size * (size - 1) + j]
    rising = b > 0
    psi = np.where(rising, 1.0 - phi, phi)
    nb = np.clip(-np.abs(b), -700.0, -1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.log1p(psi * np.expm1(nb)) / nb
    t = np.clip(np.where(np.isnan(t), 1.0, t), 0.0, 1.0)
    t = np.where(rising, 1.0 - t, t)
    return x0[:, None] + (j + t) * step[:, None]


#: pages per block: keeps the (block, G) and (block, draws) work arrays in cache
BLOCK_PAGES = 2048


def grid_draws(lik, coef: dict, *, n_draws: int, rng: np.random.Generator, size: int = DEFAULT_GRID_SIZE):
    """Draws of Δ and quadrature posterior means for every page.

    Pages are processed in blocks of :data:`BLOCK_PAGES` (vectorised within a block;
    the block loop bounds memory and keeps work arrays in cache).

    Returns
    -------
    draws : ndarray, shape (n_pages, n_draws)
    means : ndarray, shape (n_pages,)
    """
    n = lik.n_pages
    draws = np.empty((n, n_draws))
    means = np.empty(n)
    for start in range(0, n, BLOCK_PAGES):
        stop = min(start + BLOCK_PAGES, n)
        grid = fit_grid(lik.block(start, stop), {c: v[start:stop] for c, v in coef.items()}, size=size)
        draws[start:stop] = grid.sample(n_draws, rng)
        means[start:stop] = grid.mean()
    return draws, means
