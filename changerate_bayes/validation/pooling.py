"""Pooling pages: does a hierarchical posterior beat per-page estimates when k is small?

Many pages, each crawled only k = 1-5 times (Poisson crawls, p = 1/h), with change
rates heavy-tailed across pages. For each k the pooled posterior mean
(:func:`changerate_bayes.pooled_posterior`, population ``"lognormal"`` or ``"gamma"``)
is compared with the per-page LLN (α = 1) and MLE estimates (``estimate_path``), with a
per-page Bayesian posterior mean under the default prior (``posterior(method="grid")``,
no pooling), and — where the truth is log-normal — with the oracle posterior mean that
knows the population (grid, prior = the true population). RMSE is over pages and
replications; the Monte Carlo SE of each MSE difference with the LLN is from the
paired per-page differences.

Truths (rates per hour): ``lognormal``: log Δ ~ Normal(log 0.5, 1) (1% of pages above
10× the median); ``lomax``: Pareto type II, P(Δ > x) = (1 + x/2)^(−5), mean 0.5 (a power
tail; α = 5 keeps the fourth moment, hence the SE of the MSE, finite).

Sizes per preset:

========  ==================  =====================  =======  ===========  ====  =============
preset    truths              populations            pages    k            reps  draws / tune
========  ==================  =====================  =======  ===========  ====  =============
quick     lognormal           lognormal              1000     1, 2, 5      1     400 / 400
default   lognormal, lomax    lognormal, gamma       800      1, 2, 3, 5   1     600 / 500
full      lognormal, lomax    lognormal, gamma       1000     1, 2, 3, 5   2     600 / 500
========  ==================  =====================  =======  ===========  ====  =============

(2 chains each; one compiled PyMC model per population, reused for every k and
replication.)
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from changerate_bayes import (
    LogNormalPrior,
    estimate_path,
    pooled_posterior,
    posterior,
    sampler_diagnostics,
    simulate_history,
)
from changerate_bayes.report import figure_to_html, html_table, summary_row, verdict_html

#: the truths in words, for the report (rates per hour)
_TRUTH_WORDS = {
    "lognormal": "lognormal: log Δ ~ Normal(log 0.5, 1)",
    "lomax": "lomax: P(Δ > x) = (1 + x/2)^(−5), mean 0.5",
}


def _join(ks) -> str:
    return ", ".join(str(k) for k in ks)


TITLE = "Pooling pages: hierarchical posterior vs per-page estimates at small k"
KEYS = ("pooling",)

_DEFAULT_SIZES: dict[str, Any] = dict(
    truths=("lognormal", "lomax"),
    populations=("lognormal", "gamma"),
    pages=800,
    ks=(1, 2, 3, 5),
    reps=1,
    draws=600,
    tune=500,
)
_SIZES: dict[str, dict[str, Any]] = {
    "quick": dict(
        truths=("lognormal",), populations=("lognormal",), pages=1000, ks=(1, 2, 5), reps=1, draws=400, tune=400
    ),
    "default": _DEFAULT_SIZES,
    "full": {**_DEFAULT_SIZES, "pages": 1000, "reps": 2},  # the default's settings, more pages and replications
}
CRAWL_RATE = 1.0
LOGNORMAL_TRUTH = (np.log(0.5), 1.0)
LOMAX_TRUTH = (5.0, 2.0)  # tail index, scale
Z_WIN = 2.0  # "lower RMSE": MSE difference with the LLN above 2 Monte Carlo SEs


def draw_rates(truth: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Change rates of ``n`` pages (per hour) from the named heavy-tailed population."""
    if truth == "lognormal":
        mu, sigma = LOGNORMAL_TRUTH
        return np.exp(rng.normal(mu, sigma, n))
    alpha, scale = LOMAX_TRUTH
    return scale * (rng.random(n) ** (-1.0 / alpha) - 1.0)


def paired_mse(estimate: np.ndarray, reference: np.ndarray, truth: np.ndarray) -> dict:
    """MSE of ``estimate`` and of ``reference`` and the SE of their paired difference."""
    with np.errstate(invalid="ignore", over="ignore"):
        se_e = (estimate - truth) ** 2
        se_r = (reference - truth) ** 2
    finite = np.isfinite(se_e).all() and np.isfinite(se_r).all()
    if not finite:
        return {"mse": float(np.mean(se_e)) if np.isfinite(se_e).all() else None, "diff": None, "diff_se": None}
    d = se_r - se_e
    return {"mse": float(se_e.mean()), "diff": float(d.mean()), "diff_se": float(d.std(ddof=1) / np.sqrt(d.size))}


