"""Output of upstream libraries that is harmless here, silenced where it arises.

Each entry says what it is and why it does not concern this package's user:

- ArviZ 0.x prints, once a day at import, a FutureWarning that a refactor is coming;
  every ArviZ call of this package goes through ``bayes._arviz``, the one adapter to
  change when it lands.
- PyTensor warns that it "could not link to a BLAS installation" (pip's NumPy wheels
  carry a private OpenBLAS it cannot link against) and logs that it uses NumPy's C-API
  for BLAS: this package's models are sums of element-wise terms with no large matrix
  products, so nothing here is slowed.
- nutpie compiles PyMC's generated code with numba, which may issue
  ``NumbaPerformanceWarning`` about that code (not the user's).
- Dask's distributed scheduler logs a WARNING line when each shuffle starts and stops,
  and the nanny logs one when it stops a worker at close: both are normal operation.
"""

from __future__ import annotations

import contextlib
import logging
import warnings

__all__ = ["HARMLESS_WARNINGS", "quiet_dask_logs", "quiet_nutpie_compile", "silence_harmless_upstream_output"]

#: (category, message regex) of the upstream warnings ignored by
#: :func:`silence_harmless_upstream_output`
HARMLESS_WARNINGS = (
    (FutureWarning, r"\s*ArviZ is undergoing a major refactor"),
    (UserWarning, r"PyTensor could not link to a BLAS installation"),
)
_QUIET_LOGGERS = ("pytensor.tensor.blas",)
_DASK_LOGGERS = ("distributed.shuffle", "distributed.nanny", "distributed.batched")


def silence_harmless_upstream_output() -> None:
    """Ignore :data:`HARMLESS_WARNINGS` and PyTensor's BLAS log line in this process.

    Called by the command line and by each process that runs validation studies
    (applications, not the library: importing ``changerate_bayes`` changes no filter).
    """
    for category, message in HARMLESS_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


@contextlib.contextmanager
def quiet_dask_logs():
    """Within the block, Dask's shuffle, nanny and batched-comm loggers show errors only (the last
    logs a closed connection, with its traceback, at INFO when a cluster is stopped by Ctrl-C)."""
    loggers = [logging.getLogger(name) for name in _DASK_LOGGERS]
    levels = [log.level for log in loggers]
    for log in loggers:
        log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for log, level in zip(loggers, levels):
            log.setLevel(level)


@contextlib.contextmanager
def quiet_nutpie_compile():
    """Within the block, numba's performance warnings (about the code nutpie generates
    from a PyMC model) are not shown."""
    from numba.core.errors import NumbaPerformanceWarning  # numba: heavy; the package imports without it

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        yield
