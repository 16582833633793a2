"""The SA estimator with momentum (SAM) (paper eq. 3 and 10, Theorem 3, Remarks 4-8)."""

from __future__ import annotations

import warnings

import numpy as np

from .._validation import StatisticalWarning, check_positive_scalar
from ._base import StreamingEstimator, check_finite_scalar
from ._sa import range_scale, stepsize_at, stepsizes, unscaled
from ._segments import crawl_rates
from ._stepsizes import check_sam_stepsizes

__all__ = ["SAMEstimator"]


def sam_params(eta=0.75, beta=0.6, omega=1.0, initial=0.0) -> dict:
    """Check ``eta``, ``beta``, ``omega`` (finite, > 0) and a finite ``initial``.

    Any positive exponents are accepted, so that the regimes outside Theorem 3 can be
    studied; :func:`check_sam_stepsizes` says which regime a choice is in.
    """
    return {
        "eta": check_positive_scalar(eta, name="eta"),
        "beta": check_positive_scalar(beta, name="beta"),
        "omega": check_positive_scalar(omega, name="omega"),
        "initial": check_finite_scalar(initial, name="initial"),
    }


def momentum_at(eta, beta, omega, k: int):
    """ζ_k = (β_k − ω η_k)/β_{k−1} for k >= 1, and ζ_0 = 0 (paper eq. 10)."""
    if k == 0:
        return np.zeros(np.broadcast_shapes(np.shape(eta), np.shape(beta), np.shape(omega)))
    return (stepsize_at(beta, k) - omega * stepsize_at(eta, k)) / stepsize_at(beta, k - 1)


def momenta(eta, beta, omega, n: int) -> np.ndarray:
    """ζ_0, ..., ζ_{n−1}; shape (n,) + the broadcast shape of the parameters."""
    etas, betas = stepsizes(eta, n), stepsizes(beta, n)
    omega = np.asarray(omega, dtype=np.float64)
    shape = np.broadcast_shapes(etas.shape, betas.shape, (1,) + omega.shape)
    out = np.zeros(shape)
    out[1:] = (betas[1:] - omega * etas[1:]) / betas[:-1]
    return out


def sam_step(z, z_prev, changed, eta_k, zeta_k, p):
    """One SAM step z_{k+1} = z_k + η_k[I_{k+1}(z_k + p) − z_k] + ζ_k(z_k − z_{k−1}) (eq. 3)."""
    return z + eta_k * (changed * (z + p) - z) + zeta_k * (z - z_prev)


def frozen_value(bad_value, last_finite):
    """The value reported once an iterate has overflowed: ±inf, with the overflow's sign,
    or the sign of the last finite iterate when the overflow produced NaN (inf − inf)."""
    sign = np.where(np.isnan(bad_value), np.sign(last_finite), np.sign(bad_value))
    sign = np.where(sign == 0, 1.0, sign)
    return sign * np.inf


def freeze_divergence(out: np.ndarray, initial) -> np.ndarray:
    """Replace everything from a trajectory's first non-finite iterate on by ±inf (axis 0 = time).

    Returns a boolean array (state shape): which trajectories diverged.
    """
    bad = ~np.isfinite(out)
    diverged = bad.any(axis=0)
    if not diverged.any():
        return diverged
    first = np.argmax(bad, axis=0)
    prev_idx = np.maximum(first - 1, 0)
    last = np.take_along_axis(out, prev_idx[None], axis=0)[0]
    last = np.where(first == 0, np.broadcast_to(initial, last.shape), last)
    value = frozen_value(np.take_along_axis(out, first[None], axis=0)[0], last)
    after = np.arange(out.shape[0]).reshape((-1,) + (1,) * (out.ndim - 1)) >= first
    mask = after & diverged
    out[mask] = np.broadcast_to(value, out.shape)[mask]
    return diverged


