"""Exponential Q-Q data with a simulation envelope (pure data preparation)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._rng import as_generator

__all__ = ["QQData", "exponential_qq"]


@dataclass(frozen=True)
class QQData:
    """Quantiles of the gaps against the fitted gap distribution.

    Attributes
    ----------
    theoretical : ndarray, shape (m,)
        Quantiles at (i - 1/2)/m of the fitted distribution: -log(1 - (i - 1/2)/m) / rate
        for the exponential; for the geometric gaps of crawl detections, the smallest
        whole number of crawl intervals k with 1 - (1 - q̂)^k >= (i - 1/2)/m, times c.
    observed : ndarray, shape (m,)
        The sorted gaps (jittered where ties or quantisation required it).
    lower, upper : ndarray, shape (m,)
        Pointwise simulation envelope: the ``(1 ± level)/2`` quantiles of the i-th
        sorted gap over exponential samples of the same size, each rescaled to the
        data's mean gap (so the envelope includes the error of the fitted rate); for
        crawl detections, over samples of the exact null (detection slots uniform given
        their number).
    level : float
        Pointwise coverage of the envelope.
    n_simulations : int
    distribution : {"exponential", "geometric"}
        The null law of the gaps: exponential for exact event times, geometric (whole
        crawl intervals) for crawl detections.
    """

    theoretical: np.ndarray
    observed: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    n_simulations: int
    distribution: str = "exponential"

    def fraction_outside(self) -> float:
        """Fraction of the points outside the envelope (about 1 - level under H0)."""
        if self.observed.size == 0:
            return 0.0
        return float(np.mean((self.observed < self.lower) | (self.observed > self.upper)))


def exponential_qq(gaps, *, level: float = 0.95, n_simulations: int = 199, rng=None) -> QQData:
    """Q-Q data of ``gaps`` against the exponential with rate 1 / mean gap.

    Parameters
    ----------
    gaps : array_like, shape (m,)
        Non-negative gaps between events, any time unit.
    level : float, default 0.95
        Pointwise coverage of the simulation envelope.
    n_simulations : int, default 199
        Exponential samples simulated for the envelope.
    rng : int, numpy.random.Generator or None

    Returns
    -------
    QQData

    Examples
    --------
    >>> import numpy as np
    >>> qq = exponential_qq(np.random.default_rng(0).exponential(2.0, 500), rng=1)
    >>> qq.theoretical.shape, qq.fraction_outside() < 0.2
    ((500,), True)
    """
    g = np.sort(np.asarray(gaps, dtype=np.float64))
    m = g.size
    if m == 0 or not g.mean() > 0:
        empty = np.zeros(m)
        return QQData(empty, g, empty, empty, float(level), 0)
    mean = g.mean()
    probs = (np.arange(1, m + 1) - 0.5) / m
    theoretical = -np.log1p(-probs) * mean
    sims = np.sort(as_generator(rng).standard_exponential((n_simulations, m)), axis=1)
    sims *= mean / sims.mean(axis=1, keepdims=True)
    lower, upper = np.quantile(sims, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return QQData(theoretical, g, lower, upper, float(level), int(n_simulations))
