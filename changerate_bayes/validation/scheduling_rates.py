"""Optimal crawl rates for known change rates: checks of ``optimal_crawl_rates``.

Three checks of the exact KKT / water-filling solver (paper Section 5):

1. agreement with ``scipy.optimize.minimize(method="SLSQP")`` on small random
   problems (objective value and rates);
2. the KKT certificate on a large problem: one multiplier λ for all crawled pages
   (w Δ/(p+Δ)² for binary freshness, w Δ/(p(p+Δ)) for harmonic staleness) and
   w/Δ <= λ for the pages left out; Σ p = B;
3. wall time against N.

Sizes per preset:

=========  =================  ======================  =========================
preset     SLSQP problems     KKT problem N           timed N
=========  =================  ======================  =========================
quick      4 × N = 20         10^5                    10^4, 10^5, 10^6
default    8 × N = 40         10^6                    10^4 … 10^6
full       8 × N = 40         10^6                    10^4 … 10^7
=========  =================  ======================  =========================

Problems: Δ ~ LogNormal(0, 1.5) (heavy tailed), w ~ LogNormal(0, 1), B = N/2.
"""

from __future__ import annotations

import time

import numpy as np
from scipy import optimize

from changerate_bayes.report import figure_to_html, html_table, summary_row, verdict_html
from changerate_bayes.scheduling import crawl_objective, optimal_crawl_rates, plot_crawl_rates

TITLE = "Optimal crawl rates for known change rates"
KEYS = ("scheduling_rates",)

OBJECTIVES = ("binary_freshness", "harmonic_staleness")


def _sizes(preset):
    return preset.pick(
        quick={"n_slsqp": 4, "n_small": 20, "n_kkt": 10**5, "timed": [10**4, 10**5, 10**6]},
        default={"n_slsqp": 8, "n_small": 40, "n_kkt": 10**6, "timed": [10**4, 10**5, 10**6]},
        full={"n_slsqp": 8, "n_small": 40, "n_kkt": 10**6, "timed": [10**4, 10**5, 10**6, 10**7]},
    )


def _problem(gen, n):
    return gen.lognormal(0.0, 1.5, n), gen.lognormal(0.0, 1.0, n), n / 2.0


def reference_crawl_rates(delta, w, budget, objective="binary_freshness", *, ftol=1e-15, maxiter=2000):
    """Independent reference solution of the optimal-crawl-rate problem by SLSQP.

    ``scipy.optimize.minimize(method="SLSQP")`` with analytic gradients from the uniform
    allocation, for checking :func:`changerate_bayes.scheduling.optimal_crawl_rates`
    on small problems (tests, this study and ``benchmarks/bench_optimal_rates.py``).

    Returns
    -------
    rates : ndarray
        The SLSQP crawl rates (negative round-off clipped to 0).
    success : bool
        SLSQP's own convergence flag.
    """
    delta, w = np.asarray(delta, dtype=float), np.asarray(w, dtype=float)
    if objective == "binary_freshness":
        f = lambda p: -np.sum(w * p / (p + delta))
        g = lambda p: -w * delta / (p + delta) ** 2
        lower = 0.0
    else:
        f = lambda p: np.sum(w * np.log1p(delta / np.maximum(p, 1e-300)))
        g = lambda p: -w * delta / (np.maximum(p, 1e-300) * (p + delta))
        lower = 1e-9
    res = optimize.minimize(
        f,
        np.full(delta.size, budget / delta.size),
        jac=g,
        method="SLSQP",
        bounds=[(lower, budget)] * delta.size,
        constraints=[{"type": "eq", "fun": lambda p: p.sum() - budget, "jac": lambda p: np.ones_like(p)}],
        options={"ftol": ftol, "maxiter": maxiter},
    )
    return np.maximum(res.x, 0.0), bool(res.success)


def _kkt(delta, w, p, objective):
    active = p > 0
    if objective == "binary_freshness":
        lam = w * delta / (p + delta) ** 2
    else:
        lam = w * delta / (p * (p + delta))
    lam_star = float(np.median(lam[active]))
    spread = float(np.max(np.abs(lam[active] / lam_star - 1)))
    if objective == "binary_freshness" and (~active).any():
        violation = float(max(0.0, np.max(w[~active] / delta[~active] / lam_star - 1)))
    else:
        violation = 0.0
    return lam_star, spread, violation, float(active.mean())


