"""Optimal crawl rates under a global budget and per-host politeness caps (Kolobov et al. 2019)."""

from __future__ import annotations

import numbers
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["CappedCrawlRates", "check_hosts", "check_host_budgets", "equal_split", "solve_capped"]

_KERNELS: dict = {}


def _kernels() -> dict:
    """The numba kernels, compiled (or loaded from numba's cache) on first call."""
    if not _KERNELS:
        from . import _host_caps_kernels as k

        _KERNELS.update(
            binary=k.binary_hosts_kernel,
            harmonic=k.harmonic_hosts_kernel,
            group=k.group_pages,
            gather=k.gather,
            scatter=k.scatter,
            prices=k.top_prices,
            free=k.free_pages,
        )
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
    """The host of every page as a code 0..H-1, and the H distinct host labels.

    Parameters
    ----------
    hosts : array_like
        One hashable label per page (strings or numbers), of shape ``shape``.
    shape : tuple of int
        The shape of the pages' arrays (the change rates').

    Returns
    -------
    codes : ndarray of int64, shape (N,)
        The code of each page's host (raveled), 0..H-1, in the order of ``labels``.
    labels : ndarray, shape (H,)
        The distinct labels, sorted when they can be ordered (else in order of first appearance).

    Raises
    ------
    ValueError
        If ``hosts`` is not of shape ``shape`` or holds None or NaN.
    TypeError
        If the labels are not hashable.

    Examples
    --------
    >>> codes, labels = check_hosts(["b.org", "a.org", "b.org"], (3,))
    >>> codes.tolist(), labels.tolist()
    ([1, 0, 1], ['a.org', 'b.org'])
    """
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
    if flat.dtype.kind in "iu" and flat.size:
        lo, hi = int(flat.min()), int(flat.max())
        if hi - lo <= 2 * flat.size + 1024:  # small integer labels: a table instead of a hash
            shifted = (flat - lo).astype(np.int64, copy=False)
            present = np.zeros(hi - lo + 1, dtype=bool)
            present[shifted] = True
            rank = np.cumsum(present, dtype=np.int64) - 1
            return rank[shifted], (np.flatnonzero(present) + lo).astype(flat.dtype)
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
    """The cap of every host, in the order of ``labels`` (inf where uncapped).

    Parameters
    ----------
    host_budgets : float, mapping label -> float (a dict or a pandas Series), or None
        One cap for every host, or a cap per host label, in crawls per unit time of the
        budget (> 0 and finite). Hosts a mapping lacks are not capped, or, for a
        :class:`collections.defaultdict`, take its default (``default_factory()``): a
        default cap with per-host exceptions. Labels without pages are ignored. None: no caps.
    labels : ndarray, shape (H,)
        The distinct host labels (as :func:`check_hosts` gives them).

    Returns
    -------
    ndarray of float64, shape (H,)

    Raises
    ------
    ValueError
        If a cap is not > 0 and finite (naming the host).
    TypeError
        If a cap is not a real number, or ``host_budgets`` is a sequence.

    Examples
    --------
    >>> from collections import defaultdict
    >>> labels = np.array(["a.org", "b.org", "c.org"])
    >>> check_host_budgets({"b.org": 10.0}, labels).tolist()
    [inf, 10.0, inf]
    >>> check_host_budgets(defaultdict(lambda: 50.0, {"b.org": 10.0}), labels).tolist()
    [50.0, 10.0, 50.0]
    """
    n_hosts = labels.size
    if host_budgets is None:
        return np.full(n_hosts, np.inf)
    if isinstance(host_budgets, pd.Series):  # a mapping: its index -> its values
        host_budgets = host_budgets.to_dict()
    if isinstance(host_budgets, Mapping):
        default = np.inf
        if isinstance(host_budgets, defaultdict) and host_budgets.default_factory is not None:
            default = _check_cap(host_budgets.default_factory(), "host_budgets' default")
        caps = np.full(n_hosts, default)
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
        raise TypeError(
            "`host_budgets` must be one number for every host or a mapping host label -> cap; "
            f"got a sequence of shape {np.shape(host_budgets)}"
        )
    return np.full(n_hosts, _check_cap(host_budgets, "host_budgets"))


def _marginal_log(p, d, w, objective):
    """log of the marginal value per unit crawl rate, f_i'(p_i), for p_i > 0 and w_i Δ_i > 0."""
    with np.errstate(divide="ignore"):
        if objective == "binary_freshness":  # w Δ/(p + Δ)²
            return np.log(w) + np.log(d) - 2.0 * np.log(p + d)
        return np.log(w) + np.log(d) - np.log(p) - np.log(p + d)  # w Δ/(p (p + Δ))


