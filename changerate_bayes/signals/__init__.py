"""Noisy change-indicating signals (sitemaps, feeds, pings, raw-byte changes), learned per page.

The model: a page's changes are a Poisson process of rate Δ (per day); each change is
signalled with probability q (the recall); false signals arrive as an independent
Poisson process of rate ν (per day). After a crawl, with n signals in the time t since,

    P(unchanged | n) = e^{−(1−q)Δt} (ν/(qΔ + ν))^n.

- Data: :class:`SignalData` (per-page crawl intervals τ_k, indicators I_k, signal counts
  n_k) and :func:`signal_data` (from a table of crawls and a table of signals).
- The model: :func:`signal_log_likelihood` (exact), :func:`unchanged_given_signals`
  (the formula above), :func:`simulate_signal_pages`.
- Estimation: :func:`signal_mle` (EM, with Wald intervals), :func:`signal_posterior`
  (Gibbs sampling under a :class:`SignalPrior`, by default :func:`pooled_signal_prior`).
- The predictive: :func:`unchanged_probability`.

The setting is Busa-Fekete et al., "A Scalable Crawling Algorithm Utilizing Noisy
Change-Indicating Signals" (WWW 2025); the likelihood and the estimators are derived in
:doc:`/signals`.
"""

from ._data import SignalData, signal_data
from ._estimation import SignalMLE, SignalPosterior, SignalPrior, pooled_signal_prior, signal_mle, signal_posterior
from ._model import signal_log_likelihood, simulate_signal_pages, unchanged_given_signals
from ._predictive import unchanged_probability

__all__ = [
    "SignalData",
    "SignalMLE",
    "SignalPosterior",
    "SignalPrior",
    "pooled_signal_prior",
    "signal_data",
    "signal_log_likelihood",
    "signal_mle",
    "signal_posterior",
    "simulate_signal_pages",
    "unchanged_given_signals",
    "unchanged_probability",
]