def sam_recursion(changed_t, p, eta, beta, omega, initial, keep=None):
    """Run the SAM recursion over crawls (time-major input).

    Parameters are as for :func:`sa_recursion` plus ``beta`` and ``omega``
    (broadcastable against the state). Overflow ("race to infinity") is computed
    without floating-point warnings and reported as ±inf from the first non-finite
    iterate on.

    Returns
    -------
    out : ndarray, shape (len(keep) or k,) + state shape
    diverged : ndarray of bool, state shape
    """
    n = changed_t.shape[0]
    etas = stepsizes(eta, n)
    zetas = momenta(eta, beta, omega, n)
    state_shape = np.broadcast_shapes(
        changed_t.shape[1:], np.shape(p), np.shape(eta), np.shape(beta), np.shape(omega), np.shape(initial)
    )
    z = np.broadcast_to(np.asarray(initial, dtype=np.float64), state_shape).copy()
    z_prev = z.copy()
    keep = np.arange(n) if keep is None else np.asarray(keep)
    out = np.empty((len(keep),) + state_shape)
    slot = 0
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(n):
            z, z_prev = sam_step(z, z_prev, changed_t[k], etas[k], zetas[k], p), z
            if slot < len(keep) and keep[slot] == k:
                out[slot] = z
                slot += 1
        diverged = freeze_divergence(out, initial)
    return out, diverged


def warn_divergence(diverged, eta, beta, omega, stacklevel=3, n_total=None):
    n_bad = int(np.count_nonzero(diverged)) if n_total is None else int(diverged)
    n_total = np.size(diverged) if n_total is None else n_total
    check = check_sam_stepsizes(eta, beta, omega)
    warnings.warn(
        f"SAM iterates overflowed (race to infinity) on {n_bad} of {n_total} trajectories; "
        f"the rate is reported as ±inf from then on. Stepsizes eta={eta:g}, beta={beta:g}, "
        f"omega={omega:g}: regime {check.regime!r} ({check.condition})",
        StatisticalWarning,
        stacklevel=stacklevel,
    )


def _sam_segments(history, eta, beta, omega, initial, *, path: bool):
    from . import _kernels  # numba kernels: loaded on first use, nothing compiled at import

    p = crawl_rates(history, method="sam")
    up = range_scale(p, initial)
    lengths = history.lengths
    n, k = lengths.size, int(lengths.max())
    etas = np.ascontiguousarray(stepsizes(eta, k))
    zetas = np.ascontiguousarray(momenta(eta, beta, omega, k))
    out = np.full((n, k) if path else (n, 0), np.nan)
    final = np.empty(n)
    diverged = np.zeros(n, dtype=bool)
    _kernels.sam_segments(
        history.flat_changed, history.offsets, p / up, etas, zetas, float(initial) / up, up, out, final, diverged
    )
    if diverged.any():
        warn_divergence(diverged, eta, beta, omega, stacklevel=5)
    return out, final


def sam_path(history, *, eta=0.75, beta=0.6, omega=1.0, initial=0.0) -> np.ndarray:
    """z_1, ..., z_k for every page, shape ``history.shape`` (NaN-padded (n_pages, n_crawls)
    if ragged); one compiled pass over the crawls (``_kernels.sam_segments``)."""
    out, _ = _sam_segments(history, eta, beta, omega, initial, path=True)
    return out if history.is_ragged else out.reshape(history.shape)


def sam_final(history, *, eta=0.75, beta=0.6, omega=1.0, initial=0.0) -> np.ndarray:
    """z_k after each page's last crawl, shape (n_pages,), without the path."""
    return _sam_segments(history, eta, beta, omega, initial, path=False)[1]


