"""Changes in bursts: a two-state Markov-modulated Poisson process (quiet and busy) judged
by how well it predicts the next crawl, beside the random-walk dynamic posterior.

The protocol is that of :mod:`changerate_bayes.validation.prequential`: before each crawl k a method
states P(I_k = 1 | τ_k) from crawls 1..k−1; the mean log score and Brier score are
taken after a burn-in of 20 crawls, probabilities clipped to [1e-3, 1 − 1e-3]. Time is
measured in each page's mean crawl interval. The data are the shipped traces crawled
by simulated Poisson crawls at p = rate/3 and rate/15, and the Open Terms Archive crawl
observations as they are.

The burst model's four rates are never fitted on the crawls they score:

* traces: the twelve traces are split into folds (leave one trace out at the full
  preset). For each crawl ratio and fold, θ is fitted (pooled maximum marginal
  likelihood over all rows of the traces outside the fold) and the fold's traces are
  scored with it;
* Open Terms Archive: the pages are split into folds; each fold is scored with θ
  fitted on the other folds' pages.

Two pooled variants: one shared θ for all pages ("burst, shared"), and a shared shape
with a per-page rate scale s ∈ {0.1, 0.32, 1, 3.2, 10} averaged over exactly in the
filter, uniform prior ("burst, per-page scale"). The random walk is run with the
unit-free default volatilities (c/√(median τ), c up to 1) and with the absolute grid
(0, 0.01, 0.03, 0.1, 0.3) per √hour, the former default (same prior and lattice, in
per-hour rates); SA (η = 0.5) and LLN are the paper's online estimators.

Sizes per preset:

=========  ===  ==========  ===============  ==========  ===========  =========  =========
preset     R    max crawls  OTA visits/page  fit crawls  trace folds  OTA folds  bootstrap
=========  ===  ==========  ===============  ==========  ===========  =========  =========
quick      2    500         600              200         3            3          200
default    5    3000        all              800         4            5          500
full       10   5000        all              1500        12           5          1000
=========  ===  ==========  ===============  ==========  ===========  =========  =========

("fit crawls": each training row contributes its first so many crawls to the fit.)
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from changerate_bayes import CrawlHistory, LogNormalPrior, dynamic_posterior, estimate_path
from changerate_bayes._event_times import as_event_times
from changerate_bayes.bursts import burst_predictive, fit_bursts
from changerate_bayes.dynamic import DEFAULT_SIGMAS
from changerate_bayes.report import html_table, verdict_html
from changerate_bayes.traces import load_trace
from changerate_bayes.validation.prequential import (
    GRID,
    PRIOR_SD,
    _plug_in,
    _prior,
    _row,
    _setting,
    method_scores,
    ota_history,
    trace_histories,
)

TITLE = "Changes in bursts: a quiet/busy model of each page, judged by predicting the next crawl"
KEYS = ("bursts",)

SIZES: dict[str, dict[str, Any]] = {
    "quick": {
        "R": 2,
        "max_crawls": 500,
        "ota_max": 600,
        "fit_crawls": 200,
        "trace_folds": 3,
        "folds": 3,
        "n_boot": 200,
    },
    "default": {
        "R": 5,
        "max_crawls": 3000,
        "ota_max": None,
        "fit_crawls": 800,
        "trace_folds": 4,
        "folds": 5,
        "n_boot": 500,
    },
    "full": {
        "R": 10,
        "max_crawls": 5000,
        "ota_max": None,
        "fit_crawls": 1500,
        "trace_folds": 12,
        "folds": 5,
        "n_boot": 1000,
    },
}
SCALES = tuple(float(x) for x in np.round(10.0 ** np.linspace(-1.0, 1.0, 5), 4))
METHODS = ("burst", "burst_scaled", "dynamic", "dynamic_absolute", "sa_0.5", "lln")
LABELS = {
    "burst": "burst, shared θ",
    "burst_scaled": "burst, per-page scale",
    "dynamic": "random walk (unit-free σ)",
    "dynamic_absolute": "random walk (σ per √hour)",
    "sa_0.5": "SA η=0.5",
    "lln": "LLN",
}
BURSTS = ("burst", "burst_scaled")


# ----------------------------------------------------------------------------- predictions
def baseline_predictions(changed: np.ndarray, tau: np.ndarray, mask: np.ndarray, hours: np.ndarray) -> dict:
    """One-step predictive P(I_k = 1) of the random walks, SA (η = 0.5) and LLN, each (n, k).

    ``tau`` in units of each row's mean crawl interval, ``hours[i]`` that unit in hours
    (shape (n,)): the absolute grid of volatilities is per √hour, the library's former
    default, with the same prior and lattice moved to per-hour rates.
    """
    idata = dynamic_posterior((changed, tau, mask), prior=_prior(), grid=GRID, smooth=False)
    out = {
        "dynamic": idata.predictions["change_probability"].values,
        "dynamic_absolute": np.full(changed.shape, np.nan),
    }
    for h in np.unique(hours):
        rows = np.flatnonzero(hours == h)
        idata = dynamic_posterior(
            (changed[rows], tau[rows] * h, mask[rows]),
            sigma=DEFAULT_SIGMAS,
            prior=LogNormalPrior(-float(np.log(h)), PRIOR_SD),
            grid=GRID / h,
            smooth=False,
        )
        out["dynamic_absolute"][rows] = idata.predictions["change_probability"].values
    # padding sits after each page's last crawl, so the causal estimates at real crawls are
    # those of the page alone (as in the prequential study)
    hist = CrawlHistory(changed, tau, 1.0)
    for name, (m, kw) in {"sa_0.5": ("sa", {"eta": 0.5}), "lln": ("lln", {})}.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # non-Poisson crawls: inf is clipped when scored
            out[name] = _plug_in(estimate_path(hist, m, **kw), tau)
    return out


def fit_held_out(train_changed, train_tau, train_mask, fit_crawls: int, warm: dict | None = None) -> dict:
    """The two pooled fits on training rows (their first ``fit_crawls`` crawls).

    ``warm``: fits to similar data (another fold) whose rates start the optimiser.
    The per-page-scale fit starts from the shared one.
    """
    c, t, m = (a[:, :fit_crawls] for a in (train_changed, train_tau, train_mask))
    shared = fit_bursts(c, t, m, init=warm["burst"].params if warm else None)
    scaled = fit_bursts(c, t, m, scales=SCALES, init=(warm["burst_scaled"] if warm else shared).params)
    return {"burst": shared, "burst_scaled": scaled}


def _params_record(fit) -> dict:
    p = fit.params
    return {
        "quiet_rate": p.quiet_rate,
        "busy_rate": p.busy_rate,
        "to_busy": p.to_busy,
        "to_quiet": p.to_quiet,
        "busy_probability": p.busy_probability,
        "converged": fit.converged,
    }


def _score(label, changed, tau, mask, preds, n_boot, gen) -> dict:
    rows, winner, _, use = method_scores(
        changed, mask, preds, METHODS, n_boot, gen, baseline="dynamic", diff_key="diff_vs_dynamic"
    )
    return {
        "label": label,
        "n_rows": int(changed.shape[0]),
        "n_scored": int(use.sum()),
        "fraction_changed": float(changed[use].mean()),
        "winner": winner,
        "rows": rows,
    }


def _crawl_unit_hours(name: str, ratio: float) -> float:
    """The mean crawl interval, in hours, of a trace crawled at p = ratio × its rate (as
    :func:`changerate_bayes.validation.prequential.trace_histories` crawls it)."""
    times = as_event_times(load_trace(name)).values
    rate = (times.size - 1) / float(times[-1] - times[0])
    return 1.0 / (ratio * rate)


def _pad(blocks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of several (changed, tau) blocks stacked, padded to one length with a mask."""
    k = max(b[0].shape[1] for b in blocks)
    n = sum(b[0].shape[0] for b in blocks)
    c = np.zeros((n, k), dtype=np.int8)
    t = np.ones((n, k))
    m = np.zeros((n, k), dtype=bool)
    r = 0
    for bc, bt in blocks:
        c[r : r + bc.shape[0], : bc.shape[1]] = bc
        t[r : r + bc.shape[0], : bc.shape[1]] = bt
        m[r : r + bc.shape[0], : bc.shape[1]] = True
        r += bc.shape[0]
    return c, t, m


