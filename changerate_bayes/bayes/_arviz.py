"""The one place that knows ArviZ's API (0.x: ``InferenceData`` built on xarray).

Every other module builds and reads posteriors through these helpers, so a move to
ArviZ 1.x (``xarray.DataTree``) changes this file only.
"""

from __future__ import annotations

import contextlib
import logging

import numpy as np

__all__ = [
    "make_inference_data",
    "draws_of",
    "sample_stat",
    "rhat",
    "ess",
    "mcse_mean",
    "hdi",
    "check_inference_data",
    "posterior_names",
    "make_summary_data",
]


def make_inference_data(
    posterior: dict[str, np.ndarray],
    *,
    n_pages: int | None,
    attrs: dict,
    unpaged=(),
    sample_stats=None,
    observed_data: dict | None = None,
    constant_data: dict | None = None,
):
    """Build the ``InferenceData`` returned by every posterior of this package.

    Parameters
    ----------
    posterior : dict of name -> ndarray
        Draws of shape (chain, draw) or (chain, draw, page).
    n_pages : int or None
        Number of pages (``page`` dimension) or None for one page.
    attrs : dict
        Stored on the groups (method, prior, sampler...).
    unpaged : iterable of str
        Posterior variables without a page dimension (population hyperparameters).
    sample_stats : dict of name -> ndarray (chain, draw), or xarray.Dataset, optional
    observed_data, constant_data : dict of name -> (ndarray, tuple of dim names), optional
        Crawl data with their dims (e.g. ``("page", "crawl")``).
    """
    import arviz as az  # ArviZ: heavy, loaded on first use
    import xarray as xr  # xarray (with ArviZ): heavy, loaded on first use

    dims, post = {}, {}
    for name, values in posterior.items():
        post[name] = np.asarray(values)
        dims[name] = ["page"] if (n_pages is not None and name not in unpaged) else []
    coords = {"page": np.arange(n_pages)} if n_pages is not None else {}
    stats_dict = sample_stats if isinstance(sample_stats, dict) else None
    idata = az.from_dict(posterior=post, sample_stats=stats_dict, coords=coords, dims=dims, attrs=attrs)
    extra = {}
    if isinstance(sample_stats, xr.Dataset):
        extra["sample_stats"] = sample_stats
    for group, content in (("observed_data", observed_data), ("constant_data", constant_data)):
        if content:
            data_coords = {"page": np.arange(n_pages)} if n_pages is not None else {}
            extra[group] = xr.Dataset(
                {name: (dims_, np.asarray(values)) for name, (values, dims_) in content.items()},
                coords=data_coords,
            )
    if extra:
        idata.add_groups(extra)
    idata.posterior.attrs.update(attrs)
    return idata


def make_summary_data(groups: dict[str, dict], *, coords: dict, attrs: dict):
    """An ``InferenceData`` of posterior summaries (no chain/draw dims).

    Parameters
    ----------
    groups : dict of group name -> dict of name -> (ndarray, tuple of dim names)
        Standard ArviZ group names (``posterior``, ``predictions``, ``observed_data``,
        ``constant_data``...).
    coords : dict of dim name -> coordinate values
        Only the dims a group uses are attached to it.
    attrs : dict
        Stored on every group.
    """
    import arviz as az  # ArviZ: heavy, loaded on first use
    import xarray as xr  # xarray (with ArviZ): heavy, loaded on first use

    datasets = {}
    for group, content in groups.items():
        used = {d for _, dims_ in content.values() for d in dims_}
        ds = xr.Dataset(
            {name: (dims_, np.asarray(values)) for name, (values, dims_) in content.items()},
            coords={d: v for d, v in coords.items() if d in used},
        )
        ds.attrs.update(attrs)
        datasets[group] = ds
    # arviz takes the groups as keyword Datasets; its stub types only the named keywords (attrs, ...)
    return az.InferenceData(**datasets)  # type: ignore[arg-type]


def draws_of(idata, var: str = "change_rate") -> np.ndarray:
    """Posterior draws of ``var`` as an array (chain, draw[, page])."""
    return np.asarray(idata.posterior[var].values)


def sample_stat(idata, name: str):
    """A sample statistic (chain, draw) as an array, or None if absent."""
    if not hasattr(idata, "sample_stats") or name not in idata.sample_stats:
        return None
    return np.asarray(idata.sample_stats[name].values)


@contextlib.contextmanager
def _quiet():
    """Silence ArviZ's own logger (e.g. "Shape validation failed") while its statistics run.

    ArviZ 0.x logs through a private ``arviz._log``; this package reports what those
    lines say as data (see ``sampler_diagnostics``), so they are not shown to the user.
    """
    import arviz as az  # ArviZ: heavy, loaded on first use

    log = getattr(az, "_log", None) or logging.getLogger("arviz")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def check_inference_data(idata, *, name: str = "idata") -> None:
    """TypeError unless ``idata`` is an InferenceData; ValueError without a (chain, draw) posterior group."""
    import arviz as az  # ArviZ: heavy, loaded on first use

    if not isinstance(idata, az.InferenceData):
        raise TypeError(
            f"`{name}` must be an arviz.InferenceData as returned by posterior() or pooled_posterior(); "
            f"got {type(idata).__name__}"
        )
    if not hasattr(idata, "posterior") or not {"chain", "draw"} <= set(idata.posterior.sizes):
        raise ValueError(f"`{name}` must have a posterior group with dims (chain, draw, ...)")


def posterior_names(idata) -> list[str]:
    """Names of the posterior variables."""
    return list(idata.posterior.data_vars)


def rhat(idata, var: str = "change_rate") -> np.ndarray:
    """Rank-normalised split R-hat (Vehtari et al. 2021), shape () or (n_pages,); needs >= 2 chains."""
    import arviz as az  # ArviZ: heavy, loaded on first use

    with _quiet():
        return np.asarray(az.rhat(idata, var_names=[var])[var].values)


def ess(idata, var: str = "change_rate", method: str = "bulk") -> np.ndarray:
    """Bulk or tail effective sample size, shape () or (n_pages,)."""
    import arviz as az  # ArviZ: heavy, loaded on first use

    with _quiet():
        return np.asarray(az.ess(idata, var_names=[var], method=method)[var].values)


def mcse_mean(idata, var: str = "change_rate") -> np.ndarray:
    """Monte Carlo standard error of the posterior mean, shape () or (n_pages,)."""
    import arviz as az  # ArviZ: heavy, loaded on first use

    with _quiet():
        return np.asarray(az.mcse(idata, var_names=[var], method="mean")[var].values)


def hdi(draws: np.ndarray, prob: float) -> np.ndarray:
    """Highest-density interval of 1-D draws (any shape, flattened): array [low, high]."""
    import arviz as az  # ArviZ: heavy, loaded on first use

    with _quiet():
        return np.asarray(az.hdi(np.ravel(draws), hdi_prob=prob))


def from_sampler(idata, *, var_names):
    """Posterior arrays and sample statistics out of a sampler's InferenceData."""
    post = {name: np.asarray(idata.posterior[name].values) for name in var_names}
    stats = idata.sample_stats if hasattr(idata, "sample_stats") else None
    if stats is not None:
        keep = [v for v in stats.data_vars if stats[v].dims[:2] == ("chain", "draw") and stats[v].ndim == 2]
        stats = stats[keep]
        stats.attrs = {}
    return post, stats