def run(preset, *, seed: int, progress) -> dict:
    sz = _sizes(preset)
    gen = np.random.default_rng(seed)
    slsqp_rows = []
    for objective in OBJECTIVES:
        for i in range(sz["n_slsqp"]):  # a handful of small problems
            delta, w, budget = _problem(gen, sz["n_small"])
            ours = optimal_crawl_rates(delta, w, budget, objective=objective)
            ref, ok = reference_crawl_rates(delta, w, budget, objective)
            v_ours = crawl_objective(ours, delta, w, objective=objective)
            v_ref = crawl_objective(ref, delta, w, objective=objective)
            better = (v_ours - v_ref) if objective == "binary_freshness" else (v_ref - v_ours)
            slsqp_rows.append(
                {
                    "objective": objective,
                    "problem": i,
                    "n_pages": sz["n_small"],
                    "slsqp_success": ok,
                    "objective_gain": float(better / abs(v_ref)),
                    "max_rate_difference": float(np.max(np.abs(ours - ref)) / budget),
                }
            )
    progress("SLSQP comparisons done")
    kkt_rows = []
    delta, w, budget = _problem(gen, sz["n_kkt"])
    for objective in OBJECTIVES:
        p = optimal_crawl_rates(delta, w, budget, objective=objective)
        lam, spread, violation, frac = _kkt(delta, w, p, objective)
        kkt_rows.append(
            {
                "objective": objective,
                "n_pages": sz["n_kkt"],
                "multiplier": lam,
                "max_relative_spread": spread,
                "max_inactive_violation": violation,
                "budget_error": float(abs(p.sum() / budget - 1)),
                "fraction_crawled": frac,
                "min_rate": float(p.min()),
            }
        )
    progress("KKT certificates done")
    timing_rows = []
    for n in sz["timed"]:  # a handful of sizes
        delta, w, budget = _problem(gen, n)
        for objective in OBJECTIVES:
            t0 = time.perf_counter()
            optimal_crawl_rates(delta, w, budget, objective=objective)
            timing_rows.append({"objective": objective, "n_pages": n, "seconds": time.perf_counter() - t0})
        progress(f"timed N = {n}")
    # scatter data: p against Δ for both objectives on one problem of 2000 pages
    delta, w, budget = _problem(np.random.default_rng(seed + 1), 2000)
    scatter = [
        {"change_rate": float(d), "weight": float(wi), "binary_freshness": float(pb), "harmonic_staleness": float(ph)}
        for d, wi, pb, ph in zip(
            delta,
            w,
            optimal_crawl_rates(delta, w, budget),
            optimal_crawl_rates(delta, w, budget, objective="harmonic_staleness"),
        )
    ]
    return {"scheduling_rates": {"slsqp": slsqp_rows, "kkt": kkt_rows, "timing": timing_rows, "scatter": scatter}}


def _scatter_figure(rows):
    import matplotlib.pyplot as plt  # matplotlib: heavy, loaded only to draw

    d = np.array([r["change_rate"] for r in rows])
    w = np.array([r["weight"] for r in rows])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=False)
    for ax, key, title in zip(axes, OBJECTIVES, ("binary freshness", "harmonic staleness")):
        plot_crawl_rates(d, np.array([r[key] for r in rows]), w, ax=ax)
        ax.set_title(title)
    return fig


def _timing_figure(rows):
    import matplotlib.pyplot as plt  # matplotlib: heavy, loaded only to draw

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for objective in OBJECTIVES:
        rr = [r for r in rows if r["objective"] == objective]
        ax.loglog([r["n_pages"] for r in rr], [r["seconds"] for r in rr], "o-", label=objective)
    ax.set_xlabel("pages N")
    ax.set_ylabel("seconds")
    ax.legend(fontsize="small")
    return fig


