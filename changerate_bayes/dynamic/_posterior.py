"""``dynamic_posterior``: filtered and smoothed posteriors of a drifting rate over whole histories."""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import as_float_array
from ..bayes import make_summary_data
from ..history import CrawlHistory
from ._model import (
    UNIT_FREE_SIGMAS,
    check_prior,
    check_sigmas,
    make_lattice,
    page_chunks,
    rounded_intervals,
    typical_intervals,
    unit_free_groups,
)

__all__ = ["dynamic_posterior", "DEFAULT_LEVELS"]

#: credible bands reported by default (equal-tailed)
DEFAULT_LEVELS = (0.5, 0.9)


def _check_levels(levels) -> tuple[float, ...]:
    if isinstance(levels, numbers.Real) and not isinstance(levels, bool):
        levels = (levels,)
    lv = as_float_array(levels, name="levels", ndim=(1,))
    if ((lv <= 0) | (lv >= 1)).any():
        raise ValueError(f"`levels` must be in (0, 1); got {lv.tolist()}")
    return tuple(sorted(set(float(v) for v in lv)))


def _inputs(history, mask):
    """(changed, intervals, mask) as (n, K) arrays, n_pages (None for one page) and crawl_rate."""
    if isinstance(history, CrawlHistory):
        if mask is not None:
            raise TypeError("`mask` is only for padded arrays: a CrawlHistory is complete")
        history.require_intervals(method="dynamic")
        # (n_pages, k) arrays; a ragged history is padded after each page's last crawl
        # (masked out; τ = 1 there only to pass the checks)
        changed, tau, m = history.padded(fill_interval=1.0)
        return changed.astype(bool) & m, tau, m, history.n_pages, history.crawl_rate
    if isinstance(history, tuple) and len(history) in (2, 3):
        if len(history) == 3:
            if mask is not None:
                raise TypeError("give the mask once: either in `history` = (changed, intervals, mask) or as `mask`")
            changed, tau, mask = history
        else:
            changed, tau = history
        changed = np.asarray(changed)
        if changed.dtype.kind not in "biuf":
            raise TypeError(f"`changed` must hold 0/1 numbers or booleans; got dtype {changed.dtype}")
        if changed.ndim != 2:
            raise ValueError(f"padded `changed` must have shape (n_pages, k); got {changed.shape}")
        m = np.ones(changed.shape, dtype=bool) if mask is None else np.asarray(mask)
        if m.dtype != bool:
            raise TypeError(f"`mask` must be boolean (True = a crawl); got dtype {m.dtype}")
        tau = np.asarray(tau)
        if tau.shape != changed.shape or m.shape != changed.shape:
            raise ValueError(
                f"`changed`, `intervals` and `mask` must have one shape; got {changed.shape}, {tau.shape}, {m.shape}"
            )
        bad = m & (changed != 0) & (changed != 1)
        if bad.any():
            raise ValueError(f"`changed` must be 0 or 1 where `mask` is True; got {changed[bad][0]!r}")
        tau_ok = as_float_array(np.where(m, tau, 1.0), name="intervals", positive=True)
        return (changed == 1) & m, tau_ok, m, changed.shape[0], None
    raise TypeError(
        "`history` must be a CrawlHistory or a tuple (changed, intervals[, mask]) of (n_pages, k) arrays; "
        f"got {type(history).__name__}"
    )


