"""Exact 1-D quadrature of the posterior of u = log Δ, vectorised over pages.

The log-posterior f(u) = log L(e^u) + log π(u) is concave in u for every likelihood
and prior of this package, so per page:

1. the mode m solves f'(u) = 0 by safeguarded Newton (bisection inside a bracket
   where f' changes sign, widened from the likelihood's starting value until it holds);
2. σ = (−f''(m))^{-1/2}; each tail ends where f has dropped by ``drop`` below f(m),
   found from a probe at m ± 5σ: if f is still above that level there, the tangent
   at the probe reaches it further out (f lies under its tangents); if f is already
   below it, Newton steps from the outer side (which stay outside, by concavity)
   guarded by bisection close in on the level. Either way the drop at the end point
   is at least ``drop``. The range thus comes from the posterior itself, wherever it
   lies: the likelihood and priors are evaluated exactly for any real u, even where
   Δ = e^u under- or overflows float64 (draws and quantiles there are 0.0 or inf);
3. nodes u = m + σ' sinh(s), s uniform between the two ends, σ' = σ unless a tail ends
   closer than 4σ to the mode: dense near the mode, sparse in long tails; the density
   of s, e^{f(u(s))} σ' cosh(s), is smooth and negligible at both ends, so the
   trapezoid rule converges geometrically;
4. draws invert the CDF of the interpolant that is linear in the log-density
   (exact for exponential tails); the posterior mean is a ratio of two normalising
   constants, each on its own grid (:func:`posterior_mean`).

The loops below run over Newton iterations, grid nodes and blocks of
:data:`BLOCK_PAGES` pages (to bound memory and keep work arrays in cache), never over
single pages.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import integrate

from ._priors import log_prior_u

__all__ = ["GridPosterior", "fit_grid", "improper_pages", "inverse_cdf", "posterior_mean"]

#: starting half-width of the bracket around the mode (widened ×4 until it brackets)
BRACKET_START = 20.0
DEFAULT_GRID_SIZE = 64
DEFAULT_DROP = 30.0
PROBE_SCALES = 5.0  # first look for each tail end at mode ± 5 scale
END_SLACK = 5.0  # a tail end lies where the log-density is between drop and drop + 5 below its peak
END_ITERATIONS = 100  # Newton/bisection steps at most to find a steep tail's end
SIDE_NODES_SCALES = 4.0  # the sinh scale is at most (distance from the mode to the nearer tail end) / 4


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


def _first_page(mask) -> int:
    return int(np.flatnonzero(mask)[0])


def _mode(lik, coef, *, tol=1e-9, max_iter=300):
    """Per-page mode of the concave log-posterior of u = log Δ.

    A bracket [lo, hi] with f'(lo) > 0 > f'(hi) is widened from the likelihood's
    starting value until it holds; inside it, Newton steps are taken when they stay in
    the bracket and at least halve the step before last, else bisection ("rtsafe",
    Press et al., Numerical Recipes §9.4). Newton alone crawls by ~1 per step where an
    exponential term dominates (e.g. Δτ ~ 1e300 at the start); bisection bounds the
    work by log2(width/tol). The mode may lie anywhere on the real line: the
    likelihood and priors are evaluated exactly even where e^u under- or overflows.

    Raises
    ------
    FloatingPointError
        If no bracket or no convergence is found (a bug, not a data condition: every
        proper posterior here is log-concave with a finite mode).
    """
    start = np.where(np.isfinite(lik.start), lik.start, 0.0)
    lo, hi = start - BRACKET_START, start + BRACKET_START
    width = BRACKET_START
    for _ in range(40):  # widen the bracket until f'(lo) > 0 > f'(hi)
        bad_lo = ~(_derivs(lik, coef, lo)[0] > 0)
        bad_hi = ~(_derivs(lik, coef, hi)[0] < 0)
        if not (bad_lo.any() or bad_hi.any()):
            break
        width *= 4.0
        lo = np.where(bad_lo, lo - width, lo)
        hi = np.where(bad_hi, hi + width, hi)
    else:
        raise FloatingPointError(
            f"grid posterior: no bracket for the mode of log Δ of page {_first_page(bad_lo | bad_hi)}"
        )
    u = np.clip(start, lo, hi)
    prev = prev2 = hi - lo
    done = np.zeros(lik.n_pages, dtype=bool)
    for _ in range(max_iter):
        g, h = _derivs(lik, coef, u)
        lo = np.where(g > 0, u, lo)
        hi = np.where(g < 0, u, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = u - g / h
            use = (newton >= lo) & (newton <= hi) & (2.0 * np.abs(newton - u) <= np.abs(prev2))
        new = np.where(use, newton, 0.5 * (lo + hi))
        new = np.where((g == 0) | done, u, new)
        step = new - u
        prev2, prev = prev, step
        tol_u = tol * (1.0 + np.abs(u))
        done |= (np.abs(step) <= tol_u) | (hi - lo <= tol_u)
        u = new
        if done.all():
            break
    else:
        raise FloatingPointError(f"grid posterior: the mode of log Δ of page {_first_page(~done)} did not converge")
    return u


def _log_cosh(s):
    a = np.abs(s)
    return a + np.log1p(np.exp(-2.0 * a)) - np.log(2.0)


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
        Posterior mode of log Δ and the scale of the sinh map: (−f''(mode))^{-1/2}, or
        a quarter of the distance from the mode to the nearer tail end if smaller.
    log_norm : ndarray, shape (n_pages,) or None
        Log of ∫ e^{f(u)} du, f the unnormalised log-posterior that was tabulated
        (log-likelihood plus :func:`log_prior_u`): ratios of these give moments.
    """

    s: np.ndarray
    u: np.ndarray
    log_density: np.ndarray
    mode: np.ndarray
    scale: np.ndarray
    log_norm: np.ndarray | None = None

    @property
    def step(self) -> np.ndarray:
        return self.s[:, 1] - self.s[:, 0]

    def _trapezoid(self, values):
        w = np.full(self.s.shape[1], 1.0)
        w[[0, -1]] = 0.5
        return (values * np.exp(self.log_density) * w).sum(axis=1) * self.step

    def mean(self) -> np.ndarray:
        """Posterior mean of Δ per page (quadrature; e^u times the density in log space)."""
        w = np.full(self.s.shape[1], 1.0)
        w[[0, -1]] = 0.5
        with np.errstate(over="ignore"):
            return (np.exp(self.u + self.log_density) * w).sum(axis=1) * self.step

    def quantile(self, probs) -> np.ndarray:
        """Posterior quantiles of Δ; ``probs`` of shape (m,) or (n_pages, m).

        Quantiles beyond the float64 range are 0.0 or ``inf``.
        """
        probs = np.broadcast_to(np.asarray(probs, dtype=np.float64), (self.s.shape[0], np.shape(probs)[-1]))
        s = inverse_cdf(self.s[:, 0], self.step, self.log_density, probs)
        with np.errstate(over="ignore"):
            return np.exp(self.mode[:, None] + self.scale[:, None] * np.sinh(s))

    def sample(self, n_draws: int, rng: np.random.Generator) -> np.ndarray:
        """Independent draws of Δ, shape (n_pages, n_draws)."""
        return self.quantile(rng.random((self.s.shape[0], n_draws)))


