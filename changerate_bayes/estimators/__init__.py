"""Change-rate estimators: Naive, LLN, SA, SAM (Avrachenkov et al.), MLE, moment matching
and Cho & Garcia-Molina's estimators for regular crawls and with the last-modification date
(:func:`last_modified_rate`).

Each is available as a batch trajectory, :func:`estimate_path`, as each page's final
estimate, :func:`final_estimates`, and as a streaming object with
``update(changed, interval=None, mask=None)`` and a ``rate`` property that equals the
trajectory after every update. Histories may hold pages of any length (ragged).

The pieces the estimators are built from, for the validation studies and the
benchmarks: the step-size sequences (:func:`alpha_sequence`, :func:`stepsizes`,
:func:`stepsize_at`, :func:`momenta`, :func:`momentum_at`), the recursions over time-major
arrays (:func:`sa_recursion`, :func:`sam_recursion`), the LLN formula alone
(:func:`lln_path`), the check of a method's options (:func:`check_method_params`), the
Poisson-crawling check (:func:`poisson_distance_segments`, :func:`warn_if_not_poisson`,
``N_EDGES``) and the MLE root path (:class:`RootPath`, ``MLE_KIND``).
"""

from ._base import StreamingEstimator
from ._crawlcheck import N_EDGES, poisson_distance_segments, warn_if_not_poisson
from ._lastmod import last_modified_rate
from ._lln import LLNEstimator, alpha_sequence, lln_path
from ._mle import MLEEstimator
from ._mm import MomentMatchingEstimator
from ._naive import NaiveEstimator
from ._path import METHODS, check_method_params, estimate_path, final_estimates
from ._regular import RegularCrawlEstimator
from ._rootkinds import MLE_KIND
from ._rootpath import RootPath
from ._sa import SAEstimator, sa_recursion, stepsize_at, stepsizes
from ._sam import SAMEstimator, momenta, momentum_at, sam_recursion
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
    "MLE_KIND",
    "MomentMatchingEstimator",
    "N_EDGES",
    "NaiveEstimator",
    "RegularCrawlEstimator",
    "RootPath",
    "SAEstimator",
    "SAMEstimator",
    "SAMStepsizeCheck",
    "StreamingEstimator",
    "alpha_sequence",
    "check_method_params",
    "check_sam_stepsizes",
    "estimate_path",
    "final_estimates",
    "last_modified_rate",
    "lln_path",
    "momenta",
    "momentum_at",
    "poisson_distance_segments",
    "sa_recursion",
    "sam_recursion",
    "stepsize_at",
    "stepsizes",
    "warn_if_not_poisson",
]
