"""Optimal crawl rates under a global budget and per-host politeness caps (Kolobov et al. 2019)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["CappedCrawlRates", "check_hosts", "check_host_budgets", "solve_capped"]

_KERNELS: dict = {}


def _kernels() -> dict:
    """The numba kernels, compiled (or loaded from numba's cache) on first call."""
    if not _KERNELS:
        from . import _host_caps_kernels as k

        _KERNELS.update(binary=k.binary_hosts_kernel, harmonic=k.harmonic_hosts_kernel)
    return _KERNELS


@dataclass(frozen=True)
class CappedCrawlRates:
    """Optimal crawl rates under a budget and per-host caps, with their multipliers.

    Attributes
    ----------
    rates : ndarray of float64, shape of ``change_rates``
        The optimal crawl rates p_i >= 0, crawls per unit time.
    price : float
        λ >= 0, the multiplier of the global budget: the marginal value of one more crawl
        per unit time (freshness, or staleness avoided, per crawl). 0 when the budget
        cannot be spent (every host that matters is at its cap) or nothing can be gained.
    host_prices : ndarray of float64, shape (H,)
        η_h >= 0, the multiplier of host h's cap; 0 unless the host is at its cap. A page
        on host h is priced at λ + η_h.
    at_cap : ndarray of bool, shape (H,)
        Whether host h is held at its cap (η_h may still be 0 when the cap binds exactly).
    hosts : ndarray, shape (H,)
        The distinct host labels, in the order of ``host_prices`` and ``at_cap`` (sorted
        when the labels can be sorted, else in order of first appearance).
    """

    rates: np.ndarray
    price: float
    host_prices: np.ndarray
    at_cap: np.ndarray
    hosts: np.ndarray


def check_hosts(hosts, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Host codes (int64, raveled, 0..H-1) and the distinct labels of ``hosts``."""
    if isinstance(hosts, (pd.Series, pd.Index, pd.Categorical)):
        arr = np.asarray(hosts, dtype=object) if isinstance(hosts, pd.Categorical) else hosts.to_numpy()
    else:
        try:
            arr = np.asarray(hosts)
        except ValueError:
            raise ValueError(f"`hosts` must be one label per page, shape {shape}; got a ragged sequence") from None
    if arr.shape != shape:
        raise ValueError(f"`hosts` must be one label per page, of the shape of `change_rates` {shape}; got {arr.shape}")
    flat = arr.ravel()
    if flat.dtype.kind == "f" or flat.dtype == object:
        missing = pd.isna(flat)
        if np.any(missing):
            bad = np.flatnonzero(missing)[0]
            raise ValueError(f"`hosts` must not hold None or NaN; got {flat[bad]!r} at index {bad}")
    if flat.dtype.kind not in "biufUSO":
        raise TypeError(f"`hosts` must hold hashable labels (strings or numbers); got dtype {flat.dtype}")
    try:
        codes, labels = pd.factorize(flat, sort=True)
    except TypeError:  # labels of mixed types that cannot be ordered
        try:
            codes, labels = pd.factorize(flat, sort=False)
        except TypeError as err:
            raise TypeError(f"`hosts` must hold hashable labels; {err}") from None
    return codes.astype(np.int64, copy=False), np.asarray(labels)


def _check_cap(value, name: str) -> float:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a real number; got {type(value).__name__}")
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(f"`{name}` must be a finite number > 0; got an integer too large for a float") from None
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"`{name}` must be a finite number > 0; got {value}")
    return value


def check_host_budgets(host_budgets, labels: np.ndarray) -> np.ndarray:
    """Cap per host (inf where uncapped), in the order of ``labels``."""
    n_hosts = labels.size
    if host_budgets is None:
        return np.full(n_hosts, np.inf)
    if isinstance(host_budgets, Mapping):
        caps = np.full(n_hosts, np.inf)
        if not host_budgets:
            return caps
        keys = list(host_budgets.keys())
        values = np.array([_check_cap(host_budgets[k], f"host_budgets[{k!r}]") for k in keys])
        try:
            pos = pd.Index(labels).get_indexer(pd.Index(keys, tupleize_cols=False))
        except TypeError as err:
            raise TypeError(f"`host_budgets` keys must be host labels; {err}") from None
        known = pos >= 0  # labels without pages are ignored
        caps[pos[known]] = values[known]
        return caps
    if isinstance(host_budgets, (np.ndarray, list, tuple)) and np.ndim(host_budgets) > 0:
        raise TypeError("`host_budgets` must be one number for every host or a mapping host label -> cap; "
                        f"got a sequence of shape {np.shape(host_budgets)}")
    return np.full(n_hosts, _check_cap(host_budgets, "host_budgets"))


def _marginal_log(p, d, w, objective):
    """log of the marginal value per unit crawl rate, f_i'(p_i), for p_i > 0 and w_i Δ_i > 0."""
    with np.errstate(divide="ignore"):
        if objective == "binary_freshness":  # w Δ/(p + Δ)²
            return np.log(w) + np.log(d) - 2.0 * np.log(p + d)
        return np.log(w) + np.log(d) - np.log(p) - np.log(p + d)  # w Δ/(p (p + Δ))


def _price_at_top(p, d, w, objective) -> float:
    """The multiplier read at the largest positive rate (fewest rounding errors); 0 if none."""
    if p.size == 0:
        return 0.0
    i = int(np.argmax(p))
    if not (p[i] > 0 and d[i] > 0 and w[i] > 0):
        return 0.0
    return float(np.exp(_marginal_log(p[i:i + 1], d[i:i + 1], w[i:i + 1], objective)[0]))


def _host_prices(p, d, w, starts, objective) -> np.ndarray:
    """Per host segment [starts[h], starts[h+1]) the multiplier at its largest rate."""
    n_hosts = starts.size - 1
    out = np.zeros(n_hosts)
    if n_hosts == 0:
        return out
    counts = np.diff(starts)
    nonempty = counts > 0
    top = np.zeros(n_hosts)
    top[nonempty] = np.maximum.reduceat(p, starts[:-1][nonempty])
    is_top = p == np.repeat(top, counts)
    first = np.flatnonzero(is_top)
    at = first[np.searchsorted(first, starts[:-1][nonempty])]
    ok = (p[at] > 0) & (d[at] > 0) & (w[at] > 0)
    vals = np.zeros(at.size)
    vals[ok] = np.exp(_marginal_log(p[at[ok]], d[at[ok]], w[at[ok]], objective))
    out[nonempty] = vals
    return out


def _solve_hosts(d, w, codes, caps, chosen, objective, fallback):
    """Rates of the pages of the ``chosen`` hosts, each host spending exactly its cap.

    Pages are grouped by host with one stable sort; the numba kernels then water-fill
    each group (selection + compensated KKT allocation for binary freshness, safeguarded
    Newton for harmonic staleness). Binary-freshness hosts the selection solver declines
    are solved together by the log-domain row solver ``fallback`` on a padded array.
    Returns (pages, rates, host_prices_at_their_level) with ``pages`` sorted by host.
    """
    sel = np.flatnonzero(chosen[codes])
    order = np.argsort(codes[sel], kind="stable")
    pages = sel[order]
    host_of = codes[pages]
    hosts_sel = np.flatnonzero(chosen)
    counts = np.bincount(host_of, minlength=caps.size)[hosts_sel]
    starts = np.zeros(hosts_sel.size + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    dd = np.ascontiguousarray(d[pages])
    wd = np.ascontiguousarray(w[pages])
    cc = np.ascontiguousarray(caps[hosts_sel])
    out = np.zeros(pages.size)
    if objective == "binary_freshness":
        failed = np.zeros(hosts_sel.size, dtype=bool)
        _kernels()["binary"](dd, wd, starts, cc, out, failed)
        if failed.any():
            fh = np.flatnonzero(failed)
            width = int(counts[fh].max())
            pad_d = np.zeros((fh.size, width))
            pad_w = np.zeros((fh.size, width))
            row = np.repeat(np.arange(fh.size), counts[fh])
            col = np.arange(row.size) - np.repeat(np.cumsum(counts[fh]) - counts[fh], counts[fh])
            pos = col + np.repeat(starts[fh], counts[fh])
            pad_d[row, col] = dd[pos]
            pad_w[row, col] = wd[pos]
            out[pos] = fallback(pad_d, pad_w, cc[fh])[row, col]
    else:
        _kernels()["harmonic"](dd, wd, starts, cc, out)
    prices = _host_prices(out, dd, wd, starts, objective)
    return pages, out, hosts_sel, prices


def solve_capped(d, w, codes, caps, budget, objective, uncapped, fallback) -> tuple:
    """Exact optimum under Σ p <= B and Σ_{i∈h} p_i <= c_h (all arrays raveled).

    ``uncapped(d, w, B)`` is today's solver; ``fallback`` the row-wise binary-freshness
    solver. Returns (rates, λ, η, at_cap). See :func:`capped_crawl_rates` for the method.
    """
    n_hosts = caps.size
    p0 = uncapped(d, w, budget)
    spend = np.bincount(codes, weights=p0, minlength=n_hosts)
    over = spend > caps
    zeros = np.zeros(n_hosts)
    active = (d > 0) & (w > 0)
    if not over.any():  # no cap binds: today's answer, unchanged
        return p0, _price_at_top(p0, d, w, objective), zeros, over
    if not active.any():  # objective constant: equal split, within the caps
        return _equal_split_capped(codes, caps, budget), 0.0, zeros, _equal_split_at_cap(codes, caps, budget)
    host_active = np.bincount(codes, weights=active, minlength=n_hosts) > 0
    capped = np.isfinite(caps) & host_active
    if not (host_active & ~capped).any() and caps[capped].sum() <= budget:
        at_cap = capped  # every host that matters is at its cap; the rest of B is not spent
    else:
        at_cap = over & host_active
        while True:  # the set at cap only grows, the price of the free pages only falls
            free = ~at_cap[codes]
            left = budget - caps[at_cap].sum()
            if not (left > 0 and (active & free).any()):
                break
            pf = uncapped(d[free], w[free], left)
            grown = (np.bincount(codes[free], weights=pf, minlength=n_hosts) > caps) & ~at_cap
            if not grown.any():
                break
            at_cap = at_cap | grown
    rates = np.zeros(d.size)
    free = ~at_cap[codes]
    left = budget - caps[at_cap].sum()
    price = 0.0
    if left > 0 and (active & free).any():
        idx = np.flatnonzero(free)
        rates[idx] = uncapped(d[idx], w[idx], left)
        price = _price_at_top(rates[idx], d[idx], w[idx], objective)
    eta = np.zeros(n_hosts)
    if at_cap.any():
        pages, pr, hosts_sel, mu = _solve_hosts(d, w, codes, caps, at_cap, objective, fallback)
        rates[pages] = pr
        eta[hosts_sel] = np.maximum(mu - price, 0.0)
    return rates, price, eta, at_cap


def _equal_split_level(codes, caps, budget):
    """Per-page level ℓ with Σ_h min(c_h, n_h ℓ) = B (inf if Σ c_h <= B)."""
    n = np.bincount(codes, minlength=caps.size).astype(np.float64)
    v = caps / n  # the level at which host h reaches its cap
    order = np.argsort(v)
    vs, ns, cs = v[order], n[order], caps[order]
    # spend at level vs[k]: Σ_{j<k} c_j + vs[k] Σ_{j>=k} n_j
    cap_before = np.concatenate([[0.0], np.cumsum(np.where(np.isfinite(cs), cs, 0.0))[:-1]])
    n_after = np.cumsum(ns[::-1])[::-1]
    at = cap_before + vs * n_after
    k = int(np.searchsorted(at, budget, side="left"))  # first host not at its cap
    if k >= vs.size:
        return np.inf
    return (budget - cap_before[k]) / n_after[k]


def _equal_split_capped(codes, caps, budget):
    level = _equal_split_level(codes, caps, budget)
    n = np.bincount(codes, minlength=caps.size)
    return np.minimum(level, caps / n)[codes]


def _equal_split_at_cap(codes, caps, budget):
    level = _equal_split_level(codes, caps, budget)
    n = np.bincount(codes, minlength=caps.size)
    return caps / n <= level
