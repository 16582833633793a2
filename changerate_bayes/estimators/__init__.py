"""Change-rate estimators: Naive, LLN, SA, SAM (Avrachenkov et al.), MLE, moment matching
and Cho & Garcia-Molina's estimators for regular crawls and with the last-modification date
(:func:`last_modified_rate`).

Each is available as a batch trajectory, :func:`estimate_path`, as each page's final
estimate, :func:`final_estimates`, and as a streaming object with
``update(changed, interval=None, mask=None)`` and a ``rate`` property that equals the
trajectory after every update. Histories may hold pages of any length (ragged).
"""

from ._base import StreamingEstimator
from ._lastmod import last_modified_rate
from ._lln import LLNEstimator
from ._mle import MLEEstimator
from ._mm import MomentMatchingEstimator
from ._naive import NaiveEstimator
from ._path import METHODS, estimate_path, final_estimates
from ._regular import RegularCrawlEstimator
from ._sa import SAEstimator
from ._sam import SAMEstimator
from ._stepsizes import SAMStepsizeCheck, check_sam_stepsizes

#: The streaming estimator class of each method name.
ESTIMATORS = {
    cls.method: cls
    for cls in (
        NaiveEstimator,
        LLNEstimator,
        SAEstimator,
        SAMEstimator,
        MLEEstimator,
        MomentMatchingEstimator,
        RegularCrawlEstimator,
    )
}

__all__ = [
    "ESTIMATORS",
    "METHODS",
    "LLNEstimator",
    "MLEEstimator",
    "MomentMatchingEstimator",
    "NaiveEstimator",
    "RegularCrawlEstimator",
    "SAEstimator",
    "SAMEstimator",
    "SAMStepsizeCheck",
    "StreamingEstimator",
    "check_sam_stepsizes",
    "estimate_path",
    "final_estimates",
    "last_modified_rate",
]
