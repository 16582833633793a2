"""How much error the last-modification date saves at equal crawls.

Pages change as Poisson processes of rate λ and are crawled every c (regular crawls, as
a crawler with a fixed revisit interval), N crawls each. At every crawl the crawler
learns I_k (changed since the previous crawl?) and, from the Last-Modified header, the
time of the last change when there was one. Estimators, all from the same crawls:

- ``lm_cgm``: Cho & Garcia-Molina's estimator with the last date of change,
  ``changerate_bayes.estimators.last_modified_rate(..., method="cgm")``;
- ``lm_mle``: the maximum-likelihood X/T with the same data;
- ``regular``: Cho & Garcia-Molina's bias-reduced estimator from change/no-change
  alone, −log((N − X + 0.5)/(N + 0.5))/c (the library's "regular" method);
- ``mle``: the change/no-change MLE (the library's "mle"; infinite when every crawl saw
  a change, so its bias and RMSE are over the finite replications, and the share of
  infinite ones is shown).

For each (λc, N) the study reports the relative bias E[λ̂/λ] − 1 and relative RMSE
with their Monte Carlo standard errors (bias: sd/√R; RMSE: sd((λ̂/λ − 1)²)/(2·RMSE·√R),
the delta method), and the RMSE ratio of ``lm_cgm`` to ``regular``.

Simulation: in each crawl interval the number of changes is Poisson(λc); given K ≥ 1
changes, the last one is at c·max(U_1..U_K) = c·V^{1/K} (V uniform), so the page's age
at the crawl is c(1 − V^{1/K}). Replication i draws from ``SeedSequence(block).spawn(R)[i]``
(one draw call per stream and scenario; the arithmetic is vectorised over replications).

Sizes (R replications per scenario): quick 2000, default 10000, full 40000.
"""

from __future__ import annotations

import warnings

import numpy as np

from changerate_bayes import CrawlHistory, final_estimates
from changerate_bayes._rng import replication_generators
from changerate_bayes.estimators import last_modified_rate
from changerate_bayes.report import html_table, summary_row, verdict_html

TITLE = "Last-Modified: the error it saves at equal crawls"
KEYS = ("last_modified",)

RATES = (0.2, 1.0, 2.0, 5.0)  # λc: expected changes per crawl interval
CRAWLS = (10, 50)
ESTIMATORS = ("lm_cgm", "lm_mle", "regular", "mle")


def _replications(preset) -> int:
    return preset.pick(quick=2000, default=10000, full=40000)


def simulate(lam_c: float, n: int, gens) -> tuple[np.ndarray, np.ndarray]:
    """Changed flags and ages (in crawl intervals), shape (len(gens), n), one row per stream."""
    draws = np.stack([np.concatenate([g.poisson(lam_c, n), g.random(n)]) for g in gens])
    k, v = draws[:, :n], draws[:, n:]
    changed = k > 0
    with np.errstate(divide="ignore"):
        age = np.where(changed, 1.0 - v ** (1.0 / np.maximum(k, 1)), 0.0)
    return changed.astype(np.int8), age


def _estimates(changed, age) -> dict:
    r, n = changed.shape
    tau = np.ones((r, n))
    lengths = np.full(r, n)
    h = CrawlHistory(changed, tau, crawl_rate=1.0)
    with warnings.catch_warnings():  # the crawling-model notes are not what is measured
        warnings.simplefilter("ignore")
        mle, reg = final_estimates(h, "mle"), final_estimates(h, "regular")
    return {
        "lm_cgm": last_modified_rate(changed.ravel(), tau.ravel(), age.ravel(), lengths=lengths),
        "lm_mle": last_modified_rate(changed.ravel(), tau.ravel(), age.ravel(), lengths=lengths, method="mle"),
        "regular": reg,
        "mle": mle,
    }


def _summary(est: np.ndarray, lam: float) -> dict:
    finite = np.isfinite(est)
    e = est[finite] / lam - 1.0
    m = e.size
    rmse = float(np.sqrt(np.mean(e**2)))
    return {
        "bias": float(e.mean()),
        "bias_se": float(e.std(ddof=1) / np.sqrt(m)),
        "rmse": rmse,
        "rmse_se": float((e**2).std(ddof=1) / (2 * rmse * np.sqrt(m))) if rmse > 0 else 0.0,
        "infinite_share": float(1.0 - finite.mean()),
        "replications": int(m),
    }