# ----------------------------------------------------------------------------- study
def run(preset, *, seed: int, progress) -> dict:
    cfg = SIZES[preset.name]
    s_tr, s_boot, s_fold = np.random.SeedSequence(seed).spawn(3)
    gen = np.random.default_rng(s_boot)
    t0 = time.perf_counter()
    hists = trace_histories(cfg, s_tr)
    blocks = []
    n_traces = len({h[0] for h in hists})
    trace_fold = np.random.default_rng(s_fold.spawn(1)[0]).permutation(n_traces) % cfg["trace_folds"]
    for ratio in sorted({h[1] for h in hists}, reverse=True):
        same = [h for h in hists if h[1] == ratio]
        fold_fits, warm = {}, None
        for f in range(cfg["trace_folds"]):
            train = _pad([(h[2], h[3]) for i, h in enumerate(same) if trace_fold[i] != f])
            fold_fits[f] = warm = fit_held_out(*train, cfg["fit_crawls"], warm)
        for j, (name, _, changed, tau) in enumerate(same):
            fits = fold_fits[trace_fold[j]]
            mask = np.ones(changed.shape, dtype=bool)
            preds = baseline_predictions(changed, tau, mask, np.full(changed.shape[0], _crawl_unit_hours(name, ratio)))
            for m, fit in fits.items():
                preds[m] = burst_predictive(changed, tau, params=fit.params, scales=fit.scales).change_probability
            b = _score(name, changed, tau, mask, preds, cfg["n_boot"], gen)
            b.update(
                {
                    "trace": name,
                    "ratio": ratio,
                    "n_crawls": int(changed.shape[1]),
                    "fold": int(trace_fold[j]),
                    "fits": {m: _params_record(f) for m, f in fits.items()},
                }
            )
            blocks.append(b)
            progress(
                f"{name} p = rate/{round(1 / ratio)}: winner {LABELS[b['winner']]} ({time.perf_counter() - t0:.0f} s)"
            )
    changed, tau, mask, pages, mean_tau = ota_history(cfg["ota_max"])
    n = changed.shape[0]
    fold = np.random.default_rng(s_fold).permutation(n) % cfg["folds"]
    preds = baseline_predictions(changed, tau, mask, mean_tau)
    for m in BURSTS:
        preds[m] = np.full(changed.shape, np.nan)
    ota_fits, warm_fits = [], None
    for f in range(cfg["folds"]):
        test, train = fold == f, fold != f
        fits = warm_fits = fit_held_out(changed[train], tau[train], mask[train], cfg["fit_crawls"], warm_fits)
        for m, fit in fits.items():
            preds[m][test] = burst_predictive(
                changed[test], tau[test], mask[test], params=fit.params, scales=fit.scales
            ).change_probability
        ota_fits.append({m: _params_record(fit) for m, fit in fits.items()})
    ota = _score("Open Terms Archive (dating)", changed, tau, mask, preds, cfg["n_boot"], gen)
    ota.update(
        {
            "n_pages": int(n),
            "median_interval_hours": float(np.median(mean_tau)),
            "fits": ota_fits,
            "max_visits": cfg["ota_max"],
        }
    )
    progress(f"OTA: winner {LABELS[ota['winner']]} ({time.perf_counter() - t0:.0f} s)")
    return {
        "bursts": {
            "traces": blocks,
            "ota": ota,
            "settings": {
                "R": cfg["R"],
                "max_crawls": cfg["max_crawls"],
                "fit_crawls": cfg["fit_crawls"],
                "folds": cfg["folds"],
                "trace_folds": cfg["trace_folds"],
                "n_boot": cfg["n_boot"],
                "scales": list(SCALES),
                "ota_max": cfg["ota_max"],
            },
        }
    }


