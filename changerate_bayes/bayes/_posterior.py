"""``posterior()``: the posterior of a page's change rate Δ, three ways."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from scipy import special

from .._rng import as_generator
from .._validation import StatisticalWarning, check_choice, check_positive_int
from ..history import CrawlHistory
from . import _arviz
from ._conjugate import conjugate_posterior_draws
from ._diagnostics import sampler_diagnostics
from ._grid import DEFAULT_GRID_SIZE, _mode, improper_pages
from ._grid_fast import grid_posterior_draws
from ._nuts import (
    FAMILY_COEFFICIENTS,
    SAMPLERS,
    check_nuts_tune,
    check_target_accept,
    get_model,
    page_model,
    resolve_sampler,
)
from ._priors import BetaPrimePrior, Prior
from ._sufficient import change_counts, crawl_rates, data_groups, exact_likelihood, time_rescaling

__all__ = ["posterior", "METHODS", "DEFAULT_PRIOR"]

METHODS = ("nuts", "grid", "conjugate")
#: Used when ``prior`` is None: μ = Δ/(Δ+p) ~ Beta(1, 2), prior mean of Δ equal to p.
DEFAULT_PRIOR = BetaPrimePrior(1.0, 2.0)


def _check_prior(prior, history: CrawlHistory) -> Prior:
    if prior is None:
        if history.crawl_rate is None:
            raise ValueError(
                "`prior` is required when the history has no crawl_rate (the default "
                "BetaPrimePrior(1, 2) is a prior on Δ/p): pass e.g. GammaPrior(shape, rate) "
                "in the time unit of the intervals"
            )
        return DEFAULT_PRIOR
    if not isinstance(prior, Prior):
        raise TypeError(f"`prior` must be a GammaPrior, LogNormalPrior or BetaPrimePrior; got {type(prior).__name__}")
    if prior.needs_crawl_rate and history.crawl_rate is None:
        raise ValueError(f"`prior` {prior!r} is a prior on Δ/p: the history needs a crawl_rate")
    return prior


def refuse_improper(mask: np.ndarray, prior: Prior, history: CrawlHistory) -> None:
    """ValueError naming the first page whose posterior is improper."""
    if mask.any():
        where = "" if history.n_pages is None else f" of page {int(np.flatnonzero(mask)[0])}"
        raise ValueError(
            f"the posterior is improper: prior {prior!r} is improper near Δ = 0 and no crawl"
            f"{where} saw a change, so nothing in the data makes it integrable; use a "
            "proper prior (e.g. BetaPrimePrior with a > 0)"
        )


def posterior(
    history,
    *,
    prior=None,
    method: str = "nuts",
    draws: int = 1000,
    chains: int = 4,
    tune: int = 1000,
    rng=None,
    grid_size: int = DEFAULT_GRID_SIZE,
    nuts_sampler: str = "auto",
    target_accept: float = 0.8,
):
    """Posterior of the change rate Δ of one page or of many pages independently.

    Parameters
    ----------
    history : CrawlHistory
        Indicators I_k of shape (k,) or (n_pages, k), or a ragged history (pages with
        different numbers of crawls, :meth:`CrawlHistory.from_segments`), which every
        method takes at the same cost per crawl. ``"nuts"`` and ``"grid"`` need
        its ``intervals`` τ_k (the time unit of τ is the unit of Δ: τ in hours gives Δ
        per hour); ``"conjugate"`` needs its ``crawl_rate`` p and ignores τ.
    prior : GammaPrior, LogNormalPrior or BetaPrimePrior, optional
        Prior on Δ (Gamma, log-normal) or on Δ/p (beta-prime). Default
        ``BetaPrimePrior(1, 2)``, i.e. μ = Δ/(Δ+p) ~ Beta(1, 2) (prior mean of Δ equal
        to p); it needs the history's crawl rate. ``"conjugate"`` accepts only
        ``BetaPrimePrior``.
    method : {"nuts", "grid", "conjugate"}, default "nuts"
        ``"nuts"``: PyMC model of the exact likelihood sampled in log Δ (nutpie when
        installed); pages are independent parameters of one model.
        ``"grid"``: exact 1-D quadrature in log Δ per page, i.i.d. draws by inverse
        CDF; a compiled kernel (numba, pages in parallel on all cores; compiled on
        first use, then loaded from numba's on-disk cache) that reads each page's
        crawls from the flat history, so memory is the draws plus O(block).
        ``"conjugate"``: closed form under Poisson crawling with τ marginalised; draws
        p·G_α/G_β filled block by block (one generator per block of pages, spawned
        from ``rng``), the same whatever the number of threads.
    draws : int, default 1000
        Draws per chain.
    chains : int, default 4
        Chains (for ``"grid"`` and ``"conjugate"`` the draws are i.i.d. and merely
        arranged as chains × draws). Memory: 8 × chains × draws × n_pages bytes.
    tune : int, default 1000
        NUTS warm-up iterations per chain (``"nuts"`` only), at least 10: with
        fewer, the warm-up cannot adapt the step size (nutpie aborts at 0 and, like
        PyMC's sampler, lets most transitions diverge below ~8).
    rng : int, numpy.random.Generator or None
        Seed; the same seed gives the same draws.
    grid_size : int, default 64
        Quadrature nodes per page (``"grid"`` only).
    nuts_sampler : {"auto", "nutpie", "pymc"}, default "auto"
        ``"auto"`` uses nutpie when it can be imported, else PyMC's NUTS.
    target_accept : float, default 0.8
        NUTS target acceptance rate.

    Returns
    -------
    arviz.InferenceData
        ``posterior["change_rate"]`` with dims (chain, draw) for a 1-D history or
        (chain, draw, page); ``observed_data["changed"]``, ``constant_data`` with
        ``intervals`` and/or ``crawl_rate`` (a ragged history padded after each
        page's last crawl with I = 0 and τ = 0, and ``constant_data["observed"]``
        marking the real crawls); ``posterior.attrs`` with ``method`` and
        ``prior``. For ``"nuts"``, ``sample_stats`` (with ``diverging``) and the
        summary of :func:`sampler_diagnostics` in ``sample_stats.attrs``.

    Raises
    ------
    TypeError
        If ``history`` is not a CrawlHistory, ``prior`` not a prior, or an integer
        option is not an integer.
    ValueError
        For an unknown ``method`` or ``nuts_sampler``; ``tune`` < 10 with ``"nuts"``;
        missing intervals (grid, nuts)
        or crawl rate (conjugate, beta-prime prior); a non-beta-prime prior with
        ``"conjugate"``; non-positive sizes; an improper prior (BetaPrimePrior with
        a = 0) on a page that never saw a change (improper posterior); for
        ``"conjugate"``, a page whose posterior puts probability above 1e-9 beyond the
        largest float64 (draws would overflow to ``inf``; e.g. crawl_rate 1.7e308).

    Warns
    -----
    StatisticalWarning
        When NUTS draws fail a diagnostic threshold (R-hat, ESS, divergences).

    Notes
    -----
    Likelihood given the intervals: P(I_j = 1 | τ_j) = 1 − e^{−Δτ_j}, so
    log L = Σ I_j log(1 − e^{−Δτ_j}) − Δ Σ (1 − I_j) τ_j (log1mexp keeps it finite for
    Δτ from 1e-300 to 1e300). Without τ, under Poisson crawling, I_j ~ Bernoulli(Δ/(Δ+p))
    and Δ/p ~ BetaPrime(a + Î_k, b + k − Î_k) a posteriori. Pages whose intervals sum
    beyond the float64 range are handled in a time unit rescaled by a power of two
    (exact), so ``"grid"`` and ``"nuts"`` return their finite answer.

    References
    ----------
    Paper "Online estimators of change rates", Section 2 (setting), Section 3.1
    (E[I | τ] = 1 − e^{−Δτ}) and eq. (4).

    Examples
    --------
    >>> from changerate_bayes import CrawlHistory, GammaPrior, posterior
    >>> h = CrawlHistory([1, 0, 1, 1, 0], intervals=[0.5, 0.3, 1.2, 0.8, 0.4], crawl_rate=2.0)
    >>> idata = posterior(h, prior=GammaPrior(2.0, 1.0), method="grid", draws=2000, chains=2, rng=0)
    >>> idata.posterior["change_rate"].dims
    ('chain', 'draw')
    >>> round(float(idata.posterior["change_rate"].mean()), 1)  # exact posterior mean 1.97 per unit time
    2.0
    """
    opts = _check_args(history, prior, method, draws, chains, tune, grid_size, nuts_sampler, target_accept)
    prior, gen = opts["prior"], as_generator(rng)
    fits: dict[str, Callable[..., tuple]] = {"conjugate": _fit_conjugate, "grid": _fit_grid, "nuts": _fit_nuts}
    fit = fits[opts["method"]]
    values, attrs, stats = fit(history, prior, gen, **opts["sizes"])
    if history.n_pages is None:
        values = values[..., 0]
    idata = _arviz.make_inference_data(
        {"change_rate": values},
        n_pages=history.n_pages,
        attrs={"method": opts["method"], "prior": repr(prior), **attrs},
        sample_stats=stats,
        **data_groups(history),
    )
    if opts["method"] == "nuts":
        _record_diagnostics(idata)
    return idata


def _check_args(history, prior, method, draws, chains, tune, grid_size, nuts_sampler, target_accept) -> dict:
    """Validate the arguments of :func:`posterior` (types first, then values)."""
    if not isinstance(history, CrawlHistory):
        raise TypeError(f"`history` must be a CrawlHistory; got {type(history).__name__}")
    method = check_choice(method, name="method", choices=METHODS)
    sizes = {
        "draws": check_positive_int(draws, name="draws"),
        "chains": check_positive_int(chains, name="chains"),
        "tune": _check_tune(tune, method),
        "grid_size": check_positive_int(grid_size, name="grid_size", minimum=8),
        "nuts_sampler": check_choice(nuts_sampler, name="nuts_sampler", choices=SAMPLERS),
        "target_accept": check_target_accept(target_accept),
    }
    if method == "conjugate":  # before the prior: no prior can stand in for the missing crawl rate
        history.crawl_rate_column(method="conjugate")  # ValueError without a crawl rate
    prior = _check_prior(prior, history)
    if method == "conjugate":
        _check_conjugate(history, prior)
    elif history.flat_intervals is None:
        history.require_intervals(method=method)  # ValueError without intervals
    return {"method": method, "prior": prior, "sizes": sizes}


def _check_conjugate(history: CrawlHistory, prior: Prior) -> None:
    """ValueError unless the history has a crawl rate and the prior is beta-prime."""
    history.crawl_rate_column(method="conjugate")  # ValueError without a crawl rate
    if not isinstance(prior, BetaPrimePrior):
        raise ValueError(
            "`prior` must be a BetaPrimePrior for method 'conjugate' (the Beta prior on "
            f"Δ/(Δ+p) is conjugate to the indicators); got {prior!r}"
        )


def _check_tune(tune, method: str) -> int:
    tune = check_positive_int(tune, name="tune", minimum=0)
    return check_nuts_tune(tune) if method == "nuts" else tune


def _fit_conjugate(history, prior, gen, *, draws, chains, **_):
    n_changed, n_crawls = change_counts(history)
    refuse_improper((prior.a + n_changed) <= 0, prior, history)
    p = crawl_rates(history)
    refuse_overflow(prior.a + n_changed, prior.b + n_crawls - n_changed, p, history)
    out = conjugate_posterior_draws(prior.a, prior.b, n_changed, n_crawls, p, n_draws=chains * draws, rng=gen)
    return out.reshape(chains, draws, n_changed.size), {}, None


#: posterior(method="conjugate") refuses a page whose draws exceed the largest double with this probability
OVERFLOW_PROBABILITY = 1e-9


def refuse_overflow(post_a, post_b, p, history) -> None:
    """ValueError naming the first page whose draws of p·BetaPrime(α, β) would overflow float64.

    P(p X > max double) = P(X > t) = I_{1/(1+t)}(β, α) with t = max/p; above
    :data:`OVERFLOW_PROBABILITY` the draws could not represent the posterior (they
    would hold ``inf``). Pages whose Markov bound α/((β − 1) t) is 100× below that
    probability are not evaluated (their tail is below it).
    """
    big = np.finfo(np.float64).max
    post_a, post_b = np.broadcast_arrays(post_a, post_b, p)[:2]
    tail = np.zeros(post_a.shape)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        t = big / p
        # Markov: P(X > t) <= E[X]/t = α/((β − 1) t) when β > 1; the regularised beta
        # function only where that bound is not already 100× below the threshold
        markov = np.where(post_b > 1.0, post_a / ((post_b - 1.0) * t), np.inf)
        need = ~(markov <= OVERFLOW_PROBABILITY / 100.0)
        tail[need] = special.betainc(post_b[need], post_a[need], 1.0 / (1.0 + np.broadcast_to(t, need.shape)[need]))
    bad = tail > OVERFLOW_PROBABILITY
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        where = "" if history.n_pages is None else f" of page {i}"
        raise ValueError(
            f"the conjugate posterior{where} puts probability {tail[i]:.3g} above the largest float64 "
            f"({big:.3g}): its draws would overflow to inf (crawl_rate {p[i]:.4g} per unit time); express "
            "the rates in a larger time unit, or use posterior_summary (exact, no draws)"
        )


class _Counts:
    """What :func:`improper_pages` needs of a likelihood: changes and crawls per page."""

    def __init__(self, n_changed, n_crawls):
        self.n_changed, self._n_crawls = n_changed, n_crawls

    def right_tail_finite(self):
        return self.n_changed < self._n_crawls


def _exact_setup(history, prior):
    coef = prior.coefficients(crawl_rates(history)).as_arrays(history.lengths.size)
    tau, coef, shift = time_rescaling(history, coef)
    lik = exact_likelihood(history, tau)
    refuse_improper(improper_pages(lik, coef), prior, history)
    return lik, coef, shift


def _fit_grid(history, prior, gen, *, draws, chains, grid_size, **_):
    n_changed, n_crawls = change_counts(history)
    n = n_changed.size
    coef = prior.coefficients(crawl_rates(history)).as_arrays(n)
    refuse_improper(improper_pages(_Counts(n_changed, n_crawls), coef), prior, history)
    tau, coef, shift = time_rescaling(history, coef)
    out = grid_posterior_draws(
        history.flat_changed, tau, history.offsets, coef, n_draws=chains * draws, rng=gen, size=grid_size, shift=shift
    )
    return out.reshape(chains, draws, n), {"grid_size": grid_size}, None


def _fit_nuts(history, prior, gen, *, draws, chains, tune, nuts_sampler, target_accept, **_):
    lik, coef, shift = _exact_setup(history, prior)
    n, family = lik.n_pages, prior.family
    sampler = resolve_sampler(nuts_sampler)
    model = get_model(("pages", family, n), lambda: page_model(n, family), sampler=sampler, var_names=["change_rate"])
    data = {"t0": lik.t0, "tau1": lik._tau, "page1": lik._page}
    data.update({f"prior_{c}": coef[c] for c in FAMILY_COEFFICIENTS[family]})
    post, stats = model.sample(
        data,
        draws=draws,
        tune=tune,
        chains=chains,
        seed=int(gen.integers(0, 2**31 - 1)),
        init=_mode(lik, coef),
        target_accept=target_accept,
    )
    rate = post["change_rate"] if shift is None else post["change_rate"] * np.exp(-shift)
    return rate, {"sampler": sampler, "tune": tune}, stats


def _record_diagnostics(idata) -> None:
    """Store the NUTS diagnostics summary in ``sample_stats.attrs``; warn when a check fails."""
    diag = sampler_diagnostics(idata)
    idata.sample_stats.attrs.update({k: v for k, v in diag.to_record().items() if v is not None})
    if not diag.ok:
        warnings.warn(
            "NUTS diagnostics failed: " + "; ".join(diag.problems) + " (see sampler_diagnostics)",
            StatisticalWarning,
            stacklevel=3,
        )
