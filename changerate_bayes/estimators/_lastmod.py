"""Change rates from the last-modification date (Cho & Garcia-Molina 2003)."""

from __future__ import annotations

import numpy as np

__all__ = ["last_modified_rate"]


def last_modified_rate(changed, intervals, ages, *, lengths=None, method="cgm"):
    """Each page's change rate when each crawl also reads the page's last-modification time.

    At crawl k the crawler learns I_k (changed since crawl k-1?), the interval τ_k, and,
    when I_k = 1, the page's age a_k = t_k - LastModified_k (0 <= a_k < τ_k): no change
    happened in the last a_k of the interval. Under a Poisson process of rate λ the
    likelihood is λ^X e^{-λ T}, with X = Σ I_k changes detected in N crawls and the
    exposure T = Σ_k (a_k if I_k else τ_k): each changed interval contributes the density
    of its last change (λ e^{-λ a_k}), each unchanged one its survival (e^{-λ τ_k}).

    Parameters
    ----------
    changed : array_like of {0, 1}, shape (n_visits,)
        I_k, page after page.
    intervals : array_like of float, shape (n_visits,)
        τ_k > 0 (any time unit; the rate is per that unit).
    ages : array_like of float, shape (n_visits,)
        a_k in the same unit where I_k = 1 (values where I_k = 0 are not read); each
        must lie in [0, τ_k].
    lengths : array_like of int, shape (n_pages,), optional
        Crawls of each page (default: one page of all the crawls).
    method : {"cgm", "mle"}, default "cgm"
        "mle": X / T. "cgm": Cho & Garcia-Molina's estimator with the last date of
        change, r̂ = (X - 1 - X / (N log(1 - X/N))) / T, which removes most of the MLE's
        upward bias for few changes (r̂ = 0 for X = 0 and (N - 1) / T for X = N).

    Returns
    -------
    ndarray of float64, shape (n_pages,)
        Changes per time unit of ``intervals``.

    Raises
    ------
    ValueError
        For arrays of different lengths, ``changed`` not 0/1, intervals not > 0, ages
        of changed crawls outside [0, τ_k] or not finite, lengths that do not sum to
        the crawls, or an unknown ``method``.

    Notes
    -----
    The maximum of λ^X e^{-λT} is X/T. Given X, T is a sum of gamma-like exposures, and
    E[1/T] > 1/E[T]: the MLE overestimates for small X; (X - 1)/T is the classical
    correction, and the CGM term X/(N log(1 - X/N)) interpolates between it (X near N)
    and X/T (X much less than N).

    References
    ----------
    J. Cho and H. Garcia-Molina (2003), "Estimating frequency of change", ACM
    Transactions on Internet Technology 3(3), 256-290: the estimator for the last date
    of change (their Section 5).

    Examples
    --------
    >>> import numpy as np
    >>> c = np.array([1, 0, 1, 1]); tau = np.array([2.0, 2.0, 2.0, 2.0]); a = np.array([0.5, 0.0, 1.5, 1.0])
    >>> float(last_modified_rate(c, tau, a, method="mle")[0])   # X = 3, T = 0.5 + 2 + 1.5 + 1 = 5
    0.6
    >>> round(float(last_modified_rate(c, tau, a)[0]), 6)     # (3 - 1 - 3 / (4 log(1/4))) / 5
    0.508202
    """
    c = np.asarray(changed)
    tau = np.asarray(intervals, dtype=np.float64)
    age = np.asarray(ages, dtype=np.float64)
    if method not in ("cgm", "mle"):
        raise ValueError(f"`method` must be 'cgm' or 'mle'; got {method!r}")
    if not (c.ndim == tau.ndim == age.ndim == 1 and c.size == tau.size == age.size):
        raise ValueError(
            f"`changed`, `intervals` and `ages` must be 1-D of one length; got shapes "
            f"{c.shape}, {tau.shape}, {age.shape}"
        )
    if c.size == 0:
        raise ValueError("`changed` must hold at least one crawl")
    if not np.isin(c, (0, 1)).all():
        raise ValueError("`changed` must hold 0/1 values")
    c = c.astype(bool)
    if not (np.isfinite(tau) & (tau > 0)).all():
        i = int(np.flatnonzero(~(np.isfinite(tau) & (tau > 0)))[0])
        raise ValueError(f"`intervals` must be finite and > 0; got {float(tau[i])} at index {i}")
    bad = c & ~(np.isfinite(age) & (age >= 0) & (age <= tau))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"`ages` of changed crawls must lie in [0, interval]; got {float(age[i])} (interval "
            f"{float(tau[i])}) at index {i}"
        )
    n_visits = c.size
    lengths = np.array([n_visits]) if lengths is None else np.asarray(lengths, dtype=np.int64)
    if lengths.ndim != 1 or (lengths < 1).any() or lengths.sum() != n_visits:
        raise ValueError(f"`lengths` must be >= 1 and sum to {n_visits} crawls")
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    x = np.add.reduceat(c.astype(np.float64), starts)
    t = np.add.reduceat(np.where(c, age, tau), starts)
    n = lengths.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "mle":
            return np.where(x > 0, x / t, 0.0)
        frac = x / n
        log_term = np.where((x > 0) & (x < n), x / (n * np.log1p(-frac)), 0.0)  # -> 0 at X = N
        num = np.where(x == 0, 0.0, x - 1.0 - np.where(x < n, log_term, 0.0))
        return np.where(t > 0, num / t, np.where(x > 0, np.inf, 0.0))
