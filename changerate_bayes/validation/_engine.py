"""Monte Carlo engine: R replications × k crawls as arrays, chunked, reproducible.

Replication i always draws from ``SeedSequence(seed).spawn(R)[i]`` (through
:func:`changerate_bayes.simulate.simulate_replications`), and every estimator treats
replications as independent rows, so the result is the same whatever the chunk size or
the order in which chunks run (serially, in threads or in processes).

Only the estimates at the requested crawl counts ``keep`` are stored, so memory is
bounded by one chunk (chunk × k) however large R is. The SA and SAM settings of a run
are stacked and advanced together in one loop over k.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from changerate_bayes import estimate_path
from changerate_bayes.estimators import alpha_sequence, check_method_params, sa_recursion, sam_recursion
from changerate_bayes.simulate import simulate_replications

__all__ = ["Setting", "PowerSequence", "run_replications", "log_grid", "default_chunk"]

# floats per chunk of replications (each chunk holds ~3 arrays of chunk × k floats), and at
# most MAX_CHUNK replications per chunk so that progress is reported every few seconds
CHUNK_ELEMENTS = 10_000_000
MAX_CHUNK = 250


@dataclass(frozen=True)
class PowerSequence:
    """α_k = k^exponent, a picklable callable for the LLN ``alpha`` parameter."""

    exponent: float

    def __call__(self, k):
        return np.asarray(k, dtype=np.float64) ** self.exponent

    def __str__(self):
        return f"k^{self.exponent:g}"


@dataclass(frozen=True)
class Setting:
    """One estimator configuration of a study: a label, a method and its parameters."""

    label: str
    method: str
    params: dict = field(default_factory=dict)

    def describe(self) -> dict:
        """JSON-able parameters (callables by their name)."""
        return {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in self.params.items()}


def log_grid(k_min: int, k_max: int, n: int) -> np.ndarray:
    """About ``n`` distinct, log-spaced integer crawl counts in [k_min, k_max]."""
    return np.unique(np.round(np.geomspace(k_min, k_max, n)).astype(np.int64))


def default_chunk(n_crawls: int, n_replications: int) -> int:
    """Replications per chunk: about CHUNK_ELEMENTS floats, at most MAX_CHUNK replications."""
    return int(max(1, min(n_replications, MAX_CHUNK, CHUNK_ELEMENTS // max(n_crawls, 1))))


def _chunk(change_rate, crawl_rate, n_crawls, n_replications, seed, crawl, settings, keep, start, stop):
    """Estimates of every setting at crawl counts ``keep`` for replications start:stop."""
    hist = simulate_replications(
        change_rate, crawl_rate, n_crawls, n_replications, rng=seed, crawl=crawl, start=start, stop=stop
    )
    idx = keep - 1
    out = {}
    ones = None
    stacked = {"sa": [], "sam": []}
    for s in settings:
        if s.method in ("naive", "lln"):
            if ones is None:
                ones = np.cumsum(hist.changed, axis=1, dtype=np.float64)[:, idx]
            k = keep.astype(np.float64)
            if s.method == "naive":
                out[s.label] = crawl_rate * ones / k
            else:
                a = alpha_sequence(s.params["alpha"], keep)
                out[s.label] = crawl_rate * ones / (keep + a - ones)
        elif s.method in stacked:
            stacked[s.method].append(s)
        else:
            out[s.label] = estimate_path(hist, s.method, **s.params)[:, idx]
    if stacked["sa"] or stacked["sam"]:
        changed_t = np.ascontiguousarray(hist.changed.T, dtype=np.float64)
        for method, group in stacked.items():
            if not group:
                continue
            col = {name: np.array([[s.params[name]] for s in group]) for name in group[0].params}
            if method == "sa":
                res = sa_recursion(changed_t, crawl_rate, col["eta"], col["initial"], keep=idx)
            else:
                res, _ = sam_recursion(
                    changed_t, crawl_rate, col["eta"], col["beta"], col["omega"], col["initial"], keep=idx
                )
            for i, s in enumerate(group):  # res: (n_keep, n_settings, chunk)
                out[s.label] = np.ascontiguousarray(res[:, i, :].T)
    return out


def run_replications(
    change_rate,
    crawl_rate,
    n_crawls,
    n_replications,
    *,
    seed,
    settings,
    keep,
    crawl="poisson",
    chunk_size=None,
    executor=None,
    progress=None,
):
    """Run every setting on R simulated pages; return the estimates at crawl counts ``keep``.

    Parameters
    ----------
    change_rate, crawl_rate : float
        Δ and p (per unit time).
    n_crawls : int
        k, crawls per replication.
    n_replications : int
        R.
    seed : int
        The study's seed; replication i uses ``SeedSequence(seed).spawn(R)[i]``.
    settings : sequence of Setting
        Estimators to run (labels must be unique). SAM overflows are kept as ±inf.
    keep : array_like of int
        Crawl counts (1 <= k <= n_crawls, increasing) at which estimates are stored.
    crawl : {"poisson", "regular"}
    chunk_size : int, optional
        Replications per chunk (default: about 1e7 floats per chunk).
    executor : concurrent.futures.Executor, optional
        Runs chunks in parallel; the result is identical to the serial run.
    progress : callable, optional
        Called with a message after each chunk.

    Returns
    -------
    dict
        label -> ndarray of shape (R, len(keep)).
    """
    keep = np.asarray(keep, dtype=np.int64)
    if keep.ndim != 1 or keep.size == 0 or keep[0] < 1 or keep[-1] > n_crawls or np.any(np.diff(keep) <= 0):
        raise ValueError(f"`keep` must be increasing crawl counts in [1, {n_crawls}]; got {keep}")
    labels = [s.label for s in settings]
    if len(set(labels)) != len(labels):
        raise ValueError(f"setting labels must be unique; got {labels}")
    settings = [Setting(s.label, s.method, check_method_params(s.method, dict(s.params))) for s in settings]
    chunk = chunk_size or default_chunk(n_crawls, n_replications)
    bounds = [(a, min(a + chunk, n_replications)) for a in range(0, n_replications, chunk)]
    args = (change_rate, crawl_rate, n_crawls, n_replications, seed, crawl, settings, keep)
    out = {label: np.empty((n_replications, keep.size)) for label in labels}

    def store(bound, part):
        for label, arr in part.items():
            out[label][bound[0] : bound[1]] = arr
        if progress is not None:
            progress(f"replications {bound[1]}/{n_replications} (Δ={change_rate:g}, p={crawl_rate:g}, k={n_crawls})")

    if executor is None:
        for b in bounds:
            store(b, _chunk(*args, *b))
    else:
        futures = [executor.submit(_chunk, *args, *b) for b in bounds]
        for b, fut in zip(bounds, futures):
            store(b, fut.result())
    return out