def _price_at_top(p, d, w, objective) -> float:
    """log of the multiplier read at the largest positive rate (fewest rounding errors); -inf if none."""
    if p.size == 0:
        return -np.inf
    i = int(np.argmax(p))  # d, w: only p's entry i is read
    if not (p[i] > 0 and d[i] > 0 and w[i] > 0):
        return -np.inf
    return float(_marginal_log(p[i : i + 1], d[i : i + 1], w[i : i + 1], objective)[0])


def _prices(log_lam: float, log_mu: np.ndarray) -> tuple[float, np.ndarray]:
    """λ and η = max(0, μ - λ) = λ expm1(log μ - log λ) from their logs (inf beyond the floats)."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        lam = float(np.exp(log_lam))
        gap = log_mu - log_lam if np.isfinite(log_lam) else np.full_like(log_mu, np.inf)
        eta = np.where(gap > 0, np.exp(log_lam + np.log(np.expm1(np.maximum(gap, 0.0)))), 0.0)
        eta = np.where(np.isfinite(log_lam), eta, np.exp(log_mu))
    return lam, np.where(np.isnan(eta), 0.0, eta)


def _solve_hosts(d, w, codes, caps, chosen, objective, fallback):
    """Rates of the pages of the ``chosen`` hosts, each host spending exactly its cap.

    Pages are grouped by host with one counting sort; the numba kernels then water-fill
    each group (selection + compensated KKT allocation for binary freshness, safeguarded
    Newton for harmonic staleness). Binary-freshness hosts the selection solver declines
    are solved together by the log-domain row solver ``fallback`` on a padded array.
    Returns (pages, rates, chosen hosts, their prices μ_h) with ``pages`` grouped by host.
    """
    k = _kernels()
    hosts_sel = np.flatnonzero(chosen)
    slot = np.full(caps.size, -1, dtype=np.int64)
    slot[hosts_sel] = np.arange(hosts_sel.size)
    pages, starts = k["group"](codes, slot, hosts_sel.size)
    dd = k["gather"](d, pages)
    wd = k["gather"](w, pages)
    cc = np.ascontiguousarray(caps[hosts_sel])
    out = np.zeros(pages.size)
    if objective == "binary_freshness":
        failed = np.zeros(hosts_sel.size, dtype=bool)
        k["binary"](dd, wd, starts, cc, out, failed)
        if failed.any():
            fh = np.flatnonzero(failed)
            counts = np.diff(starts)[fh]
            row = np.repeat(np.arange(fh.size), counts)
            col = np.arange(row.size) - np.repeat(np.cumsum(counts) - counts, counts)
            pos = col + np.repeat(starts[fh], counts)
            pad_d = np.zeros((fh.size, int(counts.max())))
            pad_w = np.zeros_like(pad_d)
            pad_d[row, col] = dd[pos]
            pad_w[row, col] = wd[pos]
            out[pos] = fallback(pad_d, pad_w, cc[fh])[row, col]
    else:
        k["harmonic"](dd, wd, starts, cc, out)
    prices = k["prices"](out, dd, wd, starts, objective != "binary_freshness")
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
    if not over.any():  # no cap binds: today's answer, unchanged
        return p0, _prices(_price_at_top(p0, d, w, objective), zeros)[0], zeros, over
    if not np.any((d > 0) & (w > 0)):  # objective constant: equal split, within the caps
        return _equal_split_capped(codes, caps, budget), 0.0, zeros, _equal_split_at_cap(codes, caps, budget)
    # a host with a positive rate in p0 has a page with w Δ > 0 ("active"); the exact
    # per-host test is needed only when those hosts alone cannot decide
    used = spend > 0
    if (used & np.isinf(caps)).any() or caps[used].sum() > budget:
        all_capped = False
    else:
        host_active = np.bincount(codes, weights=(d > 0) & (w > 0), minlength=n_hosts) > 0
        all_capped = np.isfinite(caps[host_active]).all() and caps[host_active].sum() <= budget
    if all_capped:
        # every host that matters is at its cap; the rest of B is not spent
        rates, log_lam, at_cap = np.zeros(d.size), -np.inf, np.isfinite(caps) & host_active
        pages, pr, hosts_sel, mu = _solve_hosts(d, w, codes, caps, at_cap, objective, fallback)
    else:
        sure = over  # at cap at the optimum: the price only falls from here
        guess = sure | _predicted_over(p0, d, codes, spend, caps, sure, objective)
        rates, log_lam, at_cap, exhausted = _grow(
            d, w, codes, caps, budget, used, guess, uncapped, objective, predict=True
        )
        pages, pr, hosts_sel, mu = _solve_hosts(d, w, codes, caps, at_cap, objective, fallback)
        if exhausted:  # Σ_{h∈K} c_h = B: λ is the lowest level among them, where G(λ) = B
            log_lam = float(mu.min())
        # KKT: every host held at its cap must be worth at least λ there (μ_h >= λ); the
        # guess beyond the sure hosts may have held one too many: start again from them
        if exhausted or np.any(mu < log_lam - 1e-12):
            rates, log_lam, at_cap, exhausted = _grow(d, w, codes, caps, budget, used, sure, uncapped, objective)
            pages, pr, hosts_sel, mu = _solve_hosts(d, w, codes, caps, at_cap, objective, fallback)
            if exhausted:
                log_lam = float(mu.min())
    _kernels()["scatter"](rates, pages, pr)
    eta = np.zeros(n_hosts)
    eta[hosts_sel] = _prices(log_lam, mu)[1]
    return rates, _prices(log_lam, zeros[:0])[0], eta, at_cap


def _predicted_over(p, d, codes, spend, caps, sure, objective):
    """Hosts expected to exceed their caps once the ``sure`` hosts are held at theirs.

    First-order prediction from the rates ``p`` of the pages (``d``, ``codes``) at the
    current price: at the relative price drop x, page i gains x g_i with
    g_i = -λ dp_i/dλ (binary: (p_i + Δ_i)/2 where p_i > 0; harmonic:
    p_i (p_i + Δ_i)/(2 p_i + Δ_i)), and x is set so that the other hosts absorb the
    excess of the sure hosts over their caps. Only a guess: the KKT check of
    :func:`solve_capped` decides.
    """
    dd, cc = d, codes
    with np.errstate(all="ignore"):
        if objective == "binary_freshness":
            g = np.where(p > 0, 0.5 * (p + dd), 0.0)
        else:
            g = p * ((p + dd) / (2.0 * p + dd))
        gain = np.bincount(cc, weights=g, minlength=caps.size)
        excess = np.sum(spend[sure] - caps[sure])
        x = excess / gain[~sure].sum()
        if not (np.isfinite(x) and x > 0):
            return np.zeros(caps.size, dtype=bool)
        return (spend + x * gain > caps) & ~sure


def _grow(d, w, codes, caps, budget, used, at_cap, uncapped, objective, *, predict=False):
    """Grow the set of hosts at cap from ``at_cap`` until no free host exceeds its cap.

    Returns (rates with the free pages filled in, log λ, the set, exhausted). While the
    set holds only hosts at cap at the optimum, the price of the free pages only falls
    from one round to the next, so every host that joins is at cap at the optimum too.
    ``used`` marks the hosts known to hold a page with w Δ > 0. With ``predict``, each
    round also holds the hosts :func:`_predicted_over` expects to exceed their caps next
    (a guess, to be checked).
    """
    n_hosts = caps.size
    rates = np.zeros(d.size)
    while True:
        free, df, wf, cf = _kernels()["free"](codes, at_cap, d, w)
        left = budget - caps[at_cap].sum()
        if not (left > 0 and ((used & ~at_cap).any() or np.any((df > 0) & (wf > 0)))):
            return rates, -np.inf, at_cap, left <= 0  # exhausted: the caps at hand use B (a tie)
        pf = uncapped(df, wf, left)
        spend = np.bincount(cf, weights=pf, minlength=n_hosts)
        grown = (spend > caps) & ~at_cap
        if not grown.any():  # the KKT point: pf are the free pages' rates
            _kernels()["scatter"](rates, free, pf)
            return rates, _price_at_top(pf, df, wf, objective), at_cap, False
        if predict:
            grown |= _predicted_over(pf, df, cf, spend, caps, grown, objective) & ~at_cap
        at_cap = at_cap | grown


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


def equal_split(codes: np.ndarray, caps: np.ndarray, budget: float) -> tuple[np.ndarray, np.ndarray]:
    """Equal crawl rates within per-host caps (round robin under politeness).

    The water level ℓ with Σ_h min(c_h, n_h ℓ) = B: every page crawls at min(ℓ, c_h/n_h),
    n_h the pages of host h. If Σ_h c_h <= B, every host is at its cap and the rest of the
    budget is not spent.

    Parameters
    ----------
    codes : ndarray of int64, shape (N,)
        The host of each page, 0..H-1, every host with a page (:func:`check_hosts`).
    caps : ndarray of float64, shape (H,)
        The cap of each host, inf where uncapped (:func:`check_host_budgets`).
    budget : float
        B > 0, crawls per unit time over all pages.

    Returns
    -------
    rates : ndarray of float64, shape (N,)
        Each page's crawl rate, per unit time of ``budget``.
    at_cap : ndarray of bool, shape (H,)
        Whether each host is held at its cap (c_h/n_h <= ℓ).

    Examples
    --------
    >>> rates, at_cap = equal_split(np.array([0, 0, 0, 1]), np.array([1.0, np.inf]), 4.0)
    >>> rates.tolist(), at_cap.tolist()  # host 0: 1/3 each; host 1 takes the other 3
    ([0.3333333333333333, 0.3333333333333333, 0.3333333333333333, 3.0], [True, False])
    """
    return _equal_split_capped(codes, caps, budget), _equal_split_at_cap(codes, caps, budget)