# ----------------------------------------------------------------------------- words
def mean_scores(blocks) -> dict:
    """Mean log score per method over the trace settings."""
    return {m: float(np.mean([_row(b, m)["log_score"] for b in blocks])) for m in METHODS}


def _best_burst(b) -> str:
    return max(BURSTS, key=lambda m: _row(b, m)["log_score"])


def _counts(blocks, m):
    rows = [_row(b, m) for b in blocks]
    return (
        sum(r["diff_vs_dynamic"] > 0 for r in rows),
        [b for b, r in zip(blocks, rows) if r["ci_low"] > 0],
        [b for b, r in zip(blocks, rows) if r["ci_high"] < 0],
    )


def verdict(result: dict) -> tuple[str, bool | None]:
    res = result["bursts"] if "bursts" in result else result
    blocks = res["traces"] + [res["ota"]]
    n = len(blocks)
    ms = mean_scores(res["traces"])
    ota = res["ota"]
    parts = []
    for m in BURSTS:
        better, sig_better, sig_worse = _counts(blocks, m)
        parts.append(
            f"{LABELS[m]}: better than the unit-free random walk on {better} of {n} settings (95% "
            f"block-bootstrap interval above 0 on {len(sig_better)}, below 0 on {len(sig_worse)})"
        )
    text = (
        "The burst model, fitted only on other traces or other pages, against the random walk in predicting "
        "the next crawl. " + "; ".join(parts) + f". Mean log score over the {len(res['traces'])} trace "
        f"settings: burst shared {ms['burst']:.4f}, per-page scale {ms['burst_scaled']:.4f}, random walk "
        f"unit-free {ms['dynamic']:.4f}, former default σ per √hour {ms['dynamic_absolute']:.4f}, SA η=0.5 "
        f"{ms['sa_0.5']:.4f}, "
        f"LLN {ms['lln']:.4f}. On the Open Terms Archive crawls: burst shared "
        f"{_row(ota, 'burst')['log_score']:.4f}, per-page scale {_row(ota, 'burst_scaled')['log_score']:.4f}, "
        f"random walk unit-free {_row(ota, 'dynamic')['log_score']:.4f}, per √hour "
        f"{_row(ota, 'dynamic_absolute')['log_score']:.4f}."
    )
    best = {b["label"] + str(b.get("ratio")): max(_row(b, m)["diff_vs_dynamic"] for m in BURSTS) for b in blocks}
    wins = [b for b in blocks if best[b["label"] + str(b.get("ratio"))] > 0]
    losses = [b for b in blocks if best[b["label"] + str(b.get("ratio"))] <= 0]
    if wins:
        text += " A burst variant scores higher on: " + "; ".join(_setting(b) for b in wins) + "."
    if losses:
        text += (
            " Both score lower on: "
            + "; ".join(f"{_setting(b)} ({best[b['label'] + str(b.get('ratio'))]:+.4f})" for b in losses)
            + "."
        )
    ok = True if not losses else (False if not wins else None)
    return text, ok


