"""Which estimate to recommend per page: the MLE or the posterior mean, by the evidence.

Simulates 20,000 pages whose change rates are log-normal across pages (log Δ ~ Normal(log 0.5,
1.5), per hour), crawls each k = 5, 20, 50 and 200 times at Poisson times (p = 1 per hour),
and prints, by bins of min(crawls that saw a change, crawls that did not), the RMS error of
log Δ̂ for the interval-censored MLE (``final_estimates(h, "mle")``) and for the posterior
mean (``posterior_summary``, default prior), and their RMS relative error. The bins where the
MLE is 0 or infinite are shown with its share of finite values.

This is the evidence behind :func:`changerate_bayes.crawllog.recommend_rate` (the MLE from
:data:`changerate_bayes.crawllog.IDENTIFIED_MIN` = 10 crawls of each kind). Not a speed
benchmark: run it by hand, ``uv run --locked python benchmarks/check_rate_choice.py``
(about 10 s on 2 cores).
"""

from __future__ import annotations

import warnings

import numpy as np

from changerate_bayes import final_estimates, posterior_summary, simulate_history

BINS = ((0, 1), (1, 3), (3, 5), (5, 10), (10, 20), (20, None))


def main(n_pages: int = 20_000, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    rates = np.exp(rng.normal(np.log(0.5), 1.5, n_pages))
    print(
        f"{'k':>4} {'min(changed, unchanged)':>24} {'pages':>6} {'MLE finite':>10} "
        f"{'RMS log err MLE':>15} {'PM':>6} {'RMS rel err MLE':>15} {'PM':>6}"
    )
    for k in (5, 20, 50, 200):
        h = simulate_history(rates, 1.0, k, n_pages=n_pages, rng=rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mle = final_estimates(h, "mle")
        pm = posterior_summary(h).mean
        changed = h.changed.sum(axis=1)
        least = np.minimum(changed, k - changed)
        for lo, hi in BINS:
            sel = (least >= lo) & (least < (hi if hi is not None else np.inf))
            if sel.sum() < 50:
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                e_mle, e_pm = np.log(mle[sel] / rates[sel]), np.log(pm[sel] / rates[sel])
            ok = np.isfinite(e_mle)
            label = f"[{lo}, {hi})" if hi is not None else f">= {lo}"
            if not ok.any():
                print(
                    f"{k:>4} {label:>24} {sel.sum():>6} {0.0:>10.2f} {'0 or inf':>15} {np.sqrt(np.mean(e_pm**2)):>6.3f}"
                )
                continue
            rms = lambda e: float(np.sqrt(np.mean(e**2)))  # noqa: E731
            print(
                f"{k:>4} {label:>24} {sel.sum():>6} {ok.mean():>10.2f} {rms(e_mle[ok]):>15.3f} "
                f"{rms(e_pm[ok]):>6.3f} {rms(np.expm1(e_mle[ok])):>15.3f} {rms(np.expm1(e_pm[ok])):>6.3f}"
            )


if __name__ == "__main__":
    main()
