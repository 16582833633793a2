"""Simulation of crawl histories under the Poisson change model (paper Section 2)."""

from __future__ import annotations

import numpy as np

from ._rng import as_generator, replication_generators
from ._validation import as_float_array, check_choice, check_positive_int, check_positive_scalar
from .history import CrawlHistory

__all__ = ["simulate_history", "simulate_replications", "simulate_change_times"]

_CRAWLS = ("poisson", "regular")
_MAX_EVENTS = 1e9  # simulate_change_times: larger expected counts are refused
_MAX_CRAWLS = 1e9  # simulate_history: larger histories are refused


def _rates(change_rate, crawl_rate, n_pages):
    delta = as_float_array(change_rate, name="change_rate", nonnegative=True, ndim=(0, 1))
    p = as_float_array(crawl_rate, name="crawl_rate", positive=True, ndim=(0, 1))
    for name, a in (("change_rate", delta), ("crawl_rate", p)):
        if a.ndim == 1 and n_pages is None:
            raise ValueError(f"`{name}` has shape {a.shape}: pass `n_pages={a.shape[0]}` to simulate one page per rate")
        if a.ndim == 1 and a.shape != (n_pages,):
            raise ValueError(f"`{name}` must be a scalar or have shape (n_pages,) = ({n_pages},); got {a.shape}")
    _check_mean_interval(p)
    return delta, p


def _check_mean_interval(p):
    with np.errstate(over="ignore", divide="ignore"):
        bad = ~np.isfinite(1.0 / p)
    if np.any(bad):
        raise ValueError(f"`crawl_rate` is too small: the mean crawl interval 1/p overflows; got {np.min(p)}")


def _draw(gen, delta, p, shape, crawl):
    """Draw intervals and indicators of the given shape from one generator."""
    p_col = p[:, None] if p.ndim == 1 else p
    d_col = delta[:, None] if delta.ndim == 1 else delta
    if crawl == "poisson":
        tau = gen.standard_exponential(shape) / p_col
    else:
        tau = np.broadcast_to(1.0 / p_col, shape).astype(np.float64)
    u = gen.random(shape)
    # P(I = 1 | tau) = 1 - exp(-delta * tau); -expm1 keeps small delta*tau accurate
    changed = (u < -np.expm1(-d_col * tau)).astype(np.int8)
    return changed, tau


def simulate_history(change_rate, crawl_rate, n_crawls, *, n_pages=None, crawl="poisson", rng=None) -> CrawlHistory:
    """Simulate what a crawler observes of Poisson-changing pages.

    Changes of each page form a homogeneous Poisson process with rate Δ; crawls are a
    Poisson process with rate p (``crawl="poisson"``, the paper's setting) or fall every
    1/p (``crawl="regular"``). Given τ_k, I_k ~ Bernoulli(1 - exp(-Δ τ_k)), independent
    across crawls (independent increments), so E[I] = Δ/(Δ+p) for Poisson crawls
    (paper eq. 4).

    Parameters
    ----------
    change_rate : float or array_like of shape (n_pages,)
        Δ >= 0, changes per unit time (e.g. per hour).
    crawl_rate : float or array_like of shape (n_pages,)
        p > 0, crawls per the same unit time.
    n_crawls : int
        k >= 1, crawls per page.
    n_pages : int, optional
        Number of pages. None (default) gives a single page with 1-D arrays.
    crawl : {"poisson", "regular"}, default "poisson"
        Random (exponential) or fixed crawl intervals.
    rng : int, numpy.random.Generator or None
        Seed or generator; same seed, same history.

    Returns
    -------
    CrawlHistory
        ``changed`` and ``intervals`` of shape (n_crawls,) or (n_pages, n_crawls),
        ``crawl_rate`` = p.

    Raises
    ------
    ValueError
        For Δ < 0, p <= 0 (or so small that 1/p overflows), NaN/inf rates,
        n_crawls < 1, more than 1e9 crawls in all, a rate array whose shape is not
        (n_pages,) or an unknown ``crawl``.

    Examples
    --------
    >>> from changerate_bayes import simulate_history
    >>> h = simulate_history(5.0, 3.0, 1000, rng=1)
    >>> round(float(h.changed.mean()), 2)  # E[I] = 5/8
    0.62
    """
    n_crawls = check_positive_int(n_crawls, name="n_crawls")
    if n_pages is not None:
        n_pages = check_positive_int(n_pages, name="n_pages")
    crawl = check_choice(crawl, name="crawl", choices=_CRAWLS)
    delta, p = _rates(change_rate, crawl_rate, n_pages)
    gen = as_generator(rng)
    shape = (n_crawls,) if n_pages is None else (n_pages, n_crawls)
    if np.prod(shape, dtype=np.float64) > _MAX_CRAWLS:
        raise ValueError(
            f"`n_pages` × `n_crawls` = {np.prod(shape, dtype=np.float64):.3g} crawls; more than "
            f"{_MAX_CRAWLS:.0e} would not fit in memory (9 bytes per crawl): simulate in batches"
        )
    changed, tau = _draw(gen, delta, p, shape, crawl)
    return CrawlHistory(changed, tau, p if p.ndim else float(p))