def _per_page(history, k, truth_name):
    """Per-page estimates after k crawls: LLN, MLE, default-prior Bayes, oracle."""
    hk = history.head(k)
    out = {
        "LLN (α = 1)": estimate_path(history, "lln", alpha=1.0)[:, k - 1],
        "MLE": estimate_path(history, "mle")[:, k - 1],
    }
    post = posterior(hk, method="grid", draws=500, chains=1, rng=k)
    out["per-page Bayes, BetaPrime(1, 2)"] = post.posterior["change_rate"].values.mean(axis=(0, 1))
    if truth_name == "lognormal":
        oracle = posterior(hk, prior=LogNormalPrior(*LOGNORMAL_TRUTH), method="grid", draws=500, chains=1, rng=k)
        out["oracle (true population)"] = oracle.posterior["change_rate"].values.mean(axis=(0, 1))
    return out


def _diagnostics(idata, truth, rep, k, pop, sampler_diagnostics) -> dict:
    """Diagnostics of one pooled fit: the verdict on the hyperparameters (the variables NUTS
    samples in the marginal method, as ``pooled_posterior`` checks them), and the pages' R-hat
    and ESS for information."""
    hyper = sampler_diagnostics(idata, [v for v in idata.posterior.data_vars if v != "change_rate"])
    pages = sampler_diagnostics(idata, "change_rate")
    return {
        "truth": truth,
        "replication": rep,
        "k": k,
        "population": pop,
        **hyper.to_record(),
        "hyper_r_hat_max": hyper.r_hat_max,
        "hyper_ess_bulk_min": hyper.ess_bulk_min,
        "page_r_hat_max": pages.r_hat_max,
        "page_frac_r_hat_over": float(np.mean(pages.r_hat > pages.r_hat_threshold)),
        "page_ess_bulk_min": pages.ess_bulk_min,
    }


def run(preset, *, seed: int, progress) -> dict:
    sz = _SIZES[preset.name]
    rows, diags = [], []
    seeds = np.random.SeedSequence(seed).spawn(len(sz["truths"]) * sz["reps"])
    t0 = time.perf_counter()
    for ti, truth_name in enumerate(sz["truths"]):
        pieces: dict[tuple, dict[str, list]] = {}
        for rep in range(sz["reps"]):
            gen = np.random.default_rng(seeds[ti * sz["reps"] + rep])
            delta = draw_rates(truth_name, sz["pages"], gen)
            history = simulate_history(delta, CRAWL_RATE, max(sz["ks"]), n_pages=sz["pages"], rng=gen)
            for k in sz["ks"]:
                est = _per_page(history, k, truth_name)
                for pop in sz["populations"]:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # diagnostics are recorded below
                        idata = pooled_posterior(
                            history.head(k),
                            population=pop,
                            draws=sz["draws"],
                            tune=sz["tune"],
                            chains=2,
                            rng=int(gen.integers(2**31)),
                        )
                    est[f"pooled, {pop} population"] = idata.posterior["change_rate"].values.mean(axis=(0, 1))
                    diags.append(_diagnostics(idata, truth_name, rep, k, pop, sampler_diagnostics))
                    progress(
                        f"{truth_name} rep {rep + 1}/{sz['reps']} k={k} {pop} pooled ({time.perf_counter() - t0:.1f} s)"
                    )
                store = pieces.setdefault((truth_name, k), {"truth": []})
                store["truth"].append(delta)
                for name, value in est.items():
                    store.setdefault(name, []).append(value)
        for (tname, k), store in pieces.items():
            truth = np.concatenate(store.pop("truth"))
            lln = np.concatenate(store["LLN (α = 1)"])
            for name, values in store.items():
                x = np.concatenate(values)
                m = paired_mse(x, lln, truth)
                nonfinite = int((~np.isfinite(x)).sum() + (x == 0).sum() * (name == "MLE"))
                rows.append(
                    {
                        "truth": tname,
                        "k": k,
                        "estimator": name,
                        "n_pages": int(truth.size),
                        "rmse": None if m["mse"] is None else float(np.sqrt(m["mse"])),
                        "rmse_ratio_to_lln": None
                        if m["mse"] is None
                        else float(np.sqrt(m["mse"]) / np.sqrt(np.mean((lln - truth) ** 2))),
                        "mse_gain_vs_lln": m["diff"],
                        "mse_gain_se": m["diff_se"],
                        "z": None if m["diff"] is None or m["diff_se"] in (None, 0.0) else m["diff"] / m["diff_se"],
                        "n_zero_or_inf": nonfinite if name == "MLE" else int((~np.isfinite(x)).sum()),
                    }
                )
    return {
        "pooling": {
            "settings": {
                **{k: list(v) if isinstance(v, tuple) else v for k, v in sz.items()},
                "crawl_rate": CRAWL_RATE,
                "z_win": Z_WIN,
                "preset": preset.name,
            },
            "rows": rows,
            "diagnostics": diags,
        }
    }


