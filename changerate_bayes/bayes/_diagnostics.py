"""Sampler diagnostics as data, with named thresholds."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _arviz

__all__ = [
    "SamplerDiagnostics",
    "sampler_diagnostics",
    "R_HAT_MAX",
    "ESS_MIN_PER_CHAIN",
    "MAX_DIVERGENCES",
    "MIN_CHAINS_R_HAT",
    "MIN_DRAWS",
]

#: Largest acceptable rank-normalised split R-hat (Vehtari et al. 2021, Sec. 4).
R_HAT_MAX = 1.01
#: Smallest acceptable bulk and tail ESS per chain (Vehtari et al. 2021: 100 per chain,
#: i.e. 400 for four chains).
ESS_MIN_PER_CHAIN = 100
#: Largest acceptable number of divergent transitions after warm-up.
MAX_DIVERGENCES = 0


#: fewest chains for R-hat (it compares chains) and fewest draws per chain for R-hat and ESS
MIN_CHAINS_R_HAT = 2
MIN_DRAWS = 4


@dataclass(frozen=True)
class SamplerDiagnostics:
    """Convergence diagnostics of posterior draws.

    Attributes
    ----------
    r_hat : ndarray, shape (n_values,), or None
        Rank-normalised split R-hat (ArviZ) of every checked scalar (pages,
        hyperparameters); None when it cannot be computed (fewer than 2 chains or 4
        draws per chain).
    ess_bulk, ess_tail : ndarray, shape (n_values,), or None
        Bulk and tail effective sample sizes; None with fewer than 4 draws per chain.
    r_hat_max, ess_bulk_min, ess_tail_min : float or None
        Worst value (None when not available, see ``problems``).
    n_divergences : int
        Divergent transitions after warm-up (0 for exact i.i.d. draws).
    n_chains, n_draws : int
        Chains and draws per chain.
    r_hat_threshold, ess_threshold, max_divergences : float
        The thresholds applied: :data:`R_HAT_MAX`, :data:`ESS_MIN_PER_CHAIN` × chains,
        :data:`MAX_DIVERGENCES`.
    problems : tuple of str
        One sentence per failed or impossible check (empty when all pass). With one
        chain R-hat cannot be computed, so convergence is not established: "R-hat
        needs ≥ 2 chains".

    References
    ----------
    Vehtari, Gelman, Simpson, Carpenter, Bürkner (2021), "Rank-normalization, folding,
    and localization: an improved R-hat for assessing convergence of MCMC",
    Bayesian Analysis 16(2).
    """

    r_hat: np.ndarray | None
    ess_bulk: np.ndarray | None
    ess_tail: np.ndarray | None
    n_divergences: int
    n_chains: int
    n_draws: int
    r_hat_threshold: float = R_HAT_MAX
    ess_threshold: float = field(default=0.0)
    max_divergences: int = MAX_DIVERGENCES

    @staticmethod
    def _worst(values, fn):
        if values is None or np.isnan(values).any():
            return None
        return float(fn(values))

    @property
    def r_hat_max(self) -> float | None:
        return self._worst(self.r_hat, np.max)

    @property
    def ess_bulk_min(self) -> float | None:
        return self._worst(self.ess_bulk, np.min)

    @property
    def ess_tail_min(self) -> float | None:
        return self._worst(self.ess_tail, np.min)

    @property
    def problems(self) -> tuple[str, ...]:
        out = []
        if self.r_hat is None:
            if self.n_chains < MIN_CHAINS_R_HAT:
                out.append(f"R-hat needs ≥ {MIN_CHAINS_R_HAT} chains (got {self.n_chains}): convergence not checked")
            else:
                out.append(f"R-hat needs ≥ {MIN_DRAWS} draws per chain (got {self.n_draws})")
        elif self.r_hat_max is None:
            out.append(f"R-hat undefined for {int(np.isnan(self.r_hat).sum())} value(s) (constant draws)")
        elif not self.r_hat_max <= self.r_hat_threshold:
            out.append(f"R-hat {self.r_hat_max:.3f} > {self.r_hat_threshold}")
        ess = (("bulk", self.ess_bulk, self.ess_bulk_min), ("tail", self.ess_tail, self.ess_tail_min))
        for label, values, worst in ess:
            if values is None:
                out.append(f"{label} ESS needs ≥ {MIN_DRAWS} draws per chain (got {self.n_draws})")
            elif worst is None:
                out.append(f"{label} ESS undefined for {int(np.isnan(values).sum())} value(s) (constant draws)")
            elif not worst >= self.ess_threshold:
                out.append(f"{label} ESS {worst:.0f} < {self.ess_threshold:.0f}")
        if self.n_divergences > self.max_divergences:
            out.append(f"{self.n_divergences} divergent transitions > {self.max_divergences}")
        return tuple(out)

    @property
    def ok(self) -> bool:
        """True when every check passes."""
        return not self.problems

    def to_record(self) -> dict:
        """Flat JSON-able summary (worst values and thresholds; None where not available)."""
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


def _check_var_names(var_names, available: list[str]) -> list[str]:
    if var_names is None:
        return available
    if isinstance(var_names, str):
        var_names = [var_names]
    elif not isinstance(var_names, (list, tuple)) or not all(isinstance(v, str) for v in var_names):
        raise TypeError(f"`var_names` must be a str or a list of str; got {var_names!r}")
    missing = [v for v in var_names if v not in available]
    if missing or not var_names:
        raise ValueError(f"`var_names` must name posterior variables {available}; got {list(var_names)!r}")
    return list(var_names)


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
        and variables, flattened in ``var_names`` order). With one chain ``r_hat`` is
        None and ``problems`` says "R-hat needs ≥ 2 chains".

    Raises
    ------
    TypeError
        If ``idata`` is not an ``arviz.InferenceData`` or ``var_names`` is not a str
        or a list of str.
    ValueError
        If ``idata`` has no (chain, draw) posterior group or ``var_names`` names a
        variable it does not have.

    Examples
    --------
    >>> from changerate_bayes import GammaPrior, posterior, sampler_diagnostics
    >>> from changerate_bayes import simulate_history
    >>> h = simulate_history(2.0, 1.0, 30, rng=3)
    >>> idata = posterior(h, prior=GammaPrior(2.0, 1.0), method="grid", draws=500, rng=3)
    >>> d = sampler_diagnostics(idata)
    >>> d.n_divergences, d.ok
    (0, True)
    >>> one = posterior(h, prior=GammaPrior(2.0, 1.0), method="grid", draws=500, chains=1, rng=3)
    >>> sampler_diagnostics(one).problems[0]
    'R-hat needs ≥ 2 chains (got 1): convergence not checked'
    """
    _arviz.check_inference_data(idata)
    var_names = _check_var_names(var_names, _arviz.posterior_names(idata))
    n_chains, n_draws = (int(idata.posterior.sizes[d]) for d in ("chain", "draw"))
    div = _arviz.sample_stat(idata, "diverging")
    cat = lambda f: np.concatenate([np.ravel(f(v)) for v in var_names])  # noqa: E731
    enough_draws = n_draws >= MIN_DRAWS
    return SamplerDiagnostics(
        r_hat=cat(lambda v: _arviz.rhat(idata, v)) if enough_draws and n_chains >= MIN_CHAINS_R_HAT else None,
        ess_bulk=cat(lambda v: _arviz.ess(idata, v, "bulk")) if enough_draws else None,
        ess_tail=cat(lambda v: _arviz.ess(idata, v, "tail")) if enough_draws else None,
        n_divergences=0 if div is None else int(np.sum(div)),
        n_chains=n_chains,
        n_draws=n_draws,
        ess_threshold=float(ESS_MIN_PER_CHAIN * n_chains),
    )