def _tail_end(lik, coef, m, scale, level, side):
    """Where the concave log-posterior falls to ``level`` on one side of the mode.

    From a probe at m ± 5 scale: if f is still above ``level`` there, the tangent at the
    probe reaches the level further out, and f, lying under its tangents, is below it
    there. If f is already below, the crossing lies between the mode and the probe:
    Newton steps from the outer point stay outside the crossing (again because f lies
    under its tangents) and bisection guards them where a doubly exponential tail makes
    them short, until f at the outer point is within :data:`END_SLACK` of the level.
    Either way the drop at the returned point is at least ``drop``.
    """
    probe = m + side * PROBE_SCALES * scale
    f_p = _log_post(lik, coef, probe)
    g_p, _ = _derivs(lik, coef, probe)
    short = f_p > level
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        end = np.where(short, probe + side * (f_p - level) / np.abs(g_p), probe)
        inner = m.copy()
        f_out, g_out = f_p, g_p
        for _ in range(END_ITERATIONS):
            work = ~short & ~(f_out >= level - END_SLACK) & (np.abs(end - inner) > 1e-12 * (1.0 + np.abs(end)))
            if not work.any():
                break
            newton = end - (f_out - level) / g_out  # from outside, stays outside
            useful = (
                np.isfinite(newton)
                & (side * (newton - inner) > 0)
                & (np.abs(newton - end) >= 0.5 * np.abs(end - inner))
            )
            trial = np.where(useful, newton, 0.5 * (inner + end))
            f_t = _log_post(lik, coef, trial)
            g_t = _derivs(lik, coef, trial)[0]
            outside = ~(f_t > level)
            end = np.where(work & outside, trial, end)
            f_out = np.where(work & outside, f_t, f_out)
            g_out = np.where(work & outside, g_t, g_out)
            inner = np.where(work & ~outside, trial, inner)
    return end