def dynamic_posterior(
    history,
    *,
    sigma=None,
    prior=None,
    grid=None,
    smooth: bool = True,
    levels=DEFAULT_LEVELS,
    mask=None,
    crawl_rate=None,
):
    """Filtered and smoothed posteriors of a drifting change rate Δ_t at every crawl.

    The model of :class:`DynamicRateFilter`: log Δ follows a Gaussian random walk with
    volatility σ per √(time unit), and crawl k sees a change with probability
    1 − e^{−Δ_{t_k} τ_k}. Exact forward filtering on a lattice of log Δ gives
    p(Δ_{t_k} | I_1..I_k) and the one-step predictive P(I_k = 1 | I_1..I_{k−1}, τ_k);
    the backward pass (forward-backward smoothing) gives p(Δ_{t_k} | all crawls).

    Parameters
    ----------
    history : CrawlHistory or tuple (changed, intervals[, mask])
        A CrawlHistory with intervals (shape (k,) or (n_pages, k), or ragged: its
        pages are then padded after their last crawl and masked), or padded arrays
        of shape (n_pages, k): ``changed`` (0/1), ``intervals`` (τ > 0, in the time unit
        of σ and Δ) and ``mask`` (True where a crawl exists), so that pages with any
        number of crawls fit one array; entries where ``mask`` is False are ignored.
    sigma : float or sequence of float, optional
        Volatility of log Δ per √(time unit of the intervals); a sequence is averaged
        by Bayesian model averaging (see :class:`DynamicRateFilter`). Default (None):
        unit-free, c/√m_i averaged over c in (0, 0.01, 0.03, 0.1, 0.3, 1), m_i page
        i's median crawl interval (rounded to 1/8 of an octave), so that the same
        default serves pages crawled hourly or monthly, in any unit of time.
    prior : GammaPrior, LogNormalPrior or BetaPrimePrior, optional
        Prior on Δ at the first crawl; default ``LogNormalPrior(0, 3)``. A
        BetaPrimePrior needs the crawl rate (the history's, or ``crawl_rate``).
    grid : int or array_like, optional
        Lattice (see :class:`DynamicRateFilter`); default 200 nodes.
    smooth : bool, default True
        Also run the backward pass (about twice the work; per page, memory
        O(S · k · G) while it runs).
    levels : sequence of float, default (0.5, 0.9)
        Equal-tailed credible bands reported.
    mask : array_like of bool, optional
        The mask of padded arrays, if not in ``history``.
    crawl_rate : float or array_like, optional
        p, for a prior on Δ/p with padded arrays.

    Returns
    -------
    arviz.InferenceData
        Dims ``page`` and ``crawl`` (``crawl`` only for a one-page history),
        ``quantile`` and ``sigma``:

        With the default ``sigma``, the ``sigma`` coordinate holds the unit-free c
        (σ per √(typical interval)) and ``constant_data`` holds ``typical_interval``
        (page), the m_i used (rounded).

        - ``posterior``: ``filtered_mean``, ``filtered_quantiles`` (page, crawl,
          quantile) and, with ``smooth``, ``smoothed_mean``, ``smoothed_quantiles``:
          posterior summaries of Δ_{t_k} (per time unit); ``sigma_weights`` (page,
          crawl, sigma): P(σ | I_1..I_k); ``sigma_weights_final`` (page, sigma);
          ``log_evidence`` (page, sigma): log p(I_1..I_K | σ).
        - ``predictions``: ``change_probability`` (page, crawl), the one-step
          predictive P(I_k = 1 | I_1..I_{k−1}, τ_k), formed before crawl k.
        - ``observed_data`` (``changed``), ``constant_data`` (``intervals``,
          ``mask``).

        ``posterior.attrs`` hold ``quantile_levels`` (the probabilities of the
        quantile coordinate), ``levels``, ``sigmas``, the prior and the lattice. At
        masked crawls the summaries are NaN (no crawl there).

    Raises
    ------
    TypeError
        For a history of the wrong type, a mask that is not boolean, bad option types.
    ValueError
        For shapes that differ, indicators other than 0/1, intervals not > 0, bad σ,
        levels outside (0, 1), a bad grid, a prior the default grid cannot hold (see
        :class:`DynamicRateFilter`), or a crawl impossible at every lattice node (the
        message names the page: widen ``grid``).

    Notes
    -----
    With σ = 0 the filtered posterior after crawl k is the static posterior
    p(Δ | I_1..I_k) ∝ π(Δ) Π_j P(I_j | Δ, τ_j) of
    ``posterior(method="grid")`` evaluated at the lattice nodes. Pages run in parallel
    (numba ``prange``), each page's crawls in sequence.

    References
    ----------
    Avrachenkov, Patil & Thoppe, "Online algorithms for estimating change rates of web
    pages", Section 3.1. S. Särkkä, *Bayesian Filtering and Smoothing*, Cambridge
    University Press 2013, Sections 4.2 and 8.1 (filtering and smoothing equations).

    Examples
    --------
    >>> import numpy as np
    >>> from changerate_bayes import CrawlHistory, dynamic_posterior
    >>> h = CrawlHistory([[1, 0, 1, 1], [0, 0, 0, 1]], intervals=np.full((2, 4), 2.0))
    >>> idata = dynamic_posterior(h, sigma=0.1)
    >>> idata.posterior["smoothed_mean"].dims
    ('page', 'crawl')
    >>> idata.predictions["change_probability"].shape
    (2, 4)
    """
    changed, tau, m, n_pages, p_hist = _inputs(history, mask)
    if not isinstance(smooth, (bool, np.bool_)):
        raise TypeError(f"`smooth` must be a bool; got {type(smooth).__name__}")
    unit_free = sigma is None
    sigmas = check_sigmas(UNIT_FREE_SIGMAS if unit_free else sigma)
    lv = _check_levels(levels)
    probs = np.array(sorted({round((1 - v) / 2, 12) for v in lv} | {0.5} | {round((1 + v) / 2, 12) for v in lv}))
    p = p_hist if crawl_rate is None else as_float_array(crawl_rate, name="crawl_rate", positive=True, ndim=(0, 1))
    n = changed.shape[0]
    prior = check_prior(prior, p)
    lat = make_lattice(grid, prior, p, n)
    k = changed.shape[1]
    out = {
        "pred": np.empty((n, k)),
        "f_mean": np.empty((n, k)),
        "f_q": np.empty((n, k, probs.size)),
        # the smoothed summaries are only written (and only allocated) when smoothing
        "s_mean": np.full((n, k), np.nan) if smooth else np.empty((n, 0)),
        "s_q": np.full((n, k, probs.size), np.nan) if smooth else np.empty((n, 0, 0)),
        "wpath": np.empty((n, k, sigmas.size)),
        "log_ev": np.empty((n, sigmas.size)),
        "status": np.zeros(n, dtype=np.int8),
    }
    changed_c = np.ascontiguousarray(changed)
    tau_c = np.ascontiguousarray(tau, dtype=np.float64)
    m_c = np.ascontiguousarray(m, dtype=bool)
    import numba  # imported on first use, with the kernels

    from . import _kernels  # numba kernels: loaded on first use, nothing compiled at import

    keys = ("pred", "f_mean", "f_q", "s_mean", "s_q", "wpath", "log_ev", "status")
    typical = rounded_intervals(typical_intervals(tau_c, m_c)) if unit_free else None
    # pages that share their volatilities: all of them, or (unit-free) those whose typical
    # intervals round to the same value, each group run on its own rows
    groups = unit_free_groups(typical, sigmas) if typical is not None else [(None, sigmas)]  # None: not unit_free
    for rows, sig in groups:
        n_rows = n if rows is None else rows.size
        # pages in chunks of bounded work: Ctrl-C is acted on between chunks
        for a, b in page_chunks(n_rows, sig.size * k * lat.u.size * (2 if smooth else 1)):
            sel = slice(a, b) if rows is None else rows[a:b]
            w0 = lat.prior_weights(1) if np.ndim(lat.log_prior) == 1 else _block_prior(lat, sel)  # (1, G): shared
            bufs = [out[key][sel] for key in keys]  # views for a slice, copies for an index array
            with numba.parallel_chunksize(1):  # blocks of pages handed out one at a time (load balance)
                _kernels.batch_filter(
                    w0,
                    changed_c[sel],
                    tau_c[sel],
                    m_c[sel],
                    lat.rates,
                    float(lat.u[0]),
                    lat.h,
                    np.ascontiguousarray(sig),
                    probs,
                    bool(smooth),
                    *bufs,
                )
            if rows is not None:
                for key, buf in zip(keys, bufs):
                    out[key][sel] = buf
    if out["status"].any():
        i = int(np.flatnonzero(out["status"])[0])
        raise ValueError(
            f"page {i}: a crawl has probability 0 at every lattice node "
            f"[{lat.rates[0]:.3g}, {lat.rates[-1]:.3g}]: widen `grid`"
        )
    return _to_idata(out, changed, tau, m, n_pages, probs, lv, sigmas, prior, lat, smooth, typical)


