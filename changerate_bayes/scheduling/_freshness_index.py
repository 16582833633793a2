r"""The freshness index of a page: when crawling it again is worth a crawl's price.

The index. A page whose copy was taken at time 0 and whose first change after it comes
at a time with distribution F (F(t) = P(changed within t)) is fresh, until its next crawl
at t, for ∫_0^t (1 − F(s)) ds. Crawling it every t (each crawl renewing the copy), at a
price λ per crawl, earns w (t − ∫_0^t F)/t − λ/t per unit time. Its derivative in t is
(λ − w ν(t))/t² with

    ν(t) = t F(t) − ∫_0^t F(s) ds = ∫_0^t s dF(s),

which increases with t (dν/dt = t F'(t) >= 0). So the best period under price λ is the
t with w ν(t) = λ, and the best policy crawls a page when w ν(elapsed) reaches λ: w ν is
the page's Whittle index (the price at which crawling now and waiting are equally good;
the problem is indexable because ν is monotone). For a Poisson page of known rate Δ,
F(t) = 1 − e^{−Δt} and

    ν(t) = (1 − e^{−Δt}(1 + Δt)) / Δ,

the stationarity condition of Cho & Garcia-Molina's Lagrangian allocation of crawl rates
for freshness (its maximum 1/Δ, reached as t → ∞, is why that allocation drops the pages
that change fastest when λ is high). The index of a learner is the same functional of its
predictive F given the crawls so far: the certainty-equivalent Whittle index at the current
belief (the value of learning from the crawl is left out).

:func:`freshness_index` is the index of a Poisson page of known rate, and
:func:`predictive_freshness_index` that of any predictive F (a learner's, given the crawls
so far). The crawl allocation of a log's pages and the replay's index policies both use
them. :func:`index_kernels` gives their compiled kernels (numba, compiled or loaded from
its cache on first use, never at import).
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array
from ._shapes import broadcast_together

__all__ = ["freshness_index", "index_kernels", "predictive_freshness_index"]

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(8)
_GL_NODES = 0.5 * (_GL_NODES + 1.0)  # on [0, 1]
_GL_WEIGHTS = 0.5 * _GL_WEIGHTS


def index_kernels():
    """The compiled freshness-index kernels (``poisson_index``, ``mixture_index``, ``mixture_table``,
    ``signed_table``, ``table_index``), compiled by numba (or loaded from its cache) on first use."""
    from . import _index_kernels as k  # numba kernels: imported on first use, never compiled at import

    return k


def freshness_index(rate, elapsed, *, weight=1.0):
    r"""Whittle index of a Poisson page for binary freshness: w (1 − e^{−Δt}(1 + Δt)) / Δ.

    A page whose copy is t old and which changes as a Poisson process of rate Δ should be
    crawled when this index reaches the price λ of a crawl (see the module notes); the
    index is 0 at t = 0, increases with t, and tends to w/Δ; it is w Δ t²/2 + O(Δ²) as
    Δ → 0, and 0 for Δ = 0 (a page that never changes gains nothing from a crawl).

    Parameters
    ----------
    rate : float or array_like
        Δ >= 0, changes per time unit.
    elapsed : float or array_like
        t >= 0, time since the last crawl, in the same time unit.
    weight : float or array_like, default 1.0
        w >= 0, importance of the page.

    Returns
    -------
    ndarray (broadcast shape; a 0-d array for scalars)
        The index in weight × time units.

    Raises
    ------
    TypeError
        For non-numeric input.
    ValueError
        For a negative or non-finite rate, elapsed time or weight, or shapes that do not
        broadcast.

    Notes
    -----
    ν(t) = t F(t) − ∫_0^t F(s) ds with F(t) = 1 − e^{−Δt}; the first-order condition
    of maximising w (1 − e^{−Δ I})/(Δ I) − λ/I over the crawl interval I (Cho &
    Garcia-Molina 2003, Section 4, freshness allocation under a crawl budget). Below
    Δt = 1e-3 the Taylor series t (x/2 − x²/3 + x³/8 − x⁴/30), x = Δt, is used.

    References
    ----------
    J. Cho and H. Garcia-Molina, "Effective page refresh policies for web crawlers",
    ACM TODS 28(4), 2003. P. Whittle, "Restless bandits: activity allocation in a changing
    world", J. Appl. Prob. 25A, 1988. K. Avrachenkov and V. S. Borkar, "Whittle index
    policy for crawling ephemeral content" (the index policy under a crawl budget).

    Examples
    --------
    >>> from changerate_bayes.scheduling import freshness_index
    >>> round(float(freshness_index(1.0, 1.0)), 6)  # 1 − 2/e
    0.264241
    """
    d = as_float_array(rate, name="rate", nonnegative=True)
    t = as_float_array(elapsed, name="elapsed", nonnegative=True)
    w = as_float_array(weight, name="weight", nonnegative=True)
    d, t, w = broadcast_together(rate=d, elapsed=t, weight=w)
    out = np.empty(d.size)
    index_kernels().poisson_index(np.ascontiguousarray(d.ravel()), np.ascontiguousarray(t.ravel()), out)
    return (w.ravel() * out).reshape(d.shape)


def predictive_freshness_index(prob_change_within, elapsed) -> np.ndarray:
    """The mean-form index t F(t) − ∫_0^t F(s) ds of any predictive F, in days.

    Parameters
    ----------
    prob_change_within : callable
        ``prob_change_within(t)`` with an array of shape (N,) of times since each page's
        last crawl (days in the replay) returns F, shape (N,) (the learner protocol).
    elapsed : ndarray, shape (N,)
        Time since each page's last crawl, >= 0 (days in the replay).

    Returns
    -------
    ndarray, shape (N,)

    Notes
    -----
    The integral by 8-point Gauss-Legendre quadrature on [0, t] (9 calls of the
    predictive), exact for F polynomial of degree <= 15 in t and within ~1e-10 of the
    closed form for the Poisson predictive up to Δt ≈ 10.
    """
    t = np.asarray(elapsed, dtype=np.float64)
    integral = np.zeros_like(t)
    for x, a in zip(_GL_NODES, _GL_WEIGHTS):  # a loop over quadrature nodes; the pages are vectorised
        integral += a * np.asarray(prob_change_within(x * t), dtype=np.float64)
    return t * (np.asarray(prob_change_within(t), dtype=np.float64) - integral)
