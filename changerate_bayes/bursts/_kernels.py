"""Compiled kernels of the burst model: 2 x 2 transition matrices and the forward filter.

For the two-state Markov-modulated Poisson process with generator
Q = [[−q01, q01], [q10, −q10]] and change rates Λ = diag(λ0, λ1), over an interval τ:

- N(τ) = exp((Q − Λ)τ): P(no change in τ, state j at the end | state i at the start);
- C(τ) = exp(Qτ) − N(τ): P(at least one change in τ, state j at the end | state i).

Both are computed in closed form per (page, interval):

* small ντ (ν = max(q01 + λ0, q10 + λ1), ντ <= :data:`SERIES_MAX`): uniformisation,
  N = Σ_n Pois(n; ντ) A^n and C = Σ_n Pois(n; ντ) E_n with A = I + (Q − Λ)/ν,
  E_{n+1} = P E_n + (Λ/ν) A^n, P = I + Q/ν; every term is >= 0, so the entries
  (and P(change) = C·1, of order λτ) keep their relative precision down to τ = 0;
* otherwise the spectral form of the 2 x 2 sub-generator M = Q − Λ (real eigenvalues
  μ1 >= μ2, D = μ1 − μ2): N = e^{μ1 τ} Ñ with Ñ_00 = w0 + w1 e^{−Dτ},
  Ñ_11 = w1 + w0 e^{−Dτ}, Ñ_01 = q01 (1 − e^{−Dτ})/D, Ñ_10 = q10 (1 − e^{−Dτ})/D,
  where w0, w1 >= 0 (w0 + w1 = 1) and μ1 = −2 det(−M)/(tr(−M) + D) are formed
  without cancellation; e^{μ1 τ} is kept as a log factor, so that the likelihood of a
  crawl after a huge τ does not underflow. exp(Qτ) = 1π + e^{−(q01+q10)τ}(I − 1π).

Nothing here is compiled at import time: numba compiles (or loads from its cache) on
first call.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .._vecmath import max_of

#: ντ up to which the uniformisation series is used (its terms beyond :data:`SERIES_TERMS`
#: weigh less than 0.25^13/13! ≈ 1e-17 relative)
SERIES_MAX = 0.25
SERIES_TERMS = 13


@njit(cache=True)
def transition(l0, l1, q01, q10, tau):
    """(n00, n01, n10, n11, log_scale, c00, c01, c10, c11, p0, p1) for one interval.

    N = e^{log_scale} [[n00, n01], [n10, n11]]; C as above; p_i = P(at least one change
    in τ | state i at the start) = (C·1)_i, to full relative precision.
    """
    if tau <= 0.0:
        return 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    nu = max(q01 + l0, q10 + l1)
    x = nu * tau
    if x <= SERIES_MAX:
        # uniformisation: A = I + M/ν, P = A + L, L = Λ/ν; all entries >= 0
        a00 = 1.0 - (q01 + l0) / nu
        a01 = q01 / nu
        a10 = q10 / nu
        a11 = 1.0 - (q10 + l1) / nu
        e0 = l0 / nu
        e1 = l1 / nu
        p00 = a00 + e0
        p11 = a11 + e1
        w = math.exp(-x)  # Pois(0; x)
        # A^n (starts at I), E_n (starts at 0)
        b00, b01, b10, b11 = 1.0, 0.0, 0.0, 1.0
        f00, f01, f10, f11 = 0.0, 0.0, 0.0, 0.0
        n00, n01, n10, n11 = w * b00, 0.0, 0.0, w * b11
        c00, c01, c10, c11 = 0.0, 0.0, 0.0, 0.0
        for n in range(1, SERIES_TERMS + 1):
            # E_n = P E_{n-1} + L A^{n-1}
            g00 = p00 * f00 + a01 * f10 + e0 * b00
            g01 = p00 * f01 + a01 * f11 + e0 * b01
            g10 = a10 * f00 + p11 * f10 + e1 * b10
            g11 = a10 * f01 + p11 * f11 + e1 * b11
            f00, f01, f10, f11 = g00, g01, g10, g11
            # A^n = A A^{n-1}
            h00 = a00 * b00 + a01 * b10
            h01 = a00 * b01 + a01 * b11
            h10 = a10 * b00 + a11 * b10
            h11 = a10 * b01 + a11 * b11
            b00, b01, b10, b11 = h00, h01, h10, h11
            w *= x / n
            n00 += w * b00
            n01 += w * b01
            n10 += w * b10
            n11 += w * b11
            c00 += w * f00
            c01 += w * f01
            c10 += w * f10
            c11 += w * f11
        return n00, n01, n10, n11, 0.0, c00, c01, c10, c11, c00 + c01, c10 + c11
    # spectral form of M = Q − Λ = [[−ap, q01], [q10, −dp]]
    ap = q01 + l0
    dp = q10 + l1
    delta = dp - ap  # = M_00 − M_11
    bc = q01 * q10
    dd = math.sqrt(delta * delta + 4.0 * bc)
    if dd == 0.0:
        w0 = 0.5
        w1 = 0.5
    elif delta >= 0.0:
        w0 = (dd + delta) / (2.0 * dd)
        w1 = 2.0 * bc / (dd * (dd + delta))
    else:
        w1 = (dd - delta) / (2.0 * dd)
        w0 = 2.0 * bc / (dd * (dd - delta))
    det = l0 * q10 + l1 * q01 + l0 * l1
    den = ap + dp + dd
    mu1 = -2.0 * det / den if den > 0.0 else 0.0
    e = math.exp(-dd * tau)
    g = -math.expm1(-dd * tau) / dd if dd > 0.0 else tau
    n00 = w0 + w1 * e
    n11 = w1 + w0 * e
    n01 = q01 * g
    n10 = q10 * g
    ls = mu1 * tau
    scale = math.exp(ls)
    # exp(Qτ)
    s = q01 + q10
    if s > 0.0:
        pi0 = q10 / s
        pi1 = q01 / s
        em = -math.expm1(-s * tau)
        es = math.exp(-s * tau)
        e00 = pi0 + pi1 * es
        e01 = pi1 * em
        e10 = pi0 * em
        e11 = pi1 + pi0 * es
    else:
        e00, e01, e10, e11 = 1.0, 0.0, 0.0, 1.0
    c00 = max(e00 - scale * n00, 0.0)
    c01 = max(e01 - scale * n01, 0.0)
    c10 = max(e10 - scale * n10, 0.0)
    c11 = max(e11 - scale * n11, 0.0)
    p0 = -math.expm1(ls + math.log(n00 + n01))
    p1 = -math.expm1(ls + math.log(n10 + n11))
    return n00, n01, n10, n11, ls, c00, c01, c10, c11, p0, p1


@njit(cache=True)
def _step(a0, a1, changed, l0, l1, q01, q10, tau):
    """One crawl: (new a0, new a1, log P(I | history), P(I = 1 | history), ok)."""
    n00, n01, n10, n11, ls, c00, c01, c10, c11, p0, p1 = transition(l0, l1, q01, q10, tau)
    pc = a0 * p0 + a1 * p1
    if changed:
        v0 = a0 * c00 + a1 * c10
        v1 = a0 * c01 + a1 * c11
        lik = pc
        loglik = math.log(pc) if pc > 0.0 else -math.inf
    else:
        v0 = a0 * n00 + a1 * n10
        v1 = a0 * n01 + a1 * n11
        tot = v0 + v1
        loglik = ls + math.log(tot) if tot > 0.0 else -math.inf
        lik = tot
    tot = v0 + v1
    if changed and not (tot > 0.0) and pc > 0.0:
        # C underflowed to 0 in its difference exp(Qτ) − N (λτ below ~1e-16 while ντ is not
        # small): the end state is then, to that precision, the start state given a change
        v0 = a0 * p0
        v1 = a1 * p1
        tot = v0 + v1
    if not (tot > 0.0) or not (lik > 0.0):
        return a0, a1, -math.inf, pc, False
    return v0 / tot, v1 / tot, loglik, pc, True


@njit(cache=True)
def _mix_weights(lev, out):
    """out[k] = exp(lev[k] − m)/tot, the posterior weights of the scales given their log
    evidence ``lev``; returns m = max lev and tot = Σ_k exp(lev[k] − m) (the log evidence
    of the mixture is m + log tot; NaN weights where every lev is −∞)."""
    k_n = lev.shape[0]
    m = max_of(lev)
    tot = 0.0
    for k in range(k_n):
        out[k] = math.exp(lev[k] - m)
        tot += out[k]
    for k in range(k_n):
        out[k] /= tot
    return m, tot


@njit(cache=True, parallel=True)
def stream_update(alpha, log_ev, changed, tau, mask, l0, l1, q01, q10, scales, status):
    """Add one crawl of the pages in ``mask``: alpha (n, K, 2), log_ev (n, K) in place."""
    n = alpha.shape[0]
    k_n = scales.shape[0]
    for i in prange(n):
        if not mask[i]:
            continue
        for k in range(k_n):
            s = scales[k]
            a0, a1, ll, _, ok = _step(
                alpha[i, k, 0], alpha[i, k, 1], changed[i], s * l0[i], s * l1[i], s * q01[i], s * q10[i], tau[i]
            )
            if ok:
                alpha[i, k, 0] = a0
                alpha[i, k, 1] = a1
            log_ev[i, k] += ll
        # the crawl is impossible under every scale: the page's state is no longer valid
        ok_any = False
        for k in range(k_n):
            if log_ev[i, k] > -math.inf:
                ok_any = True
        if not ok_any:
            status[i] = 1


@njit(cache=True, parallel=True)
def stream_predict(alpha, log_ev, tau, l0, l1, q01, q10, scales, out):
    """P(at least one change within tau[i, j] after the last crawl), mixed over scales: out (n, m)."""
    n = alpha.shape[0]
    k_n = scales.shape[0]
    m = tau.shape[1]
    for i in prange(n):
        w = np.empty(k_n)
        _mix_weights(log_ev[i], w)
        for j in range(m):
            acc = 0.0
            for k in range(k_n):
                s = scales[k]
                _, _, _, _, _, _, _, _, _, p0, p1 = transition(s * l0[i], s * l1[i], s * q01[i], s * q10[i], tau[i, j])
                acc += w[k] * (alpha[i, k, 0] * p0 + alpha[i, k, 1] * p1)
            out[i, j] = min(max(acc, 0.0), 1.0)


def _batch_filter(changed, tau, mask, l0, l1, q01, q10, scales, log_prior, pred, loglik, status):
    """Forward filter over whole padded histories, each page from the stationary state.

    changed, tau, mask: (n, T); l0..q10: (n,); scales, log_prior: (K,) (the prior over
    scales, log probabilities). Writes pred (n, T): the one-step predictive
    P(I_t = 1 | I_1..I_{t−1}) mixed over scales (NaN where ``mask`` is False), loglik
    (n,): log p(I_1..I_T), and status (n,): 1 where a crawl had probability 0.
    """
    n, t_n = changed.shape
    k_n = scales.shape[0]
    for i in prange(n):
        a = np.empty((k_n, 2))
        lev = np.empty(k_n)
        w = np.empty(k_n)
        for k in range(k_n):
            s = q01[i] + q10[i]
            a[k, 0] = q10[i] / s if s > 0.0 else 0.5
            a[k, 1] = q01[i] / s if s > 0.0 else 0.5
            lev[k] = log_prior[k]
        for t in range(t_n):
            if not mask[i, t]:
                pred[i, t] = np.nan
                continue
            _mix_weights(lev, w)
            acc = 0.0
            for k in range(k_n):
                sc = scales[k]
                a0, a1, ll, pc, ok = _step(
                    a[k, 0], a[k, 1], changed[i, t], sc * l0[i], sc * l1[i], sc * q01[i], sc * q10[i], tau[i, t]
                )
                acc += w[k] * pc
                if ok:
                    a[k, 0] = a0
                    a[k, 1] = a1
                lev[k] += ll
            pred[i, t] = min(max(acc, 0.0), 1.0)
        m, tot = _mix_weights(lev, w)
        if m == -math.inf:
            loglik[i] = -math.inf
            status[i] = 1
        else:
            loglik[i] = m + math.log(tot)


#: the forward filter over pages in parallel (many pages), and in one thread (few pages, or
#: many calls in a row as in a likelihood maximisation, where waking threads costs more)
batch_filter = njit(cache=True, parallel=True)(_batch_filter)
batch_filter_serial = njit(cache=True)(_batch_filter)
