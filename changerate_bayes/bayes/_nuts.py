"""NUTS through PyMC: models compiled once, reused with new data.

A :class:`ReusableModel` wraps a PyMC model whose data (crawl indicators, intervals,
prior coefficients) are ``pm.Data`` containers. It is compiled on first use — by
nutpie when it can be imported (``sampler="nutpie"``), else for PyMC's own NUTS — and
cached by structure (model kind, number of pages), so a study that fits hundreds of
data sets compiles once and only swaps data (``CompiledModel.with_data`` /
``pm.set_data``).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from .._upstream import quiet_nutpie_compile
from .._validation import check_open_unit, check_positive_int
from . import _arviz
from ._likelihood import pt_sparse_log_likelihood

__all__ = [
    "ReusableModel",
    "get_model",
    "resolve_sampler",
    "page_model",
    "pt_log_prior",
    "SAMPLERS",
    "MIN_TUNE",
    "check_nuts_tune",
    "check_target_accept",
]

SAMPLERS = ("auto", "nutpie", "pymc")
#: Fewest NUTS warm-up draws per chain. nutpie's warm-up (nuts-rs ``GlobalStrategy``)
#: asserts ``floor(0.3·tune) < tune``, so tune = 0 aborts the process with a Rust
#: panic (``PanicException`` is not an ``Exception``); its final step-size window is
#: ``floor(0.15·tune)`` draws, empty below 7, and its first mass-matrix update comes
#: after 10 draws. Measured on the one-page model (20 seeds, 200 draws): divergent
#: chains at tune <= 7 with nutpie and <= 6 with PyMC's sampler, none from 8 on.
MIN_TUNE = 10


def check_nuts_tune(tune, *, what: str = "method 'nuts'") -> int:
    """``tune`` as an int after checking it is >= ``MIN_TUNE`` (ValueError/TypeError naming it)."""
    tune = check_positive_int(tune, name="tune", minimum=0)
    if tune < MIN_TUNE:
        raise ValueError(
            f"`tune` must be >= {MIN_TUNE} for {what} (fewer warm-up draws cannot adapt the NUTS step "
            f"size: nutpie aborts at 0 and most transitions diverge below ~8); got {tune}"
        )
    return tune


def check_target_accept(target_accept) -> float:
    """``target_accept`` as a float in (0, 1): TypeError for a non-real, ValueError out of range."""
    return check_open_unit(target_accept, name="target_accept")


#: compiled models kept per process (least recently used dropped first)
CACHE_SIZE = 8
_CACHE: OrderedDict = OrderedDict()


def _nutpie_importable() -> bool:
    try:
        import nutpie  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_sampler(sampler: str) -> str:
    """``"nutpie"`` if requested or importable (``"auto"``), else ``"pymc"``."""
    if sampler == "auto":
        return "nutpie" if _nutpie_importable() else "pymc"
    if sampler == "nutpie" and not _nutpie_importable():
        raise ValueError("`nuts_sampler` 'nutpie' was requested but nutpie cannot be imported")
    return sampler


class ReusableModel:
    """A PyMC model compiled once and sampled with new data many times.

    Parameters
    ----------
    build : callable
        ``build() -> pymc.Model`` with ``pm.Data`` containers for everything that
        changes between fits.
    sampler : {"nutpie", "pymc"}
    var_names : list of str
        Posterior variables to return.
    """

    def __init__(self, build: Callable, *, sampler: str, var_names):
        self.sampler = sampler
        self.var_names = list(var_names)
        self.model = build()
        self._compiled = None
        if sampler == "nutpie":
            import nutpie  # nutpie: heavy, loaded on first use

            with quiet_nutpie_compile():
                self._compiled = nutpie.compile_pymc_model(self.model)

    def sample(self, data: dict, *, draws: int, tune: int, chains: int, seed: int, init=None, target_accept=0.8):
        """Sample with ``data`` (name -> array); returns (posterior dict, sample_stats)."""
        cores = max(1, min(chains, os.cpu_count() or 1))
        if self.sampler == "nutpie":
            import nutpie  # nutpie: heavy, loaded on first use

            assert self._compiled is not None  # compiled in __init__ for nutpie
            with quiet_nutpie_compile():
                compiled = self._compiled.with_data(**data)
                idata = nutpie.sample(
                    compiled,
                    draws=draws,
                    tune=tune,
                    chains=chains,
                    cores=cores,
                    seed=seed,
                    progress_bar=False,
                    save_warmup=False,
                    init_mean=None if init is None else np.asarray(init, dtype=np.float64).ravel(),
                    target_accept=target_accept,
                )
        else:
            import pymc as pm  # PyMC: heavy, loaded on first use

            with self.model:
                pm.set_data(data)
                initvals = None if init is None else {"log_change_rate": np.asarray(init)}
                idata = pm.sample(
                    draws=draws,
                    tune=tune,
                    chains=chains,
                    cores=1,
                    random_seed=seed,
                    progressbar=False,
                    compute_convergence_checks=False,
                    initvals=initvals,
                    target_accept=target_accept,
                )
        return _arviz.from_sampler(idata, var_names=self.var_names)


def get_model(key: tuple, build: Callable, *, sampler: str, var_names) -> ReusableModel:
    """The cached :class:`ReusableModel` for ``key`` (built and compiled on first use).

    At most :data:`CACHE_SIZE` compiled models are kept; the least recently used goes.
    """
    full_key = (*key, sampler)
    if full_key in _CACHE:
        _CACHE.move_to_end(full_key)
    else:
        _CACHE[full_key] = ReusableModel(build, sampler=sampler, var_names=var_names)
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return _CACHE[full_key]


def likelihood_data(n_pages: int) -> dict:
    """``pm.Data`` containers of the sparse exact likelihood (see ``sparse_data``)."""
    import pymc as pm  # PyMC: heavy, loaded on first use

    return {
        "t0": pm.Data("t0", np.ones(n_pages)),
        "tau1": pm.Data("tau1", np.ones(1)),
        "page1": pm.Data("page1", np.zeros(1, dtype=np.int64)),
    }


#: prior coefficients used by each prior family (see ``_priors``)
FAMILY_COEFFICIENTS = {"gamma": "AB", "lognormal": "CM", "betaprime": "AEL"}


def pt_log_prior(u, coef: dict, family: str):
    """Log prior density of u = log Δ (up to a constant) from coefficient tensors."""
    import pytensor.tensor as pt  # PyTensor: heavy, loaded on first use

    if family == "gamma":
        return coef["A"] * u - coef["B"] * pt.exp(u)
    if family == "lognormal":
        return -coef["C"] * (u - coef["M"]) ** 2
    return coef["A"] * u - coef["E"] * pt.softplus(u - coef["L"])


def page_model(n_pages: int, family: str):
    """PyMC model of independent pages: exact likelihood, prior by coefficients.

    Free variable ``log_change_rate`` (u = log Δ, flat, shape (n_pages,)); the prior
    of the ``family`` enters through its coefficients (Gamma: A·u − B·e^u;
    log-normal: −C·(u − M)²; beta-prime: A·u − E·log(1 + e^{u−L}); see ``_priors``),
    the likelihood as Σ I log(1 − e^{−e^u τ}) − (1 − I) e^u τ, written sparsely: the
    data containers are ``t0``, ``tau1``, ``page1`` (any number of crawls per page).
    One compiled model per (family, n_pages) serves every prior of the family.
    """
    import pymc as pm  # PyMC: heavy, loaded on first use
    import pytensor.tensor as pt  # PyTensor: heavy, loaded on first use

    with pm.Model(coords={"page": np.arange(n_pages)}) as model:
        data = likelihood_data(n_pages)
        coef = {c: pm.Data(f"prior_{c}", np.zeros(n_pages)) for c in FAMILY_COEFFICIENTS[family]}
        u = pm.Flat("log_change_rate", dims="page")
        pm.Potential("log_prior", pt.sum(pt_log_prior(u, coef, family)))
        pm.Potential("log_likelihood", pt_sparse_log_likelihood(u, **data))
        pm.Deterministic("change_rate", pt.exp(u), dims="page")
    return model
