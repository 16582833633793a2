"""Changes that come in bursts: a two-state Markov-modulated Poisson process learned from crawls.

A page is quiet (change rate λ0) or busy (λ1 >= λ0) and switches between the two at
rates q01 (quiet → busy) and q10 (busy → quiet). A crawler sees only whether the page
changed since its previous crawl; the forward filter of the quiet/busy state under such
observations is exact (2 x 2 matrix exponentials in closed form) and O(1) per page:

- :class:`BurstParameters`: the four rates;
- :class:`BurstFilter`: streaming filter and replay learner (``update``, ``rate``,
  ``sample``, ``prob_change_within``);
- :func:`burst_predictive`: one-step predictive probabilities and log likelihood of
  whole histories;
- :func:`fit_bursts`: the rates shared by many pages, by maximum marginal likelihood;
- :func:`simulate_burst_pages`: simulated pages and crawls.
"""

from ._filter import BurstFilter
from ._fit import BurstFit, BurstPredictive, burst_predictive, fit_bursts
from ._model import BurstParameters
from ._simulate import BurstPages, simulate_burst_pages

__all__ = [
    "BurstFilter",
    "BurstFit",
    "BurstPages",
    "BurstParameters",
    "BurstPredictive",
    "burst_predictive",
    "fit_bursts",
    "simulate_burst_pages",
]
