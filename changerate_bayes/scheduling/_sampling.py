"""Sampling-based change detection (Cho & Ntoulas 2002).

Sites hold pages; a fraction ρ_s of site s's pages changed since they were last
downloaded. Each download cycle has a budget of downloads. The sampling policies
download k random pages of every site first, then spend the rest on the sites whose
samples changed most (greedy) or in proportion to the changed samples (proportional).
The metric is ChangeRatio = (changed pages downloaded) / (pages downloaded).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from .._rng import as_generator
from .._validation import as_float_array, check_choice, check_positive_int
from ._closed_loop import _GridPosterior

__all__ = [
    "DETECTION_POLICIES",
    "allocate_downloads",
    "expected_change_ratio",
    "optimal_sample_size",
    "rule_of_thumb_sample_size",
    "ChangeDetectionResult",
    "simulate_change_detection",
]

#: Policies understood by :func:`simulate_change_detection`.
DETECTION_POLICIES = ("greedy", "proportional", "adaptive", "frequency", "round_robin", "oracle")


def _check_counts(x, *, name, ndim=(1,)):
    arr = as_float_array(x, name=name, nonnegative=True, ndim=ndim)
    if np.any(arr != np.round(arr)):
        bad = np.flatnonzero(arr != np.round(arr))[0]
        raise ValueError(f"`{name}` must hold whole numbers; got {arr[bad]} at index {bad}")
    return arr.astype(np.int64)


def _largest_remainder(quota, total):
    """Round non-negative ``quota`` (sum = total) to integers with the same sum."""
    base = np.floor(quota + 1e-9).astype(np.int64)
    short = int(total - base.sum())
    if short > 0:
        frac = quota - base
        base[np.argsort(-frac, kind="stable")[:short]] += 1
    return base


def allocate_downloads(sample_changes, sample_size, site_sizes, remaining, *, policy="greedy"):
    """Split the downloads left after sampling among sites (download stage).

    Parameters
    ----------
    sample_changes : array_like of int, shape (S,)
        Changed pages found in each site's sample.
    sample_size : int or array_like of int, shape (S,)
        Pages sampled (already downloaded) per site.
    site_sizes : array_like of int, shape (S,)
        Pages per site; a site can take at most size − sample more downloads.
    remaining : int
        Downloads left in the cycle after sampling, >= 0.
    policy : {"greedy", "proportional"}, default "greedy"
        ``"greedy"``: whole sites in decreasing order of sampled change fraction
        (ties: lower index first) until the budget runs out. ``"proportional"``:
        in proportion to the changed samples, capped by each site's capacity and
        redistributed (if no sample changed: in proportion to capacity); rounded by
        largest remainders.

    Returns
    -------
    ndarray of int, shape (S,)
        Additional downloads per site; they sum to min(remaining, total capacity).

    Raises
    ------
    ValueError
        Negative, fractional or mismatched counts; more changes than samples; samples
        larger than sites; unknown policy.

    References
    ----------
    J. Cho, A. Ntoulas, "Effective change detection using sampling", VLDB 2002
    (slides 11-14: sites A and B, 20 pages each, samples 4/5 and 1/5, 10 downloads left).

    Examples
    --------
    >>> from changerate_bayes.scheduling import allocate_downloads
    >>> allocate_downloads([4, 1], 5, [20, 20], 10).tolist()
    [10, 0]
    >>> allocate_downloads([4, 1], 5, [20, 20], 10, policy="proportional").tolist()
    [8, 2]
    """
    x = _check_counts(sample_changes, name="sample_changes")
    n = _check_counts(site_sizes, name="site_sizes")
    k = np.broadcast_to(_check_counts(sample_size, name="sample_size", ndim=(0, 1)), x.shape)
    if n.shape != x.shape:
        raise ValueError(f"`site_sizes` must have the shape of `sample_changes` {x.shape}; got {n.shape}")
    if np.any(x > k):
        raise ValueError("`sample_changes` must be <= `sample_size` at every site")
    if np.any(k > n):
        raise ValueError("`sample_size` must be <= `site_sizes` at every site")
    remaining = int(_check_counts(remaining, name="remaining", ndim=(0,)))
    policy = check_choice(policy, name="policy", choices=("greedy", "proportional"))
    cap = n - k
    total = min(remaining, int(cap.sum()))
    if policy == "greedy":
        frac = np.divide(x, k, out=np.zeros(x.shape), where=k > 0)
        order = np.lexsort((np.arange(x.size), -frac))
        before = np.concatenate([[0], np.cumsum(cap[order])[:-1]])
        out = np.zeros(x.size, dtype=np.int64)
        out[order] = np.clip(total - before, 0, cap[order])
        return out
    weight = x.astype(float) if x.sum() > 0 else cap.astype(float)
    quota = np.zeros(x.size)
    free = cap > 0
    left = float(total)
    for _ in range(x.size + 1):  # water-filling with caps: at most S rounds
        wsum = weight[free].sum()
        if left <= 1e-9 or wsum <= 0:
            break
        share = np.where(free, left * weight / wsum, 0.0)
        over = free & (quota + share >= cap)
        if not over.any():
            quota += share
            left = 0.0
            break
        left -= float((cap[over] - quota[over]).sum())
        quota[over] = cap[over]
        free &= ~over
    if left > 1e-9:  # every site with changed samples is full: spread the rest by capacity
        spare = cap - quota
        quota += left * spare / spare.sum()
    return np.minimum(_largest_remainder(quota, total), cap)


def rule_of_thumb_sample_size(site_size, download_fraction) -> float:
    """The slides' rule of thumb for the sample size, k ≈ √(rN).

    Parameters
    ----------
    site_size : float
        N, pages per site.
    download_fraction : float
        r = downloads per cycle / pages maintained, in (0, 1].

    Returns
    -------
    float

    Notes
    -----
    The formula is missing from the text of the slides (slide 19: "N: no of pages in a
    site, r: no of pages to download / no of pages we maintain ... is a good rule of
    thumb"); √(rN) is our reading: it gives ≈ 20 for the slides' experiment
    (≈1400 pages per site, r = 100,000/353,000), the "~20" of slide 25.

    Examples
    --------
    >>> from changerate_bayes.scheduling import rule_of_thumb_sample_size
    >>> rule_of_thumb_sample_size(1400, 0.25)
    18.708286933869708
    """
    n = float(as_float_array(site_size, name="site_size", positive=True, ndim=(0,)))
    r = float(as_float_array(download_fraction, name="download_fraction", positive=True, ndim=(0,)))
    if r > 1:
        raise ValueError(f"`download_fraction` must be in (0, 1]; got {r}")
    return float(np.sqrt(r * n))


def expected_change_ratio(sample_size, site_size, download_fraction, change_fractions):
    r"""Expected ChangeRatio of the greedy sampling policy over many sites (mean field).

    Parameters
    ----------
    sample_size : int
        k, pages sampled per site, 1 <= k <= rN.
    site_size : int
        N, pages per site (all sites equal).
    download_fraction : float in (0, 1]
        r: the cycle's downloads are rN per site on average.
    change_fractions : array_like of float in [0, 1], shape (S,)
        ρ_s of the sites: the empirical distribution f(ρ) of the slides (slide 18).

    Returns
    -------
    float
        E[changed pages downloaded] / (rN) per site.

    Notes
    -----
    With infinitely many copies of the given sites, the number of changed samples is
    X ~ Binomial(k, ρ) (sampling with replacement: a good approximation for k ≪ N).
    Greedy downloads whole sites (N − k more pages each) in decreasing X until a
    fraction φ = (rN − k)/(N − k) of sites is taken (the tie class at the boundary in
    part). Per site, E[changed] = kE[ρ] + (N − k) Σ_x s(x) E[ρ 1{X = x}], with s(x)
    the selected fraction of class x.

    Examples
    --------
    >>> from changerate_bayes.scheduling import expected_change_ratio
    >>> # half the sites all changed, half unchanged: the 10 samples spent on unchanged
    >>> # sites are the only loss, (5 + 90 * 4/9) / 50
    >>> round(expected_change_ratio(10, 100, 0.5, [0.0, 1.0]), 6)
    0.9
    """
    n = check_positive_int(site_size, name="site_size")
    k = check_positive_int(sample_size, name="sample_size")
    r = float(as_float_array(download_fraction, name="download_fraction", positive=True, ndim=(0,)))
    if r > 1:
        raise ValueError(f"`download_fraction` must be in (0, 1]; got {r}")
    rho = as_float_array(change_fractions, name="change_fractions", nonnegative=True, ndim=(1,))
    if np.any(rho > 1):
        raise ValueError("`change_fractions` must be in [0, 1]")
    if k > r * n:
        raise ValueError(f"`sample_size` must be <= rN = {r * n:g}; got {k}")
    x = np.arange(k + 1)
    pmf = stats.binom.pmf(x[None, :], k, rho[:, None])  # (S, k+1)
    q = pmf.mean(axis=0)  # P(X = x)
    mr = (rho[:, None] * pmf).mean(axis=0)  # E[ρ 1{X = x}]
    phi = (r * n - k) / (n - k) if n > k else 0.0
    q_desc, mr_desc = q[::-1], mr[::-1]  # highest X first
    before = np.concatenate([[0.0], np.cumsum(q_desc)[:-1]])
    take = np.clip(phi - before, 0.0, q_desc)
    sel = np.divide(take, q_desc, out=np.zeros_like(take), where=q_desc > 0)
    changed = k * rho.mean() + (n - k) * float(np.sum(sel * mr_desc))
    return float(changed / (r * n))


def optimal_sample_size(site_size, download_fraction, change_fractions):
    """The sample size maximising :func:`expected_change_ratio` (search over 1..⌊rN⌋).

    Returns
    -------
    (int, float)
        The optimal k and its expected ChangeRatio.

    Examples
    --------
    >>> from changerate_bayes.scheduling import optimal_sample_size
    >>> import numpy as np
    >>> rho = np.random.default_rng(0).beta(0.5, 2.0, 500)
    >>> k, cr = optimal_sample_size(200, 0.25, rho)
    >>> 2 <= k <= 25
    True
    """
    n = check_positive_int(site_size, name="site_size")
    r = float(as_float_array(download_fraction, name="download_fraction", positive=True, ndim=(0,)))
    top = max(1, int(np.floor(r * n)))
    values = [expected_change_ratio(k, n, r, change_fractions) for k in range(1, top + 1)]  # loop over k
    best = int(np.argmax(values))
    return best + 1, float(values[best])


@dataclass(frozen=True)
class ChangeDetectionResult:
    """Output of :func:`simulate_change_detection`.

    Attributes
    ----------
    policies : tuple of str
    change_ratio : ndarray, shape (n_policies, n_cycles)
        Changed pages downloaded / pages downloaded, per cycle.
    samples : ndarray, shape (n_policies, n_cycles)
        Downloads spent on samples (sampling policies; 0 otherwise).
    """

    policies: tuple
    change_ratio: np.ndarray
    samples: np.ndarray


def _within_site_rank(site, gen):
    """Random order of the pages inside each site: rank 0, 1, ... per site."""
    key = gen.random(site.size)
    order = np.lexsort((key, site))
    s_sorted = site[order]
    start = np.flatnonzero(np.concatenate([[True], s_sorted[1:] != s_sorted[:-1]]))
    first_of = np.repeat(start, np.diff(np.append(start, site.size)))
    rank = np.empty(site.size, dtype=np.int64)
    rank[order] = np.arange(site.size) - first_of
    return rank


def _sampling_policy(policy, stale, site, sizes, budget, k, gen, *, confidence, batch):
    """Pages downloaded this cycle by a sampling policy; also returns the samples spent."""
    n_sites = sizes.size
    rank = _within_site_rank(site, gen)
    if policy in ("greedy", "proportional"):
        ks = np.minimum(k, sizes)
        sampled = rank < ks[site]
        found = np.bincount(site[sampled], weights=stale[sampled], minlength=n_sites).astype(np.int64)
        extra = allocate_downloads(found, ks, sizes, budget - int(ks.sum()), policy=policy)
        return rank < (ks + extra)[site], int(ks.sum())
    # adaptive: batches of samples until the Wilson interval clears the threshold
    from statsmodels.stats.proportion import proportion_confint  # statsmodels: about 1 s to import, needed only here

    taken = np.zeros(n_sites, dtype=np.int64)
    found = np.zeros(n_sites, dtype=np.int64)
    decided = np.zeros(n_sites, dtype=bool)
    cap = np.minimum(k, sizes)
    threshold = None
    while True:  # a loop over sampling rounds (at most k / batch), vectorised over sites
        step = np.where(decided, 0, np.minimum(batch, cap - taken))
        if not step.any():
            break
        new = (rank >= taken[site]) & (rank < (taken + step)[site])
        found += np.bincount(site[new], weights=stale[new], minlength=n_sites).astype(np.int64)
        taken += step
        est = found / np.maximum(taken, 1)
        if threshold is None:  # pilot round: the change fraction at which greedy's budget runs out
            spend = budget - int(cap.sum())
            order = np.argsort(-est, kind="stable")
            room = np.cumsum((sizes - cap)[order])
            cut = min(int(np.searchsorted(room, spend)), n_sites - 1)
            threshold = est[order[cut]]
        lo, hi = proportion_confint(found, np.maximum(taken, 1), alpha=1 - confidence, method="wilson")
        decided |= (lo > threshold) | (hi < threshold) | (taken >= cap)
    extra = allocate_downloads(found, taken, sizes, budget - int(taken.sum()), policy="greedy")
    return rank < (taken + extra)[site], int(taken.sum())


def simulate_change_detection(
    change_rates,
    site,
    budget,
    *,
    policies=DETECTION_POLICIES,
    n_cycles=10,
    sample_size=20,
    confidence=0.95,
    batch=5,
    prior_median=None,
    prior_sigma=2.0,
    grid_size=96,
    rng=None,
) -> ChangeDetectionResult:
    """Simulate download cycles of sampling-based and frequency-based change detection.

    Pages change as Poisson processes (rates Δ per cycle); a page is *stale* if it
    changed since its last download. Each cycle every policy downloads ``budget`` pages
    and scores ChangeRatio = stale pages downloaded / ``budget``; downloaded pages
    become fresh. All pages are fresh at time 0.

    Parameters
    ----------
    change_rates : array_like of float, shape (n_pages,)
        Δ >= 0 per download cycle.
    site : array_like of int, shape (n_pages,)
        Site index of each page, 0..S-1.
    budget : int
        Downloads per cycle, including the samples; must exceed S·k for the sampling
        policies.
    policies : sequence of str, default all of :data:`DETECTION_POLICIES`
        ``"greedy"``, ``"proportional"``: k samples per site, then
        :func:`allocate_downloads`. ``"adaptive"``: samples in batches of ``batch``
        per site, stopping a site early once the Wilson interval of its change fraction
        (``confidence``) lies above or below the change fraction at which greedy's
        budget runs out (estimated from the first batch); at most k per site; then
        greedy. ``"frequency"``: per-page posterior of Δ from the page's own download
        history (exact interval-censored likelihood, log-normal prior), download the
        pages with the largest posterior probability of having changed,
        1 − E[e^{−Δ·age}]. ``"round_robin"``: a fixed cyclic order.
        ``"oracle"``: the largest 1 − e^{−Δ·age} with the true Δ.
    n_cycles : int, default 10
    sample_size : int, default 20
        k, samples per site (the maximum for ``"adaptive"``).
    confidence : float in (0, 1), default 0.95
    batch : int, default 5
    prior_median, prior_sigma : float
        Prior of the frequency policy (median default budget / n_pages).
    grid_size : int, default 96
        Nodes of the frequency policy's per-page posterior grid (memory n_pages × G).
    rng : int, numpy.random.Generator or None
        Each policy runs on its own child stream; the change process is shared
        (common random numbers) by drawing every page's change times once.

    Returns
    -------
    ChangeDetectionResult

    Raises
    ------
    ValueError
        Bad rates, sites, budget (<= 0, > n_pages, or too small to sample every site),
        unknown policies.

    Examples
    --------
    >>> import numpy as np
    >>> from changerate_bayes.scheduling import simulate_change_detection
    >>> site = np.repeat(np.arange(4), 50)
    >>> delta = np.repeat([0.01, 0.05, 1.0, 2.0], 50)
    >>> res = simulate_change_detection(delta, site, 60, policies=("greedy", "round_robin"),
    ...                                 n_cycles=3, sample_size=5, rng=0)
    >>> bool(res.change_ratio[0].mean() > res.change_ratio[1].mean())
    True
    """
    delta = as_float_array(change_rates, name="change_rates", nonnegative=True, ndim=(1,))
    site = _check_counts(site, name="site")
    if site.shape != delta.shape:
        raise ValueError(f"`site` must have the shape of `change_rates` {delta.shape}; got {site.shape}")
    sizes = np.bincount(site)
    if np.any(sizes == 0):
        raise ValueError("`site` must use every index 0..S-1 (a site without pages)")
    budget = check_positive_int(budget, name="budget")
    if budget > delta.size:
        raise ValueError(f"`budget` must be <= the number of pages {delta.size}; got {budget}")
    if isinstance(policies, str):
        policies = (policies,)
    policies = tuple(check_choice(p, name="policies", choices=DETECTION_POLICIES) for p in policies)
    n_cycles = check_positive_int(n_cycles, name="n_cycles")
    k = check_positive_int(sample_size, name="sample_size")
    batch = check_positive_int(batch, name="batch")
    confidence = float(confidence)
    if not 0 < confidence < 1:
        raise ValueError(f"`confidence` must be in (0, 1); got {confidence}")
    if any(p in ("greedy", "proportional", "adaptive") for p in policies) and int(np.minimum(k, sizes).sum()) >= budget:
        raise ValueError(
            f"`budget` {budget} must exceed the samples, Σ min(k, site size) = {int(np.minimum(k, sizes).sum())}"
        )
    prior_median = budget / delta.size if prior_median is None else float(prior_median)
    grid_size = check_positive_int(grid_size, name="grid_size", minimum=8)

    gen = as_generator(rng)
    change_gen, *policy_gens = gen.spawn(1 + len(policies))
    # whether each page changes during each cycle, shared by all policies
    changes = change_gen.poisson(delta[None, :], size=(n_cycles, delta.size)) > 0  # (cycles, pages)
    ratio = np.empty((len(policies), n_cycles))
    spent = np.zeros((len(policies), n_cycles))
    for j, (name, g) in enumerate(zip(policies, policy_gens)):  # a handful of policies
        stale = np.zeros(delta.size, dtype=bool)
        age = np.zeros(delta.size)  # cycles since the last download
        post = None
        if name == "frequency":
            post = _GridPosterior((1, delta.size), median=prior_median, sigma=prior_sigma, size=grid_size)
        rr_order = g.permutation(delta.size)
        rr_pos = 0
        for c in range(n_cycles):  # a loop over download cycles
            stale |= changes[c]
            age += 1.0
            if name in ("greedy", "proportional", "adaptive"):
                chosen, spent[j, c] = _sampling_policy(
                    name, stale.astype(np.int64), site, sizes, budget, k, g, confidence=confidence, batch=batch
                )
            else:
                if name == "round_robin":
                    idx = rr_order[(rr_pos + np.arange(budget)) % delta.size]
                    rr_pos = (rr_pos + budget) % delta.size
                    score = np.zeros(delta.size)
                    score[idx] = 1.0
                elif name == "oracle":
                    score = -np.expm1(-delta * age)
                else:  # frequency: posterior probability of a change since the last download
                    assert post is not None  # made above for "frequency"
                    wts = post._weights()[0]
                    score = 1.0 - (wts * np.exp(-np.outer(age, post.grid))).sum(axis=1)
                score = score + 1e-12 * g.random(delta.size)  # random tie-break
                chosen = np.zeros(delta.size, dtype=bool)
                chosen[np.argpartition(-score, budget - 1)[:budget]] = True
            ratio[j, c] = stale[chosen].sum() / chosen.sum()
            if name == "frequency":
                assert post is not None  # made above for "frequency"
                idx = np.flatnonzero(chosen)
                post.update(idx, stale[idx].astype(np.int8), age[idx])
            stale[chosen] = False
            age[chosen] = 0.0
    return ChangeDetectionResult(policies, ratio, spent)