def simulate_replications(
    change_rate, crawl_rate, n_crawls, n_replications, *, rng=None, crawl="poisson", start=0, stop=None
) -> CrawlHistory:
    """Simulate Monte Carlo replications of one page, reproducible chunk by chunk.

    With an int seed, replication i draws from
    ``SeedSequence(rng).spawn(n_replications)[i]``, so the rows ``start:stop`` are the
    same whether all replications are simulated at once or in separate chunks
    (processes, machines).

    Parameters
    ----------
    change_rate, crawl_rate : float
        Δ >= 0 and p > 0 (per unit time).
    n_crawls : int
        k, crawls per replication.
    n_replications : int
        R, the study's total number of replications.
    rng : int, numpy.random.SeedSequence or numpy.random.Generator
        The study's seed (chunks are reproducible only from an int seed or a
        SeedSequence: a Generator spawns fresh children on every call).
    crawl : {"poisson", "regular"}
    start, stop : int
        Chunk of replications to simulate (default all).

    Returns
    -------
    CrawlHistory
        Shape (stop - start, n_crawls): one row per replication.
    """
    n_crawls = check_positive_int(n_crawls, name="n_crawls")
    delta = np.float64(as_float_array(change_rate, name="change_rate", nonnegative=True, ndim=(0,)))
    p = check_positive_scalar(crawl_rate, name="crawl_rate")
    _check_mean_interval(p)
    crawl = check_choice(crawl, name="crawl", choices=_CRAWLS)
    gens = replication_generators(rng, n_replications, start=start, stop=stop)
    changed = np.empty((len(gens), n_crawls), dtype=np.int8)
    tau = np.empty((len(gens), n_crawls))
    for row, gen in enumerate(gens):  # one draw call per stream; all arithmetic is vectorised
        changed[row], tau[row] = _draw(gen, delta, np.float64(p), (n_crawls,), crawl)
    return CrawlHistory(changed, tau, p)


def simulate_change_times(change_rate, horizon, *, rng=None) -> np.ndarray:
    """Change times of a homogeneous Poisson process on (0, ``horizon``].

    Parameters
    ----------
    change_rate : float
        Δ >= 0 per unit time.
    horizon : float
        Length of the window, > 0, same unit.
    rng : int, numpy.random.Generator or None

    Returns
    -------
    ndarray of float, shape (m,)
        Sorted change times; m ~ Poisson(Δ · horizon).

    Raises
    ------
    ValueError
        For Δ < 0, horizon <= 0, NaN/inf, or more than 10⁹ expected changes.
    """
    delta = float(as_float_array(change_rate, name="change_rate", nonnegative=True, ndim=(0,)))
    horizon = check_positive_scalar(horizon, name="horizon")
    expected = delta * horizon
    if expected > _MAX_EVENTS:
        raise ValueError(
            f"`change_rate` × `horizon` = {expected:.3g} expected changes; more than {_MAX_EVENTS:.0e} "
            "would not fit in memory: shorten the horizon"
        )
    gen = as_generator(rng)
    m = gen.poisson(expected)
    return np.sort(gen.uniform(0.0, horizon, size=m))