def run(preset, *, seed: int, progress) -> dict:
    reps = _replications(preset)
    blocks = np.random.SeedSequence(seed).spawn(len(RATES) * len(CRAWLS))
    rows = []
    for b, (lam_c, n) in enumerate((lc, n) for lc in RATES for n in CRAWLS):
        changed, age = simulate(lam_c, n, replication_generators(blocks[b], reps))
        for name, est in _estimates(changed, age).items():
            rows.append({"rate_per_interval": lam_c, "crawls": n, "estimator": name, **_summary(est, lam_c)})
        progress(f"λc = {lam_c:g}, N = {n}: done")
    return {"last_modified": {"replications": reps, "rows": rows}}


def rmse_ratios(result: dict) -> list[dict]:
    """RMSE of ``lm_cgm`` over that of ``regular``, per scenario."""
    by = {(r["rate_per_interval"], r["crawls"], r["estimator"]): r for r in result["last_modified"]["rows"]}
    return [
        {"rate_per_interval": lc, "crawls": n, "ratio": by[(lc, n, "lm_cgm")]["rmse"] / by[(lc, n, "regular")]["rmse"]}
        for lc in RATES
        for n in CRAWLS
    ]


def summarize(result: dict) -> dict:
    """The summary-table row: the RMSE ratio of the estimator with the date to change/no-change."""
    ratios = rmse_ratios(result)
    wins = sum(r["ratio"] < 1.0 for r in ratios)
    lo, hi = min(r["ratio"] for r in ratios), max(r["ratio"] for r in ratios)
    return summary_row(
        verdict=f"With Last-Modified, RMSE {lo:.2f}-{hi:.2f} times that of change/no-change at equal "
        f"crawls; lower in {wins} of {len(ratios)} scenarios.",
        key_number=f"RMSE ratio {lo:.2f}-{hi:.2f}",
        kind=lower_rmse_kind(ratios),
    )


def lower_rmse_kind(ratios) -> str:
    """The verdict kind of Cho & Garcia-Molina's claim that the last-modification date lowers the
    error at equal crawls, checked on simulated pages (a check, not a finding about data): "holds"
    if the RMSE ratio is below 1 in every scenario, "fails" in none, "mixed" in between."""
    wins = sum(r["ratio"] < 1.0 for r in ratios)
    return "holds" if wins == len(ratios) else "fails" if wins == 0 else "mixed"


def _saving(values) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:+.0%} to {hi:+.0%} of the RMSE"


def render(result: dict) -> str:
    res = result["last_modified"]
    rows = [
        {
            "λc": r["rate_per_interval"],
            "N": r["crawls"],
            "estimator": r["estimator"],
            "bias": f"{r['bias']:+.3f} ± {r['bias_se']:.3f}",
            "RMSE": f"{r['rmse']:.3f} ± {r['rmse_se']:.3f}",
            "infinite": f"{r['infinite_share']:.1%}",
        }
        for r in res["rows"]
    ]
    ratios = rmse_ratios(result)
    wins = [r for r in ratios if r["ratio"] < 1.0]
    low = [1 - r["ratio"] for r in ratios if r["rate_per_interval"] <= 1]
    high = [1 - r["ratio"] for r in ratios if r["rate_per_interval"] > 1]
    text = "; ".join(f"λc = {r['rate_per_interval']:g}, N = {r['crawls']}: {r['ratio']:.2f}" for r in ratios)
    parts = [
        f"<p>{res['replications']} replications per scenario; crawls every c, N crawls, Poisson changes of rate λ. "
        "Bias and RMSE are relative to λ (λ̂/λ − 1), ± one Monte Carlo standard error. The change/no-change MLE is "
        "infinite when every crawl saw a change: its bias and RMSE are over the finite replications only.</p>",
        verdict_html(
            f"RMSE of Cho & Garcia-Molina's estimator with the last-modification date over that of their "
            f"change/no-change estimator, at equal crawls: {text}. It saves error in {len(wins)} of "
            f"{len(ratios)} scenarios (ratio below 1): by {_saving(low)} while pages change at most once per "
            f"crawl interval (λc <= 1), by {_saving(high)} where they change several times (λc >= 2), "
            "where the change/no-change estimator saturates (nearly every crawl sees a change) and, "
            "bounded, trades bias for variance. (A check on simulated pages of the claim that the date lowers "
            "the error: it holds where the ratio is below 1.)",
            kind=lower_rmse_kind(ratios),
        ),
        html_table(rows, ["λc", "N", "estimator", "bias", "RMSE", "infinite"]),
    ]
    return "\n".join(parts)
