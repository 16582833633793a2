"""Monte Carlo check of the convergence theorems (paper Theorems 1-3, Remarks 6-8).

Sizes per preset (R replications, k crawls; slopes are OLS of log MAE on log k over
``n_fit`` log-spaced k in ``fit``, with a bootstrap 95% CI over replications):

========  =====  =======  =============  =====  ======  =====  =====
preset    R      k_max    fit            n_fit  n_boot  R_mle  k_mle
========  =====  =======  =============  =====  ======  =====  =====
quick     400    20 000   [1e2, 2e4]     20     500     200    5 000
default   1000   20 000   [1e2, 2e4]     20     1000    400    10 000
full      1000   100 000  [1e2, 1e5]     25     1000    1000   10 000
========  =====  =======  =============  =====  ======  =====  =====

MLE and MM (whose paths cost more per crawl) use R_mle replications and k_mle crawls.

Next to each SA and SAM slope the study prints the slope predicted over the same k by
the exact first two moments of the recursion (``_fits.recursion_moments``, with a
normal approximation of the mean absolute error), which separates "not yet asymptotic"
from "not the theorem's rate".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from changerate_bayes import check_sam_stepsizes
from changerate_bayes.estimators import alpha_sequence, momenta, stepsizes
from changerate_bayes.report import figure_to_html, html_table, summary_row, verdict_html

from ._engine import PowerSequence, Setting, log_grid, run_replications
from ._fits import (
    bootstrap_weights,
    finite_or_none,
    fisher_information,
    folded_normal_mean,
    loglog_slope,
    mae_curve,
    recursion_moments,
)

TITLE = "Convergence rates of the online estimators (Theorems 1-3)"
KEYS = ("convergence_rates", "sam_regimes")

DELTA, P = 5.0, 3.0  # the paper's Fig. 2 setting
DELTA_FAST = 1.0  # second change rate for SA with η = 1: ODE slope p/(Δ+p) = 0.75 > 1/2
TOL = 0.05  # slopes within TOL of the theorem's slope count as matching it

_SIZES: dict[str, dict[str, Any]] = {
    "quick": dict(R=400, k_max=20_000, fit=(100, 20_000), n_fit=20, n_boot=500, R_mle=200, k_mle=5_000),
    "default": dict(R=1000, k_max=20_000, fit=(100, 20_000), n_fit=20, n_boot=1000, R_mle=400, k_mle=10_000),
    "full": dict(R=1000, k_max=100_000, fit=(100, 100_000), n_fit=25, n_boot=1000, R_mle=1000, k_mle=10_000),
}

LLN_ALPHAS = [(1.0, "1", -0.5), ("log", "log(k+1)", -0.5), ("sqrt", "√k", -0.5), (PowerSequence(0.9), "k^0.9", -0.1)]
SA_ETAS = [0.5, 0.6, 0.75, 0.9, 1.0]
# (eta, beta, omega, case): the case in the paper's terms
SAM_SETTINGS = [
    (1.2, 0.6, 1.0, "Theorem 3, one timescale"),
    (1.5, 0.75, 1.0, "Theorem 3, one timescale"),
    (2.0, 1.0, 1.0, "Theorem 3, one timescale"),
    (0.75, 0.6, 1.0, "Theorem 3, two timescales (paper's default)"),
    (0.9, 0.6, 1.0, "Theorem 3, two timescales"),
    (1.0, 0.75, 1.0, "Theorem 3, two timescales"),
    (0.75, 0.75, 0.5, "Remark 7: η = β, constant momentum ζ_k → 1 − ω = 0.5"),
    (0.75, 0.75, 1.0, "η = β, ω = 1: ζ_k → 0, behaves like SA (Section 2)"),
    (0.5, 0.6, 1.0, "η < β: γ_k = η_k/β_k → ∞ and ζ_k → −∞ (outside Theorem 3)"),
    (0.4, 0.6, 1.0, "η < β: γ_k = η_k/β_k → ∞ and ζ_k → −∞ (outside Theorem 3)"),
    (1.5, 0.6, 1.0, "Remark 6: η > 2β, γ_k/β_k → 0 (reversed timescales)"),
    (0.6, 0.4, 1.0, "β ≤ 1/2 with β < η ≤ 2β (conjectured to work in Section 2)"),
]


def _sam_label(eta, beta, omega):
    return f"sam η={eta:g} β={beta:g} ω={omega:g}"


def _settings():
    out = [Setting("naive", "naive")]
    out += [Setting(f"lln α={name}", "lln", {"alpha": a}) for a, name, _ in LLN_ALPHAS]
    out += [Setting(f"sa η={eta:g}", "sa", {"eta": eta}) for eta in SA_ETAS]
    out += [Setting(_sam_label(e, b, w), "sam", {"eta": e, "beta": b, "omega": w}) for e, b, w, _ in SAM_SETTINGS]
    return out


def _fit(keep, est, truth, fit_mask, weights):
    """MAE curve, slope over the fit range and its bootstrap CI."""
    mae = mae_curve(est, truth)
    k_fit = keep[fit_mask]
    if not np.isfinite(mae[fit_mask]).all():
        return mae, None, None, None, None
    slope, intercept = loglog_slope(k_fit, mae[fit_mask])
    abs_err = np.abs(est[:, fit_mask] - truth)
    boot_slopes, _ = loglog_slope(k_fit, weights @ abs_err)
    low, high = np.quantile(boot_slopes, [0.025, 0.975])
    return mae, float(slope), float(intercept), float(low), float(high)


def _verdict(slope, low, high, theory, reason_flatter, predicted=None, name="the theorem's slope"):
    """Words for a measured slope against a theorem's rate (an upper bound)."""
    if slope is None:
        return "no slope: some estimates are infinite (diverged)"
    ci = f"{slope:.3f} [{low:.3f}, {high:.3f}]"
    pred = (
        ""
        if predicted is None
        else f"; the exact first two moments of the recursion predict {predicted:.3f} over these k"
    )
    if high < theory - TOL:
        return (
            f"consistent: the measured slope {ci} is steeper than {name} {theory:.3f} "
            f"(a rate is an upper bound; here the error falls faster over these k){pred}"
        )
    if low <= theory + TOL:
        return f"consistent: the measured slope {ci} matches {name} {theory:.3f} (within {TOL}){pred}"
    return (
        f"not consistent with the rate over these k: slope {ci} is flatter than {name} {theory:.3f}; "
        f"{reason_flatter}{pred}"
    )


