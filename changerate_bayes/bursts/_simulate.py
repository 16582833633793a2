"""Pages that change in bursts (a two-state MMPP), crawled at Poisson or regular times."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._rng import as_generator
from .._validation import check_positive_int, check_positive_scalar
from ._model import check_params

__all__ = ["BurstPages", "simulate_burst_pages"]


@dataclass(frozen=True)
class BurstPages:
    """Crawls of simulated burst-model pages.

    Attributes
    ----------
    changed : ndarray of int8, shape (n_pages, k)
    intervals : ndarray, shape (n_pages, k)
    busy : ndarray of bool, shape (n_pages, k)
        The true state at each crawl.
    n_changes : ndarray of int64, shape (n_pages, k)
        Number of changes in each interval (the crawler sees only whether it is > 0).
    """

    changed: np.ndarray
    intervals: np.ndarray
    busy: np.ndarray
    n_changes: np.ndarray


def simulate_burst_pages(
    params, n_pages: int, n_crawls: int, *, crawl_interval: float = 1.0, regular: bool = False, rng=None
) -> BurstPages:
    """Simulate the MMPP exactly (competing exponential clocks) and crawl it.

    Parameters
    ----------
    params : BurstParameters
    n_pages, n_crawls : int
    crawl_interval : float, default 1.0
        Mean interval between crawls, in the time unit of the rates.
    regular : bool, default False
        Crawl every ``crawl_interval`` exactly instead of at Poisson times.
    rng : int, numpy.random.Generator or None

    Returns
    -------
    BurstPages

    Raises
    ------
    TypeError, ValueError
        For a bad ``params``, sizes below 1, or a ``crawl_interval`` not > 0.

    Notes
    -----
    Each page starts in the stationary distribution. Within an interval, the time to the
    next event in state i is exponential with rate q_i + λ_i; the event is a change with
    probability λ_i/(q_i + λ_i), else a switch.
    """
    p = check_params(params)
    n = check_positive_int(n_pages, name="n_pages")
    k = check_positive_int(n_crawls, name="n_crawls")
    ci = check_positive_scalar(crawl_interval, name="crawl_interval")
    gen = as_generator(rng)
    lam = np.array([p.quiet_rate, p.busy_rate])
    q = np.array([p.to_busy, p.to_quiet])
    tot = lam + q
    state = (gen.random(n) < p.busy_probability).astype(np.int64)
    tau = np.full((n, k), ci) if regular else gen.exponential(ci, size=(n, k))
    counts = np.zeros((n, k), dtype=np.int64)
    busy = np.zeros((n, k), dtype=bool)
    for j in range(k):  # crawls in sequence; pages and events vectorised
        left = tau[:, j].copy()
        active = np.flatnonzero(tot[state] > 0)
        while active.size:
            s = state[active]
            wait = gen.exponential(1.0, size=active.size) / tot[s]
            hit = wait < left[active]
            idx = active[hit]
            left[idx] -= wait[hit]
            s = state[idx]
            is_change = gen.random(idx.size) * tot[s] < lam[s]
            counts[idx[is_change], j] += 1
            sw = idx[~is_change]
            state[sw] = 1 - state[sw]
            active = idx
        busy[:, j] = state == 1
    return BurstPages((counts > 0).astype(np.int8), tau, busy, counts)