def summarize(result: dict) -> dict:
    """One line for the report's summary table (the verdict without its list of settings)."""
    text = verdict(result)[0].split(" A burst variant scores higher on:")[0].split(" Both score lower on:")[0]
    res = result["bursts"]
    blocks = res["traces"] + [res["ota"]]
    wins = sum(1 for b in blocks if max(_row(b, m)["diff_vs_dynamic"] for m in BURSTS) > 0)
    return {
        "verdict": text,
        "key_number": f"a burst variant beats the random walk on {wins} of {len(blocks)}",
        "kind": "finding",
    }


# ----------------------------------------------------------------------------- report
def render(result: dict) -> str:
    res = result["bursts"]
    st = res["settings"]
    parts = [
        "<p>The burst model: a page is quiet (change rate λ0) or busy (λ1 ≥ λ0) and switches quiet → busy at rate "
        "q01 and back at q10 (a two-state Markov-modulated Poisson process). Under crawls that see only whether "
        "the page changed since the last crawl, the filter of the quiet/busy state is exact (closed-form 2 × 2 "
        "matrix exponentials), so P(change within t | crawls so far) is exact too. The four rates are shared by "
        "pages (pooled maximum marginal likelihood: most pages see too few changes to fit four rates of their "
        "own), in units of each page's mean crawl interval; the per-page "
        f"scale variant also averages, per page, over rates × s for s in {st['scales']} (uniform prior).</p>",
        f"<p>No score uses rates fitted on the crawls it scores: on the traces, θ comes from the traces outside "
        f"the scored trace's fold ({st['trace_folds']} folds of the twelve traces) at the same crawl ratio (each "
        f"training row's first {st['fit_crawls']} crawls); on the Open Terms Archive crawls, from the other "
        f"{st['folds'] - 1} of {st['folds']} folds of "
        f"pages. Scores as in the prequential section: mean one-step log score after 20 crawls, probabilities "
        f"clipped to [0.001, 0.999]; traces crawled at Poisson times, p = rate/3 and rate/15, {st['R']} "
        f"replications, at most {st['max_crawls']} crawls. Differences are against the random walk with the "
        f"unit-free default volatilities, with 95% moving-block bootstrap intervals ({st['n_boot']} resamples).</p>",
    ]
    text, ok = verdict(result)
    parts.append(verdict_html(text, ok))
    rows = []
    for b in res["traces"] + [res["ota"]]:
        r = {
            "data": b["label"],
            "p": f"rate/{round(1 / b['ratio'])}" if "ratio" in b else "as crawled",
            "seen": b["fraction_changed"],
            "winner": LABELS[b["winner"]],
        }
        for m in METHODS:
            r[m] = _row(b, m)["log_score"]
        d = _row(b, "burst_scaled")
        r["diff"] = d["diff_vs_dynamic"]
        r["ci"] = f"[{d['ci_low']:+.4f}, {d['ci_high']:+.4f}]"
        rows.append(r)
    parts.append(
        html_table(
            rows,
            [("data", "data"), ("p", "crawl rate"), ("seen", "P(I=1)"), ("winner", "winner")]
            + [(m, LABELS[m]) for m in METHODS]
            + [("diff", "burst (scale) − random walk"), ("ci", "95% bootstrap CI")],
            caption="Mean one-step log score per crawl, by data set (higher is better)",
            digits=4,
        )
    )
    ms = mean_scores(res["traces"])
    parts.append(
        html_table(
            [
                {
                    "method": LABELS[m],
                    "traces": ms[m],
                    "ota": _row(res["ota"], m)["log_score"],
                    "brier": float(np.mean([_row(b, m)["brier"] for b in res["traces"]])),
                }
                for m in METHODS
            ],
            [
                ("method", "method"),
                ("traces", "log score, traces (mean)"),
                ("brier", "Brier, traces (mean)"),
                ("ota", "log score, OTA"),
            ],
            caption="Scores by method",
            digits=4,
        )
    )
    fit_rows = []
    for b in res["traces"]:
        f = b["fits"]["burst"]
        fit_rows.append(
            {
                "data": _setting(b),
                "l0": f["quiet_rate"],
                "l1": f["busy_rate"],
                "q01": f["to_busy"],
                "q10": f["to_quiet"],
                "pb": f["busy_probability"],
            }
        )
    parts.append(
        html_table(
            fit_rows,
            [("data", "held-out trace"), ("l0", "λ0"), ("l1", "λ1"), ("q01", "q01"), ("q10", "q10"), ("pb", "P(busy)")],
            caption="Shared θ fitted without each trace's fold (per mean crawl interval)",
            digits=3,
        )
    )
    ota = res["ota"]
    hrs = ota["median_interval_hours"]
    parts.append(
        html_table(
            [
                {
                    "fold": i + 1,
                    "variant": LABELS[m],
                    "l0": f[m]["quiet_rate"] / hrs,
                    "l1": f[m]["busy_rate"] / hrs,
                    "q01": f[m]["to_busy"] / hrs,
                    "q10": f[m]["to_quiet"] / hrs,
                    "pb": f[m]["busy_probability"],
                }
                for i, f in enumerate(ota["fits"])
                for m in BURSTS
            ],
            [
                ("fold", "held-out fold"),
                ("variant", "variant"),
                ("l0", "λ0 per hour"),
                ("l1", "λ1 per hour"),
                ("q01", "q01 per hour"),
                ("q10", "q10 per hour"),
                ("pb", "P(busy)"),
            ],
            caption=(
                f"θ fitted on the Open Terms Archive pages outside each fold, per mean crawl interval, shown per "
                f"hour at the pages' median mean interval of {hrs:.1f} h (the per-page-scale variant's rates are "
                "its middle scale, s = 1)"
            ),
            digits=4,
        )
    )
    parts.append(
        '<p><small>Open Terms Archive data: ODC-BY 1.0, "Open Terms Archive contributors" (see '
        "changerate_bayes/datasets/data/README.md).</small></p>"
    )
    return "\n".join(str(p) for p in parts)