def _lln_reason(alpha, k_lo, k_hi):
    mu = DELTA / (DELTA + P)
    seq = alpha_sequence(alpha, np.array([k_lo, k_hi]))
    r_lo, r_hi = seq[0] / k_lo, seq[1] / k_hi
    return (
        f"not yet asymptotic: the bias term α_k/k is {r_lo:.3g} at k={k_lo} and {r_hi:.3g} at "
        f"k={k_hi}, not small against 1 − μ = {1 - mu:.3f}, so the error ≈ Δ(α_k/k)/(1 − μ + α_k/k) "
        "still bends towards its asymptotic slope"
    )


def _sa_reason(eta, a, k_hi):
    return (
        f"not yet asymptotic: with η_k = (k+1)^-{eta:g} the noise has not equilibrated "
        f"(2a·k^(1−η)/η = {2 * a * k_hi ** (1 - eta) / eta:.2g} at k={k_hi}, should be ≫ 1; "
        f"a = p/(Δ+p) = {a:.3f}); the error decays like the η = 1 case, k^-min(1/2, a), for now"
    )


def _slowest_mode(omega, a):
    """Smallest real part of the eigenvalues of the linearised SAM matrix [[ω, a], [−1, 0]] (eq. 14)."""
    return float(np.min(np.real(np.linalg.eigvals(np.array([[omega, a], [-1.0, 0.0]])))))


