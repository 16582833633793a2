"""Sampler diagnostics as data, with named thresholds."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _arviz

__all__ = ["SamplerDiagnostics", "sampler_diagnostics", "R_HAT_MAX", "ESS_MIN_PER_CHAIN", "MAX_DIVERGENCES"]

#: Largest acceptable rank-normalised split R-hat (Vehtari et al. 2021, Sec. 4).
R_HAT_MAX = 1.01
#: Smallest acceptable bulk and tail ESS per chain (Vehtari et al. 2021: 100 per chain,
#: i.e. 400 for four chains).
ESS_MIN_PER_CHAIN = 100
#: Largest acceptable number of divergent transitions after warm-up.
MAX_DIVERGENCES = 0


@dataclass(frozen=True)
class SamplerDiagnostics:
    """Convergence diagnostics of posterior draws.

    Attributes
    ----------
    r_hat, ess_bulk, ess_tail : ndarray, shape (n_values,)
        Rank-normalised split R-hat, bulk and tail effective sample sizes (ArviZ) of
        every checked scalar (pages, hyperparameters).
    r_hat_max, ess_bulk_min, ess_tail_min : float
        Worst value.
    n_divergences : int
        Divergent transitions after warm-up (0 for exact i.i.d. draws).
    n_chains, n_draws : int
        Chains and draws per chain.
    r_hat_threshold, ess_threshold, max_divergences : float
        The thresholds applied: :data:`R_HAT_MAX`, :data:`ESS_MIN_PER_CHAIN` × chains,
        :data:`MAX_DIVERGENCES`.
    problems : tuple of str
        One sentence per failed check (empty when all pass).

    References
    ----------
    Vehtari, Gelman, Simpson, Carpenter, Bürkner (2021), "Rank-normalization, folding,
    and localization: an improved R-hat for assessing convergence of MCMC",
    Bayesian Analysis 16(2).
    """

    r_hat: np.ndarray
    ess_bulk: np.ndarray
    ess_tail: np.ndarray
    n_divergences: int
    n_chains: int
    n_draws: int
    r_hat_threshold: float = R_HAT_MAX
    ess_threshold: float = field(default=0.0)
    max_divergences: int = MAX_DIVERGENCES

    @property
    def r_hat_max(self) -> float:
        return float(np.max(self.r_hat))

    @property
    def ess_bulk_min(self) -> float:
        return float(np.min(self.ess_bulk))

    @property
    def ess_tail_min(self) -> float:
        return float(np.min(self.ess_tail))

    @property
    def problems(self) -> tuple[str, ...]:
        out = []
        if not self.r_hat_max <= self.r_hat_threshold:
            out.append(f"R-hat {self.r_hat_max:.3f} > {self.r_hat_threshold}")
        if not self.ess_bulk_min >= self.ess_threshold:
            out.append(f"bulk ESS {self.ess_bulk_min:.0f} < {self.ess_threshold:.0f}")
        if not self.ess_tail_min >= self.ess_threshold:
            out.append(f"tail ESS {self.ess_tail_min:.0f} < {self.ess_threshold:.0f}")
        if self.n_divergences > self.max_divergences:
            out.append(f"{self.n_divergences} divergent transitions > {self.max_divergences}")
        return tuple(out)

    @property
    def ok(self) -> bool:
        """True when every check passes."""
        return not self.problems

    def to_record(self) -> dict:
        """Flat JSON-able summary (worst values and thresholds)."""
        return {
            "r_hat_max": self.r_hat_max,
            "ess_bulk_min": self.ess_bulk_min,
            "ess_tail_min": self.ess_tail_min,
            "n_divergences": int(self.n_divergences),
            "n_chains": int(self.n_chains),
            "n_draws": int(self.n_draws),
            "r_hat_threshold": self.r_hat_threshold,
            "ess_threshold": self.ess_threshold,
            "max_divergences": self.max_divergences,
            "ok": self.ok,
        }


def sampler_diagnostics(idata, var_names=None) -> SamplerDiagnostics:
    """R-hat, bulk/tail ESS and divergences of a posterior from this package.

    Parameters
    ----------
    idata : arviz.InferenceData
        As returned by :func:`posterior` or :func:`pooled_posterior`.
    var_names : str or list of str, optional
        Posterior variables to check; default all of them (for a pooled posterior:
        the change rates and the population hyperparameters).

    Returns
    -------
    SamplerDiagnostics
        With the thresholds :data:`R_HAT_MAX` = 1.01, ESS >= 100 per chain
        (:data:`ESS_MIN_PER_CHAIN`) and :data:`MAX_DIVERGENCES` = 0; ``r_hat``,
        ``ess_bulk``, ``ess_tail`` hold the values of every checked scalar (all pages
        and variables, flattened in ``var_names`` order).

    Examples
    --------
    >>> from changerate_bayes import GammaPrior, posterior, sampler_diagnostics
    >>> from changerate_bayes import simulate_history
    >>> h = simulate_history(2.0, 1.0, 30, rng=3)
    >>> idata = posterior(h, prior=GammaPrior(2.0, 1.0), method="grid", draws=500, rng=3)
    >>> d = sampler_diagnostics(idata)
    >>> d.n_divergences, d.ok
    (0, True)
    """
    if var_names is None:
        var_names = list(idata.posterior.data_vars)
    elif isinstance(var_names, str):
        var_names = [var_names]
    n_chains, n_draws = (int(idata.posterior.sizes[d]) for d in ("chain", "draw"))
    div = _arviz.sample_stat(idata, "diverging")
    cat = lambda f: np.concatenate([np.ravel(f(v)) for v in var_names])  # noqa: E731
    return SamplerDiagnostics(
        r_hat=cat(lambda v: _arviz.rhat(idata, v)),
        ess_bulk=cat(lambda v: _arviz.ess(idata, v, "bulk")),
        ess_tail=cat(lambda v: _arviz.ess(idata, v, "tail")),
        n_divergences=0 if div is None else int(np.sum(div)),
        n_chains=n_chains,
        n_draws=n_draws,
        ess_threshold=float(ESS_MIN_PER_CHAIN * n_chains),
    )
