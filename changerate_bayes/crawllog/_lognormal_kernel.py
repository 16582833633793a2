"""numba kernel of :func:`.allocate._lognormal_posterior` (imported, and compiled or loaded from
numba's cache, on first use only): one pass over the pages (on all cores) instead of a dozen NumPy passes."""

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, parallel=True)
def lognormal_of_interval(lower, upper, mean, z2):
    """Per page, the log-normal matched to the equal-tailed interval [``lower``, ``upper``]:
    median √(lower · upper) and sd of log Δ log(upper/lower)/``z2`` (``z2`` = 2 z_{(1+level)/2});
    a point mass at ``mean`` (sd 0) where the interval is not 0 < lower < upper < inf."""
    n = mean.size
    median = np.empty(n)
    sd = np.empty(n)
    for i in numba.prange(n):
        lo = lower[i]
        hi = upper[i]
        if lo > 0.0 and hi > lo and hi < math.inf:
            median[i] = math.sqrt(lo) * math.sqrt(hi)
            sd[i] = math.log(hi / lo) / z2
        else:
            median[i] = mean[i]
            sd[i] = 0.0
    return median, sd