def _sam_theory(eta, beta, omega, a, fit_grid):
    """The rate the one-timescale SAM with β = 1 reaches over the fit range, and why.

    With β_k = γ_k = 1/(k+1) the error of the linearised recursion behaves like SA with
    η = 1: its variance decays like k^{−2 min(Re λ, 1/2)}, λ the eigenvalues of
    [[ω, a], [−1, 0]]. At Re λ = 1/2 exactly the mode λ + λ̄ = 1 resonates with the 1/k²
    noise and the variance decays like (log k)/k, so the error like k^{−1/2}(log k)^{1/2}:
    the log factor that Õ(k^{−β/2}) (Remark 8) hides, which flattens a slope fitted over a
    finite range of k. Returns (slope over ``fit_grid``, explanation) or (None, "").
    """
    if not (math.isclose(beta, 1.0) and math.isclose(eta, 2.0 * beta)):
        return None, ""
    re = _slowest_mode(omega, a)
    k = fit_grid.astype(np.float64)
    disc = omega**2 - 4 * a
    eig = (
        f"complex eigenvalues (ω ± i√(4a − ω²))/2, so Re λ = ω/2 = {re:.3f}"
        if disc < 0
        else f"real eigenvalues (ω ± √(ω² − 4a))/2, the slowest Re λ = {re:.3f}"
    )
    text = (
        f"with β_k = γ_k = 1/(k+1) the error decays like SA's with η = 1: k^-min(1/2, Re λ), λ the "
        f"eigenvalues of the linearised ODE matrix [[ω, a], [−1, 0]] (eq. 14; a = p/(Δ+p) = {a:.3f}), here "
        f"{eig}"
    )
    if abs(re - 0.5) <= 1e-9:
        log_slope = float(loglog_slope(k, k**-0.5 * np.sqrt(np.log(k)))[0])
        full_log = float(loglog_slope(k, k**-0.5 * np.log(k))[0])
        text += (
            f". At Re λ = 1/2 exactly the mode λ + λ̄ = 1 resonates with the 1/k² noise: the error variance "
            f"decays like (log k)/k, so the error like k^-1/2·(log k)^1/2, the logarithmic factor Õ hides. "
            f"Fitted over k in [{int(k[0])}, {int(k[-1])}] that curve has slope {log_slope:.3f} "
            f"(k^-1/2·log k would give {full_log:.3f}); this is the slope to compare with"
        )
        return log_slope, text
    return -min(0.5, re), text


def _predicted_slopes(delta, keep, fit_mask, specs):
    """Slope over the fit range of the MAE predicted by the exact moments of each recursion.

    ``specs``: list of (label, eta, beta, omega), beta None for SA. Returns label -> slope.
    """
    n = int(keep[-1])
    etas = stepsizes(np.array([e for _, e, _, _ in specs]), n)
    zetas = np.zeros_like(etas)
    sam = [i for i, (_, _, b, _) in enumerate(specs) if b is not None]
    if sam:
        zetas[:, sam] = momenta(
            np.array([specs[i][1] for i in sam]),
            np.array([specs[i][2] for i in sam]),
            np.array([specs[i][3] for i in sam]),
            n,
        )
    with np.errstate(over="ignore", invalid="ignore"):
        mean, var = recursion_moments(delta, P, etas, zetas, n)
        mae = folded_normal_mean(mean[keep - 1], var[keep - 1])
        slopes, _ = loglog_slope(keep[fit_mask], mae[fit_mask].T)
    return {label: finite_or_none(v) for (label, *_), v in zip(specs, slopes)}


def _row(estimator, params, delta, fitted, theory, verdict, keep, fit, **extra):
    """The result row of one estimator's setting; ``fitted`` is what :func:`_fit` returned."""
    mae, slope, intercept, low, high = fitted
    row = {
        "estimator": estimator,
        "params": params,
        "change_rate": delta,
        "crawl_rate": P,
        "slope": slope,
        "ci_low": low,
        "ci_high": high,
        "theory_slope": theory,
        "verdict": verdict,
        "intercept": intercept,
        "fit_k_min": int(fit[0]),
        "fit_k_max": int(fit[1]),
        "k": [int(k) for k in keep],
        "mae": [finite_or_none(m) for m in mae],
    }
    row.update(extra)
    return row