def _block_prior(lat, sel):
    lp = lat.log_prior[sel]
    w = np.exp(lp - lp.max(axis=1, keepdims=True))
    return np.ascontiguousarray(w / w.sum(axis=1, keepdims=True))


def _to_idata(out, changed, tau, m, n_pages, probs, levels, sigmas, prior, lat, smooth, typical):
    single = n_pages is None

    def pc(a):  # drop the page axis of a one-page history
        return a[0] if single else a

    pdims = () if single else ("page",)
    post = {
        "filtered_mean": (pc(out["f_mean"]), pdims + ("crawl",)),
        "filtered_quantiles": (pc(out["f_q"]), pdims + ("crawl", "quantile")),
        "sigma_weights": (pc(out["wpath"]), pdims + ("crawl", "sigma")),
        "sigma_weights_final": (pc(_final_weights(out["log_ev"])), pdims + ("sigma",)),
        "log_evidence": (pc(out["log_ev"]), pdims + ("sigma",)),
    }
    if smooth:
        post["smoothed_mean"] = (pc(out["s_mean"]), pdims + ("crawl",))
        post["smoothed_quantiles"] = (pc(out["s_q"]), pdims + ("crawl", "quantile"))
    coords = {"crawl": np.arange(changed.shape[1]), "quantile": probs, "sigma": sigmas}
    if not single:
        coords["page"] = np.arange(changed.shape[0])
    attrs = {
        "method": "dynamic",
        "prior": repr(prior),
        "levels": list(levels),
        "quantile_levels": probs.tolist(),
        "sigmas": sigmas.tolist(),
        "grid_size": int(lat.u.size),
        "grid_low": float(lat.rates[0]),
        "grid_high": float(lat.rates[-1]),
        "smoothed": bool(smooth),
        "unit_free_sigma": typical is not None,
    }
    dd = pdims + ("crawl",)
    const = {"intervals": (pc(np.where(m, tau, np.nan)), dd), "mask": (pc(m), dd)}
    if typical is not None:
        const["typical_interval"] = (pc(typical), pdims)
    return make_summary_data(
        {
            "posterior": post,
            "predictions": {"change_probability": (pc(out["pred"]), dd)},
            "observed_data": {"changed": (pc(changed.astype(np.int8)), dd)},
            "constant_data": const,
        },
        coords=coords,
        attrs=attrs,
    )


def _final_weights(log_ev):
    z = log_ev - log_ev.max(axis=1, keepdims=True)
    w = np.exp(z)
    return w / w.sum(axis=1, keepdims=True)