def _figure(rows, truth):
    import matplotlib.pyplot as plt  # matplotlib: heavy, loaded only to draw

    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    names = sorted({r["estimator"] for r in rows if r["truth"] == truth and r["rmse"] is not None})
    for i, name in enumerate(names):
        pts = sorted(
            (r["k"], r["rmse"])
            for r in rows
            if r["truth"] == truth and r["estimator"] == name and r["rmse"] is not None
        )
        style = "-o" if name.startswith("pooled") else ("--" if name.startswith("oracle") else ":s")
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=f"C{i}", ms=4, label=name)
    ax.set_xlabel("crawls per page k")
    ax.set_ylabel("RMSE of Δ (per hour)")
    ax.set_title(f"truth: {truth} rates across pages (MLE omitted where 0 or ∞)", fontsize=9)
    ax.legend(fontsize=8)
    return figure_to_html(fig, alt=f"RMSE against k of pooled, per-page and oracle estimates, {truth} truth")


def render(result: dict) -> str:
    res = result["pooling"]
    st, rows = res["settings"], res["rows"]
    parts = [
        f"<p>{st['pages']} pages per replication ({st['reps']} replication(s)), each crawled k times at Poisson "
        f"times (p = {st['crawl_rate']:g}/h); change rates heavy-tailed across pages (truths: "
        f"{', '.join(_TRUTH_WORDS.get(t, t) for t in st['truths'])}). Each estimator's RMSE over pages; "
        "'MSE gain' is the LLN's MSE minus the estimator's, with its Monte Carlo SE from paired per-page "
        'differences (positive: better than the LLN). Pooled fits use <code>method="marginal"</code>: NUTS on the '
        "two population hyperparameters with every page's rate integrated out by quadrature, then each page's rate "
        "drawn exactly given them.</p>"
    ]
    for truth in st["truths"]:
        parts.append(_figure(rows, truth))
        sub = [r for r in rows if r["truth"] == truth]
        parts.append(
            html_table(
                sub,
                [
                    ("k", "k"),
                    ("estimator", "estimator"),
                    ("rmse", "RMSE"),
                    ("rmse_ratio_to_lln", "RMSE / LLN RMSE"),
                    ("mse_gain_vs_lln", "MSE gain vs LLN"),
                    ("mse_gain_se", "SE"),
                    ("z", "gain / SE"),
                    ("n_zero_or_inf", "pages at 0 or ∞"),
                ],
                caption=f"Truth {truth}: RMSE by k",
            )
        )
        for pop in st["populations"]:
            name = f"pooled, {pop} population"
            mine = sorted((r for r in sub if r["estimator"] == name), key=lambda r: r["k"])
            wins = [r["k"] for r in mine if r["z"] is not None and r["z"] > st["z_win"]]
            losses = [r["k"] for r in mine if r["z"] is not None and r["z"] < -st["z_win"]]
            ratios = ", ".join(f"k={r['k']}: {r['rmse_ratio_to_lln']:.3f}" for r in mine)
            mle = [r for r in sub if r["estimator"] == "MLE"]
            mle_txt = (
                "; the per-page MLE is 0 or ∞ on "
                + ", ".join(f"{r['n_zero_or_inf']} pages at k={r['k']}" for r in mle)
                + " (RMSE infinite where any is ∞)"
            )
            text = (
                f"Truth {truth}, {name}: RMSE ratio to the LLN {ratios}. Lower than the LLN by more than "
                f"{st['z_win']:g} SE at "
                + (f"k = {_join(wins)}" if wins else "no k")
                + (f"; higher at k = {_join(losses)}" if losses else "")
                + mle_txt
                + "."
            )
            ok = True if (wins and not losses) else (False if not wins else None)
            parts.append(verdict_html(text, ok))
    diags = res["diagnostics"]
    parts.append(
        html_table(
            diags,
            [
                ("truth", "truth"),
                ("replication", "rep"),
                ("k", "k"),
                ("population", "population"),
                ("hyper_r_hat_max", "hyper R-hat max"),
                ("hyper_ess_bulk_min", "hyper bulk ESS min"),
                ("page_r_hat_max", "page R-hat max"),
                ("page_frac_r_hat_over", "pages with R-hat > 1.01"),
                ("page_ess_bulk_min", "page bulk ESS min"),
                ("ess_threshold", "ESS threshold"),
                ("n_divergences", "divergences"),
                ("ok", "all thresholds met"),
            ],
            caption="Pooled NUTS diagnostics: 'all thresholds met' (R-hat ≤ 1.01, ESS ≥ 100 per "
            "chain, no divergences) is checked on the population hyperparameters, the "
            "variables NUTS samples; page rates shown for information",
        )
    )
    bad = [d for d in diags if not d["ok"]]
    slow = [
        d for d in diags if d["hyper_ess_bulk_min"] < d["ess_threshold"] or d["hyper_r_hat_max"] > d["r_hat_threshold"]
    ]
    div = sum(d["n_divergences"] for d in diags)
    text = f"{len(diags) - len(bad)} of {len(diags)} pooled fits meet every threshold; {div} divergent transitions in all. "
    if slow:
        text += (
            "The population hyperparameters miss a threshold in "
            + ", ".join(
                f"k={d['k']} ({d['population']}: bulk ESS {d['hyper_ess_bulk_min']:.0f}"
                + (" < " if d["hyper_ess_bulk_min"] < d["ess_threshold"] else " ≥ ")
                + f"{d['ess_threshold']:.0f}, "
                f"R-hat {d['hyper_r_hat_max']:.3f}"
                + (" > " if d["hyper_r_hat_max"] > d["r_hat_threshold"] else " ≤ ")
                + f"{d['r_hat_threshold']:g})"
                for d in slow
            )
            + f": with few crawls per page the population spread is weakly identified, and R-hat from "
            f"{diags[0]['n_chains']} chains of {diags[0]['n_draws']} draws is itself noisy; rerun such a fit with "
            "more chains before trusting its hyperparameter intervals. "
        )
    text += (
        "Page rates: at most "
        + f"{max(d['page_frac_r_hat_over'] for d in diags):.1%}"
        + " of pages per fit have R-hat above 1.01: each page's rate is an exact draw given the "
        "hyperparameters, so its chains mix as theirs do, and these are chance exceedances among hundreds of "
        "noisy R-hat estimates from short chains, not a mixing failure of their own."
    )
    parts.append(verdict_html(text, True if not bad else None))
    return "\n".join(str(p) for p in parts)


def summarize(result: dict) -> dict:
    """The summary-table row: at how many (truth, population, k) the pooled posterior
    beats the per-page LLN by more than ``z_win`` standard errors, and whether the fits
    met the convergence thresholds."""
    res = result["pooling"]
    st, rows = res["settings"], res["rows"]
    pooled = [r for r in rows if str(r["estimator"]).startswith("pooled") and r["z"] is not None]
    wins = sum(1 for r in pooled if r["z"] > st["z_win"])
    losses = sum(1 for r in pooled if r["z"] < -st["z_win"])
    diags = res.get("diagnostics", [])
    bad = sum(1 for d in diags if not d["ok"])
    verdict = (
        f"The pooled posterior beats the per-page LLN by more than {st['z_win']:g} SE in {wins} of "
        f"{len(pooled)} (truth, population, k) settings"
        + (f" and loses in {losses}" if losses else "")
        + (
            f"; {bad} of {len(diags)} pooled fits miss a convergence threshold."
            if bad
            else "; every pooled fit meets the convergence thresholds."
        )
    )
    kind = "holds" if wins and not losses and not bad else ("fails" if not wins else "mixed")
    return summary_row(verdict=verdict, key_number=f"{wins} / {len(pooled)} wins", kind=kind)