def run(preset, *, seed: int, progress) -> dict:
    size = _SIZES[preset.name]
    R, k_max, fit, n_fit = size["R"], size["k_max"], size["fit"], size["n_fit"]
    seeds = np.random.SeedSequence(seed).generate_state(5)
    fit_grid = log_grid(fit[0], fit[1], n_fit)
    keep = np.union1d(log_grid(10, k_max, 30), fit_grid)
    fit_mask = np.isin(keep, fit_grid)
    weights = bootstrap_weights(R, size["n_boot"], seeds[3])
    rows, regimes = [], []

    progress(f"Δ={DELTA:g}, p={P:g}: {R} replications × {k_max} crawls, {len(_settings())} estimators")
    est = run_replications(DELTA, P, k_max, R, seed=int(seeds[0]), settings=_settings(), keep=keep, progress=progress)
    a = P / (DELTA + P)

    # Naive: biased, error tends to Δ²/(Δ+p)
    fitted = _fit(keep, est["naive"], DELTA, fit_mask, weights)
    _, slope, _, low, high = fitted
    limit = P * DELTA / (DELTA + P)
    mean_end = float(est["naive"][:, -1].mean())
    se_end = float(est["naive"][:, -1].std(ddof=1) / math.sqrt(R))
    rows.append(
        _row(
            "naive",
            {},
            DELTA,
            fitted,
            0.0,
            f"biased, as predicted: mean estimate {mean_end:.4f} ± {1.96 * se_end:.4f} at k={k_max} against the limit "
            f"pΔ/(Δ+p) = {limit:.4f}; the error tends to Δ²/(Δ+p) = {DELTA - limit:.4f}, not 0, so its slope "
            f"tends to 0 (measured {slope:.3f}).",
            keep,
            fit,
            limit=limit,
            mean_at_k_max=mean_end,
        )
    )
    # Theorem 1: LLN
    for alpha, name, theory in LLN_ALPHAS:
        fitted = _fit(keep, est[f"lln α={name}"], DELTA, fit_mask, weights)
        _, slope, _, low, high = fitted
        verdict = _verdict(slope, low, high, theory, _lln_reason(alpha, fit[0], fit[1]))
        rows.append(_row("lln", {"alpha": name}, DELTA, fitted, theory, "Theorem 1: " + verdict, keep, fit))
    # exact-moment predictions for SA and for the SAM settings whose momentum stays bounded (η >= β)
    specs: list[tuple[str, float, float | None, float | None]] = [(f"sa η={eta:g}", eta, None, None) for eta in SA_ETAS]
    specs += [(_sam_label(e, b, w), e, b, w) for e, b, w, _ in SAM_SETTINGS if e >= b]
    predicted = _predicted_slopes(DELTA, keep, fit_mask, specs)
    # Theorem 2: SA
    for eta in SA_ETAS:
        theory = -eta / 2 if eta < 1 else -min(0.5, a)
        label = f"sa η={eta:g}"
        fitted = _fit(keep, est[label], DELTA, fit_mask, weights)
        _, slope, _, low, high = fitted
        tag = "Theorem 2" if eta < 1 else f"η = 1: rate k^-min(1/2, p/(Δ+p)) = k^{theory:.3f}"
        verdict = _verdict(slope, low, high, theory, _sa_reason(eta, a, fit[1]), predicted[label])
        rows.append(
            _row(
                "sa",
                {"eta": eta},
                DELTA,
                fitted,
                theory,
                f"{tag}: {verdict}",
                keep,
                fit,
                predicted_slope=predicted[label],
            )
        )
    # Theorem 3 and Remarks 6-8: SAM

    for eta, beta, omega, case in SAM_SETTINGS:
        label = _sam_label(eta, beta, omega)
        values = est[label]
        fitted = _fit(keep, values, DELTA, fit_mask, weights)
        mae, slope, _, low, high = fitted
        bad = ~np.isfinite(values)
        diverged = float(bad[:, -1].mean())
        half = np.flatnonzero(bad.mean(axis=0) >= 0.5)
        final = finite_or_none(mae[-1])
        earlier = mae[np.searchsorted(keep, k_max // 10)]
        converged = bool(diverged == 0 and final is not None and final < 0.1 * DELTA and final < earlier)
        check = check_sam_stepsizes(eta, beta, omega)
        regimes.append(
            {
                "eta": eta,
                "beta": beta,
                "omega": omega,
                "regime": check.regime,
                "converged": converged,
                "final_mae": final,
                "group": case,
                "condition": check.condition,
                "diverged_fraction": diverged,
                "half_diverged_by_k": int(keep[half[0]]) if half.size else None,
                "slope": slope,
                "ci_low": low,
                "ci_high": high,
                "k": [int(k) for k in keep],
                "mae": [finite_or_none(m) for m in mae],
            }
        )
        if check.valid or (omega != 1.0 and converged):  # Theorem 3's regimes and Remark 7
            theory = -beta / 2
            tag = "Remark 8 (conjectured Õ(k^-β/2))" if check.valid else "Remark 7 (outside Theorem 3)"
            fit_theory, why = _sam_theory(eta, beta, omega, a, fit_grid)
            reason = why or "the conjectured Õ(k^-β/2) hides logarithmic factors"
            compare = theory if fit_theory is None else fit_theory
            name = "the conjectured rate's slope" if fit_theory is None else "the log-corrected slope"
            verdict = _verdict(slope, low, high, compare, reason, predicted.get(label), name)
            if fit_theory is not None:
                verdict = f"{why}. Measured: {verdict}"
            rows.append(
                _row(
                    "sam",
                    {"eta": eta, "beta": beta, "omega": omega},
                    DELTA,
                    fitted,
                    theory,
                    f"{tag}: {verdict}",
                    keep,
                    fit,
                    regime=check.regime,
                    predicted_slope=predicted.get(label),
                    theory_slope_over_fit=fit_theory,
                )
            )

    # SA with η = 1 where p/(Δ+p) > 1/2: the rate is k^-1/2
    progress(f"Δ={DELTA_FAST:g}, p={P:g}: SA with η = 1")
    fast = run_replications(
        DELTA_FAST,
        P,
        k_max,
        R,
        seed=int(seeds[1]),
        settings=[Setting("sa η=1", "sa", {"eta": 1.0})],
        keep=keep,
        progress=progress,
    )
    a_fast = P / (DELTA_FAST + P)
    theory = -min(0.5, a_fast)
    pred_fast = _predicted_slopes(DELTA_FAST, keep, fit_mask, [("sa η=1", 1.0, None, None)])["sa η=1"]
    fitted = _fit(keep, fast["sa η=1"], DELTA_FAST, fit_mask, weights)
    _, slope, _, low, high = fitted
    rows.append(
        _row(
            "sa",
            {"eta": 1.0},
            DELTA_FAST,
            fitted,
            theory,
            f"η = 1 with p/(Δ+p) = {a_fast:.2f} > 1/2: rate k^-1/2: "
            + _verdict(slope, low, high, theory, _sa_reason(1.0, a_fast, fit[1]), pred_fast),
            keep,
            fit,
            predicted_slope=pred_fast,
        )
    )

    # MLE (against the Cramér-Rao bound) and MM
    R_m, k_m = size["R_mle"], size["k_mle"]
    fit_m = (fit[0], k_m)
    fit_grid_m = log_grid(fit_m[0], k_m, n_fit)
    keep_m = np.union1d(log_grid(10, k_m, 25), fit_grid_m)
    fit_mask_m = np.isin(keep_m, fit_grid_m)
    weights_m = bootstrap_weights(R_m, size["n_boot"], seeds[4])
    progress(f"Δ={DELTA:g}, p={P:g}: MLE and MM, {R_m} replications × {k_m} crawls")
    roots = run_replications(
        DELTA,
        P,
        k_m,
        R_m,
        seed=int(seeds[2]),
        settings=[Setting("mle", "mle"), Setting("mm", "mm")],
        keep=keep_m,
        progress=progress,
    )
    info = fisher_information(DELTA, P)
    for name in ("mle", "mm"):
        values = roots[name]
        fitted = _fit(keep_m, values, DELTA, fit_mask_m, weights_m)
        _, slope, _, low, high = fitted
        end = values[:, -1]
        ratio = float(k_m * end.var(ddof=1) * info)
        boot = k_m * info * (weights_m @ end**2 - (weights_m @ end) ** 2) * R_m / (R_m - 1)
        r_low, r_high = (float(v) for v in np.quantile(boot, [0.025, 0.975]))
        crlb = (
            f"k·Var(Δ̂)·I(Δ) = {ratio:.3f} [{r_low:.3f}, {r_high:.3f}] at k={k_m} "
            f"(I(Δ) = (2p/Δ³)ζ(3, 1+p/Δ) = {info:.5f} per crawl; 1 means the Cramér-Rao bound is attained)"
        )
        verdict = _verdict(slope, low, high, -0.5, "flatter than k^-1/2 over these k")
        if name == "mle":
            efficient = r_low <= 1.1 and r_high >= 0.9
            verdict += ("; efficient: " if efficient else "; not (yet) efficient: ") + crlb
        else:
            verdict += f"; variance relative to the MLE's bound: {crlb}"
        rows.append(
            _row(
                name,
                {},
                DELTA,
                fitted,
                -0.5,
                verdict,
                keep_m,
                fit_m,
                crlb_ratio=ratio,
                crlb_ci_low=r_low,
                crlb_ci_high=r_high,
                fisher_information=info,
            )
        )
    return {"convergence_rates": rows, "sam_regimes": regimes}


# ---------------------------------------------------------------------------- render


def _curve(row, cap):
    """k and MAE of a row, with infinite or blown-up values (> cap) masked for log axes."""
    k = np.array(row["k"], dtype=float)
    mae = np.array([np.nan if m is None or m > cap else m for m in row["mae"]])
    return k, mae


_GREEK = {"alpha": "α", "eta": "η", "beta": "β", "omega": "ω"}


def _params_text(params):
    return ", ".join(
        f"{_GREEK.get(p, p)}={v:g}" if isinstance(v, float) else f"{_GREEK.get(p, p)}={v}" for p, v in params.items()
    )


def _loglog_panel(ax, rows, title):
    top, bottom = 0.0, np.inf
    for i, row in enumerate(rows):
        k, mae = _curve(row, 1e3 * row["change_rate"])
        top = max(top, float(np.nanmax(mae, initial=0.0)))
        bottom = min(bottom, float(np.nanmin(np.where(mae > 0, mae, np.nan), initial=np.inf)))
        label = row["estimator"] + " " + _params_text(row["params"])
        if row["change_rate"] != DELTA:
            label += f" (Δ={row['change_rate']:g})"
        if row.get("slope") is not None:
            theory = f"theory {row['theory_slope']:.2f}"
            if row.get("theory_slope_over_fit") is not None:
                theory += f", {row['theory_slope_over_fit']:.2f} with the log factor"
            label += f": slope {row['slope']:.2f} ({theory})"
        line = ax.loglog(k, mae, "o", ms=3, label=label, color=f"C{i}")[0]
        if row.get("slope") is not None:
            kf = np.geomspace(row["fit_k_min"], row["fit_k_max"], 20)
            ax.loglog(kf, np.exp(row["intercept"]) * kf ** row["slope"], "-", color=line.get_color(), lw=1)
    ax.set_xlabel("crawls k")
    ax.set_ylabel("mean absolute error E|Δ̂_k − Δ|")
    ax.set_title(title, fontsize=10)
    if 0 < bottom < top:  # head room for the legend (~0.04 of the height per entry) above the curves
        share = min(0.6, 0.045 * (len(rows) + 1) + 0.04)
        decades = math.log10(top / bottom) + 0.1
        ax.set_ylim(bottom / 10**0.05, top * 10 ** (decades * share / (1 - share)))
    ax.legend(fontsize=8.5, loc="upper right")
    ax.grid(True, which="both", alpha=0.3)


def render(result: dict) -> str:
    import matplotlib.pyplot as plt  # matplotlib: heavy, loaded only to draw

    rows = result["convergence_rates"]
    regimes = result["sam_regimes"]
    parts = [
        "<p>Each theorem bounds the mean absolute error E|estimate − Δ| by C·k^s; the slope s is "
        "fitted by OLS of log MAE on log k (lines), with a bootstrap 95% CI over replications. "
        "A bound is an upper bound: a steeper measured slope is consistent with it, a flatter one "
        f"is not (we allow {TOL} for the curvature of finite k). Δ = {DELTA:g}, p = {P:g} unless "
        "stated.</p>"
    ]
    panels = [
        ([r for r in rows if r["estimator"] == "lln"], "Theorem 1: LLN, α_k choices"),
        ([r for r in rows if r["estimator"] == "sa"], "Theorem 2: SA, η choices (and η = 1)"),
        ([r for r in rows if r["estimator"] == "sam"], "Theorem 3 / Remarks 7-8: SAM"),
        ([r for r in rows if r["estimator"] in ("naive", "mle", "mm")], "Baselines: Naive, MLE, MM"),
    ]
    fig, axes = plt.subplots(2, 2, figsize=(13, 10), layout="constrained")
    for ax, (sub, title) in zip(axes.ravel(), panels):
        _loglog_panel(ax, sub, title)
    base = [r for r in rows if r["estimator"] == "mle"]
    if base:
        info = base[0]["fisher_information"]
        kk = np.geomspace(10, base[0]["k"][-1], 50)
        axes[1, 1].loglog(kk, np.sqrt(2 / (math.pi * kk * info)), "k--", lw=1, label="Cramér-Rao: √(2/(π k I(Δ)))")
        axes[1, 1].legend(fontsize=8.5)
    parts.append(
        figure_to_html(
            fig,
            alt="Log-log mean absolute error against k with fitted slope lines "
            "for the LLN, SA, SAM, Naive, MLE and MM estimators",
        )
    )
    table = [dict(r, params=_params_text(r["params"]) or "—") for r in rows]
    parts.append(
        html_table(
            table,
            [
                ("estimator", "estimator"),
                ("params", "parameters"),
                ("change_rate", "Δ"),
                ("slope", "slope"),
                ("ci_low", "CI low"),
                ("ci_high", "CI high"),
                ("theory_slope", "theorem's slope"),
                ("predicted_slope", "predicted over these k (exact moments)"),
                ("verdict", "verdict"),
            ],
            caption="Measured error slopes against the theorems (slopes of log MAE on log k)",
        )
    )
    bad = [r for r in rows if "not consistent" in r["verdict"]]
    ok = not bad
    summary = f"{len(rows) - len(bad)} of {len(rows)} measured rates are consistent with their theorem or conjecture."
    if bad:
        summary += (
            " Not consistent over the measured k: "
            + "; ".join(
                f"{r['estimator']} {_params_text(r['params'])} (slope {r['slope']:.3f} vs {r['theory_slope']:.3f})"
                for r in bad
            )
            + ". The reasons are given in the table."
        )
    parts.append(verdict_html(summary, ok if ok else None))

    fig, ax = plt.subplots(figsize=(11, 5.5), layout="constrained")
    for i, g in enumerate(regimes):
        k, mae = _curve(g, 1e3 * DELTA)
        style = "-" if g["regime"] != "invalid" else "--"
        ax.loglog(
            k,
            mae,
            style,
            color=f"C{i % 10}",
            label=f"η={g['eta']:g} β={g['beta']:g} ω={g['omega']:g} "
            f"({g['regime']}{', diverged' if g['diverged_fraction'] > 0 else ''})",
        )
    ax.set_xlabel("crawls k")
    ax.set_ylabel("mean absolute error")
    ax.set_title(
        "SAM stepsize regimes (dashed: outside Theorem 3; lines end where the error exceeds 1000Δ)", fontsize=10
    )
    ax.legend(fontsize=8.5, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(True, which="both", alpha=0.3)
    parts.append(figure_to_html(fig, alt="SAM mean absolute error against k for valid and invalid stepsize regimes"))
    parts.append(
        html_table(
            regimes,
            [
                ("eta", "η"),
                ("beta", "β"),
                ("omega", "ω"),
                ("regime", "regime"),
                ("group", "case"),
                ("converged", "converged"),
                ("final_mae", "final MAE"),
                ("diverged_fraction", "diverged"),
                ("condition", "condition"),
            ],
            caption="SAM regimes (converged: no overflow, final MAE < 0.1Δ and still falling; "
            "diverged: share of runs whose iterates overflowed)",
        )
    )
    parts.append(verdict_html(_regimes_verdict(regimes), _regimes_ok(regimes)))
    return "\n".join(str(p) for p in parts)


def _regimes_ok(regimes):
    valid_ok = all(g["converged"] for g in regimes if g["regime"] != "invalid")
    return valid_ok and all(g["diverged_fraction"] > 0 for g in regimes if g["eta"] < g["beta"])


def _setting(g):
    return f"η = {g['eta']:g}, β = {g['beta']:g}" + ("" if g["omega"] == 1.0 else f", ω = {g['omega']:g}")


def _outcome(g):
    if g["diverged_fraction"] > 0:
        return f"diverged in {100 * g['diverged_fraction']:.0f}% of the runs"
    mae = "" if g["final_mae"] is None else f" (final MAE {g['final_mae']:.3f})"
    return ("converged" if g["converged"] else "did not converge within the measured k") + mae


def _regimes_verdict(regimes):
    """The SAM regimes in words, naming every setting and the paper's remark it tests."""
    valid = [g for g in regimes if g["regime"] != "invalid"]
    bad = [g for g in valid if not g["converged"]]
    text = (
        f"Every stepsize choice inside Theorem 3 converged ({'; '.join(_setting(g) for g in valid)}). "
        if not bad
        else "Inside Theorem 3 but not converged within the measured k: "
        + "; ".join(f"{_setting(g)}: {_outcome(g)}" for g in bad)
        + ". "
    )
    races = [g for g in regimes if g["eta"] < g["beta"]]
    if races:
        text += (
            "With η < β (γ_k = η_k/β_k → ∞, ζ_k → −∞, outside Theorem 3) the iterates raced to infinity: "
            + "; ".join(
                f"{_setting(g)} in {100 * g['diverged_fraction']:.0f}% of the runs"
                + (
                    f" (half of the runs had overflowed by k = {g['half_diverged_by_k']})"
                    if g.get("half_diverged_by_k")
                    else ""
                )
                for g in races
            )
            + " (reported as ±inf, without overflow warnings). "
        )
    for g in regimes:
        if g["regime"] != "invalid" or g["eta"] < g["beta"]:
            continue
        if g["eta"] > 2 * g["beta"]:
            text += (
                f"Remark 6 (η > 2β: γ_k/β_k → 0, reversed timescales) reports that simulations suggest a race "
                f"to infinity; here {_setting(g)} {_outcome(g)}. "
            )
        elif g["eta"] == g["beta"] and g["omega"] != 1.0:
            text += (
                f"Remark 7 (η = β, constant momentum ζ_k → 1 − ω = {1 - g['omega']:g}), which the paper says "
                f"shows promise: {_setting(g)} {_outcome(g)}. "
            )
        elif g["eta"] == g["beta"]:
            text += f"η = β with ω = 1 (ζ_k → 0, SA-like, Section 2): {_setting(g)} {_outcome(g)}. "
        elif g["beta"] <= 0.5:
            text += f"β ≤ 1/2, which Section 2 conjectures also works: {_setting(g)} {_outcome(g)}. "
        else:
            text += f"Outside Theorem 3: {_setting(g)} {_outcome(g)}. "
    return text.strip()


def summarize(result: dict) -> dict:
    """The summary-table row: measured error slopes consistent with Theorems 1-3, and the
    SAM stepsize regimes."""
    rows, regimes = result["convergence_rates"], result["sam_regimes"]
    bad = [r for r in rows if "not consistent" in r["verdict"]]
    regimes_ok = _regimes_ok(regimes)
    verdict = f"{len(rows) - len(bad)} of {len(rows)} fitted error slopes are consistent with their theorem; " + (
        "the SAM stepsize regimes behave as Theorem 3 says."
        if regimes_ok
        else "some SAM stepsize regimes do not behave as Theorem 3 says."
    )
    kind = "holds" if not bad and regimes_ok else ("mixed" if len(bad) < len(rows) else "fails")
    return summary_row(verdict=verdict, key_number=f"{len(rows) - len(bad)} / {len(rows)} slopes", kind=kind)