def render(result: dict) -> str:
    res = result["scheduling_rates"]
    sl, kkt, timing = res["slsqp"], res["kkt"], res["timing"]
    worst_gain = min(r["objective_gain"] for r in sl)
    worst_diff = max(r["max_rate_difference"] for r in sl)
    parts = [
        "<p><code>optimal_crawl_rates</code> solves max Σ w<sub>i</sub> p<sub>i</sub>/(p<sub>i</sub>+Δ<sub>i</sub>) "
        "(binary freshness) or min −Σ w<sub>i</sub> ln(p<sub>i</sub>/(p<sub>i</sub>+Δ<sub>i</sub>)) (harmonic "
        "staleness) subject to Σ p<sub>i</sub> = B exactly: for binary freshness the KKT solution "
        "p<sub>i</sub>(λ) = max(0, √(w<sub>i</sub>Δ<sub>i</sub>/λ) − Δ<sub>i</sub>) is inverted by sorting the "
        "breakpoints w<sub>i</sub>/Δ<sub>i</sub> (O(N log N)); for harmonic staleness every page gets "
        "p<sub>i</sub> = 2w<sub>i</sub>Δ<sub>i</sub>s/(Δ<sub>i</sub> + √(Δ<sub>i</sub>² + 4w<sub>i</sub>Δ<sub>i</sub>s)) "
        "and s = 1/λ is found by Newton steps to machine precision.</p>",
        verdict_html(
            f"Against SLSQP on {len(sl)} small problems our objective is never worse (worst relative gain "
            f"{worst_gain:+.1e}; positive = ours better) and the rates agree to {worst_diff:.1e} × B, the accuracy of "
            "SLSQP's stopping rule.",
            worst_gain > -1e-9 and worst_diff < 1e-4,
        ),
    ]
    kkt_ok = all(
        r["max_relative_spread"] < 1e-8 and r["max_inactive_violation"] < 1e-8 and r["budget_error"] < 1e-9 for r in kkt
    )
    parts.append(
        verdict_html(
            "KKT certificate on N = "
            + ", ".join(f"{r['n_pages']:,}" for r in kkt[:1])
            + ": the multiplier is common to "
            "all crawled pages to "
            + ", ".join(f"{r['max_relative_spread']:.1e} ({r['objective']})" for r in kkt)
            + "; no page left out has w/Δ above it; Σp = B to "
            + ", ".join(f"{r['budget_error']:.1e}" for r in kkt)
            + ". "
            + f"Binary freshness leaves {1 - kkt[0]['fraction_crawled']:.1%} of the pages uncrawled (their Δ is too "
            "large for their weight); harmonic staleness crawls every page.",
            kkt_ok,
        )
    )
    parts.append(
        html_table(
            kkt,
            [
                ("objective", "objective"),
                ("n_pages", "N"),
                ("multiplier", "λ"),
                ("max_relative_spread", "max |λ_i/λ − 1| (crawled)"),
                ("max_inactive_violation", "max (w/Δ)/λ − 1 (uncrawled)"),
                ("budget_error", "|Σp/B − 1|"),
                ("fraction_crawled", "fraction crawled"),
            ],
            caption="KKT certificate on a large problem",
        )
    )
    parts.append(
        figure_to_html(
            _scatter_figure(res["scatter"]),
            alt="Optimal crawl rate against change rate for 2000 pages, coloured by weight, for both objectives",
        )
    )
    parts.append(
        "<p>Binary freshness: for a given weight the optimal rate first rises with Δ and then falls to "
        "zero — p<sub>i</sub> is <em>not</em> monotone in Δ<sub>i</sub> (it is monotone in w<sub>i</sub>); "
        "pages that change too fast to be kept fresh are abandoned. Harmonic staleness never abandons a page "
        "and its rates increase with both Δ and w (both monotonicities are property-tested).</p>"
    )
    largest = max(r["n_pages"] for r in timing)
    t_big = {r["objective"]: r["seconds"] for r in timing if r["n_pages"] == largest}
    parts.append(figure_to_html(_timing_figure(timing), alt="Wall time of optimal_crawl_rates against N"))
    parts.append(
        f"<p>Wall time at N = {largest:,}: binary freshness {t_big['binary_freshness']:.2f} s (dominated "
        f"by the sort), harmonic staleness {t_big['harmonic_staleness']:.2f} s. The benchmark script "
        "<code>benchmarks/bench_optimal_rates.py</code> times 10<sup>7</sup> pages.</p>"
    )
    parts.append(
        html_table(
            sl,
            [
                ("objective", "objective"),
                ("problem", "problem"),
                ("n_pages", "N"),
                ("slsqp_success", "SLSQP converged"),
                ("objective_gain", "relative gain over SLSQP"),
                ("max_rate_difference", "max |p − p_SLSQP| / B"),
            ],
            caption="Against scipy.optimize (SLSQP)",
        )
    )
    return "\n".join(parts)


def summarize(result: dict) -> dict:
    """The summary-table row: the exact solver against SLSQP and its KKT certificate."""
    res = result["scheduling_rates"]
    sl, kkt = res["slsqp"], res["kkt"]
    worst_gain = min(r["objective_gain"] for r in sl)
    worst_diff = max(r["max_rate_difference"] for r in sl)
    spread = max(r["max_relative_spread"] for r in kkt)
    ok = (
        worst_gain > -1e-9
        and worst_diff < 1e-4
        and all(
            r["max_relative_spread"] < 1e-8 and r["max_inactive_violation"] < 1e-8 and r["budget_error"] < 1e-9
            for r in kkt
        )
    )
    verdict = (
        "The exact crawl-rate solver is never worse than SLSQP and meets its KKT conditions to machine precision."
        if ok
        else "The exact crawl-rate solver misses SLSQP's objective or its KKT conditions."
    )
    return summary_row(
        verdict=verdict,
        key_number=f"KKT spread {spread:.1e}, rates to {worst_diff:.1e} × B",
        kind="holds" if ok else "fails",
    )