class SAMEstimator(StreamingEstimator):
    """The SA estimator with momentum (SAM) of Avrachenkov et al., streaming.

    Parameters
    ----------
    {crawl_rate}
    eta : float, default 0.75
        Main stepsize exponent: η_k = (k + 1)^(−eta).
    beta : float, default 0.6
        Momentum stepsize exponent: β_k = (k + 1)^(−beta).
    omega : float, default 1.0
        ω > 0 in ζ_k = (β_k − ω η_k)/β_{k−1}.
    initial : float, default 0.0
        z_{−1} = z_0, the estimate before any crawl.
    {n_pages}

    Attributes
    ----------
    {n_crawls_}
    estimate_, previous_ : ndarray, shape () or (n_pages,)
        z_k and z_{k−1} (one compiled pass checks the I_k and steps every page; the
        new z_{k+1} is written over z_{k−1} and the two arrays swap roles). With a crawl
        rate >= 2^500 the state is kept scaled by 2^-512 (exactly), and these are
        scaled copies.
    diverged_ : bool or ndarray of bool
        Whether the iterates overflowed ("race to infinity"); the rate is then ±inf.

    Warns
    -----
    StatisticalWarning
        When the iterates overflow (typically η < β: ζ_k → −∞); no floating-point
        RuntimeWarning is raised.

    Notes
    -----
    z_{k+1} = z_k + η_k[I_{k+1}(z_k + p) − z_k] + ζ_k(z_k − z_{k−1}) with ζ_0 = 0 (paper
    eq. 3 and 10). Theorem 3 gives z_k → Δ a.s. for β in (1/2, 1] and either η = 2β
    (one-timescale) or β < η < 2β (two-timescale); :func:`check_sam_stepsizes` tells
    which regime a choice is in. Remark 8 conjectures E|z_k − Δ| = Õ(k^{−β/2}).
    Before any crawl ``rate`` is z_0 = ``initial``. O(1) state (z_k, z_{k−1}); order
    dependent, so no merge.

    Like SA it is built on E[I] = Δ/(Δ + p), which holds for Poisson crawling at rate p:
    intervals exponential with mean 1/p (paper eq. 4); with crawls on a fixed schedule it
    tends to p(e^{Δ/p} − 1), not Δ. This object does not see the intervals;
    :func:`estimate_path` checks them and warns.

    References
    ----------
    Avrachenkov, Patil & Thoppe, "Online algorithms for estimating change rates of web
    pages", eq. (3), (10), Theorem 3 and Remarks 4-8.

    Examples
    --------
    >>> from changerate_bayes import SAMEstimator
    >>> est = SAMEstimator(crawl_rate=3.0, eta=1.0, beta=1.0, omega=0.5, initial=2.0)
    >>> est.rate  # z_0 = initial
    2.0
    >>> est = SAMEstimator(crawl_rate=3.0, eta=1.0, beta=1.0, omega=0.5)
    >>> for i in [1, 1]:
    ...     est.update(i)
    >>> est.rate  # z1 = 3; ζ1 = (1/2 - 1/4)/1, z2 = 3 + (6 - 3)/2 + 0.25 * 3
    5.25
    """

    method = "sam"

    def __init__(self, *, crawl_rate=None, eta=0.75, beta=0.6, omega=1.0, initial=0.0, n_pages=None):
        super().__init__(crawl_rate=crawl_rate, n_pages=n_pages)
        params = sam_params(eta, beta, omega, initial)
        self.eta = params["eta"]
        self.beta = params["beta"]
        self.omega = params["omega"]
        self.initial = params["initial"]
        self._up = range_scale(self._p_flat, self.initial)
        self._p_run = self._p_flat / self._up
        self._z = np.full(self._shape, self.initial / self._up)
        self._zp = self._z.copy()
        self.diverged_ = np.zeros(self._shape, dtype=bool)
        self._etas = self._zetas = np.zeros(0)

    @property
    def estimate_(self) -> np.ndarray:
        """z_k: shape () or (n_pages,)."""
        return unscaled(self._z, self._up)

    @property
    def previous_(self) -> np.ndarray:
        """z_{k−1}: shape () or (n_pages,)."""
        return unscaled(self._zp, self._up)

    def path_params(self) -> dict:
        return {"eta": self.eta, "beta": self.beta, "omega": self.omega, "initial": self.initial}

    def _update_checked(self, changed, interval, mask):
        from . import _kernels  # numba kernels: loaded on first use, nothing compiled at import

        arr = self._kernel_input(changed, interval, mask)
        if mask is None:
            k = self.n_crawls_
            eta_k = float(stepsize_at(self.eta, k))
            zeta_k = float(momentum_at(self.eta, self.beta, self.omega, k))
            # z_{k+1} is written over z_{k-1}; then the two buffers swap roles
            bad, n_new = _kernels.sam_update(
                arr.reshape(-1),
                self._z.reshape(-1),
                self._zp.reshape(-1),
                self.diverged_.reshape(-1),
                self._p_run,
                eta_k,
                zeta_k,
            )
            if bad >= 0:
                self._raise_bad_changed(arr, bad)
            self._zp, self._z = self._z, self._zp
        else:
            need = int(self.counts_.max()) + 1
            if self._etas.size < need:
                size = max(need, 2 * self._etas.size)
                self._etas = np.ascontiguousarray(stepsizes(self.eta, size))
                self._zetas = np.ascontiguousarray(momenta(self.eta, self.beta, self.omega, size))
            n_new = _kernels.sam_update_masked(
                arr, mask, self._z, self._zp, self.diverged_, self.counts_, self._p_run, self._etas, self._zetas
            )
        if n_new:
            warn_divergence(n_new, self.eta, self.beta, self.omega, stacklevel=4, n_total=self.diverged_.size)

    def _rate(self):
        return self.estimate_