def fit_grid(lik, coef: dict, *, size: int = DEFAULT_GRID_SIZE, drop: float = DEFAULT_DROP) -> GridPosterior:
    """Tabulate the posterior of log Δ of every page on ``size`` adapted nodes.

    Parameters
    ----------
    lik : ExactLikelihood, MarginalLikelihood or LatticeLikelihood
        Anything with ``n_pages``, ``start``, ``value(u)`` and ``derivatives(u)`` for u
        of shape (n_pages,); ``value_grid(u)`` for u of shape (n_pages, G) is used when
        present.
    coef : dict of ndarray
        Prior coefficients (``PriorCoefficients.as_arrays``).
    size : int
        Nodes per page.
    drop : float
        Each tail is cut where the log-density is ``drop`` below its maximum
        (relative mass beyond ≈ e^{-drop}).

    Raises
    ------
    ValueError
        If a page's posterior is so flat in log Δ that its tails do not end within
        the float64 range (e.g. a Gamma prior with shape ~1e-300 and no change seen).

    Notes
    -----
    The range of the nodes comes from the posterior itself (mode, curvature and where
    the log-density has dropped by ``drop``), not from a fixed window of Δ, so it
    covers posteriors wherever they are: Δτ from 1e-300 to 1e300, priors whose mass
    lies below e^-700 (Δ = 0.0 in float64: such draws and quantiles are 0.0).
    """
    m = _mode(lik, coef)
    f_m = _log_post(lik, coef, m)
    _, h = _derivs(lik, coef, m)
    scale = 1.0 / np.sqrt(np.maximum(-h, 1e-300))
    level = f_m - drop
    lo_end = _tail_end(lik, coef, m, scale, level, -1.0)
    hi_end = _tail_end(lik, coef, m, scale, level, 1.0)
    bad = ~(np.isfinite(lo_end) & np.isfinite(hi_end) & np.isfinite(scale) & (scale > 0))
    if bad.any():
        raise ValueError(
            f"the posterior of page {_first_page(bad)} is too flat in log Δ for float64 quadrature "
            f"(mode {m[bad][0]:.4g}, "
            "no end of its tails in range): use a less vague prior"
        )
    # the sinh map's scale: the curvature scale, unless one tail ends much closer to the
    # mode (a skewed posterior, e.g. a vague Gamma prior: a long linear left tail and a
    # doubly exponential right one), which then still gets nodes
    scale = np.minimum(scale, np.minimum(m - lo_end, hi_end - m) / SIDE_NODES_SCALES)
    s_lo = -np.arcsinh((m - lo_end) / scale)
    s_hi = np.arcsinh((hi_end - m) / scale)
    s = s_lo[:, None] + (s_hi - s_lo)[:, None] * np.linspace(0.0, 1.0, size)
    u = m[:, None] + scale[:, None] * np.sinh(s)
    if hasattr(lik, "value_grid"):
        log_d = lik.value_grid(u) + log_prior_u(u, coef)
    else:
        log_d = np.empty_like(u)
        for j in range(size):  # one vectorised pass over all pages per node
            log_d[:, j] = _log_post(lik, coef, u[:, j])
    log_d += np.log(scale)[:, None] + _log_cosh(s)
    shift = log_d.max(axis=1, keepdims=True)
    log_d -= shift
    w = np.full(size, 1.0)
    w[[0, -1]] = 0.5
    log_mass = np.log((np.exp(log_d) * w).sum(axis=1) * (s[:, 1] - s[:, 0]))
    log_d -= log_mass[:, None]
    return GridPosterior(s=s, u=u, log_density=log_d, mode=m, scale=scale, log_norm=shift[:, 0] + log_mass)


def posterior_mean(lik, coef: dict, *, size: int = DEFAULT_GRID_SIZE) -> np.ndarray:
    """Posterior mean of Δ per page, as a ratio of two normalising constants.

    E[Δ] = ∫ e^{u + f(u)} du / ∫ e^{f(u)} du, and e^u · prior is the same prior with
    A + 1 in place of A, so each integral gets its own adapted grid: the mean is
    accurate even when the posterior of Δ has a heavy right tail (a beta-prime prior
    before any crawl without change), where integrating e^u over the grid of the
    density would truncate it. Where the numerator diverges (right tail of Δ no
    lighter than Δ^{-2}), the mean is ``inf``.

    Returns
    -------
    ndarray, shape (n_pages,)
    """
    shifted = dict(coef)
    shifted["A"] = coef["A"] + 1.0
    infinite = improper_pages(lik, shifted)
    shifted["A"] = np.where(infinite, coef["A"], shifted["A"])
    z0 = fit_grid(lik, coef, size=size).log_norm
    z1 = fit_grid(lik, shifted, size=size).log_norm
    assert z0 is not None and z1 is not None  # fit_grid sets log_norm
    with np.errstate(over="ignore"):
        return np.where(infinite, np.inf, np.exp(z1 - z0))


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
