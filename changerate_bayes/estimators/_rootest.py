"""Shared streaming machinery of the MLE and moment-matching estimators."""

from __future__ import annotations

import numpy as np

from ._base import StreamingEstimator
from ._rootkinds import MLE_KIND, _MLEKind, _MMKind
from ._rootpath import CERTIFY, ORDER, SAFE_SPREAD, SAFE_TAU, RootPath
from ._rootsolve import solve_robust
from ._segments import length_buckets, segment_totals

__all__ = ["RootEstimator", "root_path", "root_final", "no_params"]


def no_params(method: str, **params) -> dict:
    """``"mle"`` and ``"mm"`` take no parameters."""
    if params:
        raise TypeError(f"method {method!r} takes no parameters; got {sorted(params)}")
    return {}


def _flat_intervals(history, kind):
    tau = history.flat_intervals
    if tau is None:
        raise ValueError(f"method {kind.name!r} needs the crawl intervals τ: pass `intervals` to CrawlHistory")
    return tau


def _gather(history, pages, m, tau):
    """Rows ``pages`` of the history padded to ``m`` crawls: changed (0), τ (1.0), inside."""
    lengths = history.lengths[pages]
    inside = np.arange(m)[None, :] < lengths[:, None]
    idx = np.where(inside, history.offsets[pages][:, None] + np.arange(m)[None, :], 0)
    changed = np.where(inside, history.flat_changed[idx], 0).astype(np.float64)
    return changed, np.where(inside, tau[idx], 1.0), inside


MLE_K_EXACT = 32  # the compiled MLE path solves prefixes up to this length exactly


def _safe_pages(history, tau):
    """Pages whose intervals all lie in the range of the fast regimes (see ``_rootpath``)."""
    lo = np.minimum.reduceat(tau, history.offsets[:-1])
    hi = np.maximum.reduceat(tau, history.offsets[:-1])
    return (lo >= SAFE_TAU[0]) & (hi <= SAFE_TAU[1]) & (hi / SAFE_SPREAD <= lo)


def _mle_compiled(history, tau, pages, *, path: bool):
    """The compiled MLE path (or final roots) of ``pages``, in parallel over pages.

    Per page, crawl by crawl: the first ``MLE_K_EXACT`` prefixes are solved exactly (a
    predictor from the previous root's local cubic model, then one O(k) evaluation of H
    and its derivatives, accepted when the model's tail bound is below 1e-15; a page's
    first finite root starts from the root for equal intervals, ln(1 + n1 τ̄/T)/τ̄; a
    bracketed Newton solve when neither converges); later ones are tracked with the
    certified Taylor series of ``_rootpath`` (order 18, relative error certified below
    1e-13 with the truncation bound on |t| <= 0.08, or on the root's own radius up to
    0.2): the new
    crawl's series is added in O(order) (the series of the next crawls are computed
    together, vectorised), and the root is found by Halley's method from the previous one
    (two O(order) passes for most crawls). When the root leaves the disk the series is
    re-anchored (O(k)) at Halley's estimate of it, where the series still converges; an
    exact solve is needed only when that fails. Cost per crawl does not depend on the
    page's length beyond the re-anchors, which become rare.
    """
    import numba  # numba: heavy; the package imports without it

    from . import _kernels  # numba kernels: loaded on first use, nothing compiled at import

    changed = history.flat_changed
    width = int(history.lengths[pages].max()) if path and pages.size else 0
    out = np.full((pages.size, width), np.nan)
    final = np.empty(pages.size)
    if path:
        stats = np.zeros(2, dtype=np.int64)
        with numba.parallel_chunksize(1):  # blocks of pages handed out one at a time (load balance)
            _kernels.mle_segments(changed, tau, history.offsets, pages, ORDER, MLE_K_EXACT, CERTIFY, out, final, stats)
    else:
        with numba.parallel_chunksize(256):
            _kernels.mle_final_segments(changed, tau, history.offsets, pages, final)
    return out, final


def _mm_compiled(history, tau, pages):
    """The moment-matching root over all crawls of ``pages`` (compiled, in parallel over pages)."""
    import numba  # numba: heavy; the package imports without it

    from . import _kernels  # numba kernels: loaded on first use, nothing compiled at import

    final = np.empty(pages.size)
    with numba.parallel_chunksize(256):
        _kernels.mm_final_segments(history.flat_changed, tau, history.offsets, pages, final)
    return final


def root_path(history, kind) -> np.ndarray:
    """The root for every prefix of every page, shape ``history.shape``.

    The MLE runs compiled (:func:`_mle_compiled`) on every page whose intervals lie in
    [2^-600, 2^600] within a factor 2^200 of each other, and through :class:`RootPath`
    (which also handles intervals of any magnitude) otherwise; the moment-matching root
    always through :class:`RootPath`. A ragged history is solved there in groups of pages
    of similar length (lengths in [2^b, 2^(b+1))), each padded to its longest page; the
    roots of a page's prefixes depend on that page's crawls only, and the padding is set
    to NaN.
    """
    tau = _flat_intervals(history, kind)
    if kind is MLE_KIND:
        safe = _safe_pages(history, tau)
        fast = np.flatnonzero(safe)
        out = np.full((history.lengths.size, history.n_crawls), np.nan)
        if fast.size:
            out[fast, : int(history.lengths[fast].max())] = _mle_compiled(history, tau, fast, path=True)[0]
        slow = np.flatnonzero(~safe)
        if slow.size:
            for pages, m in length_buckets(history.lengths[slow]):
                rows = slow[pages]
                changed, tau_rows, inside = _gather(history, rows, m, tau)
                roots = RootPath(kind, rows.size).extend(changed, tau_rows)
                out[rows, :m] = np.where(inside, roots, np.nan)
        return out if history.is_ragged else out.reshape(history.shape)
    if not history.is_ragged:
        changed = np.atleast_2d(history.changed)
        solver = RootPath(kind, changed.shape[0])
        out = solver.extend(changed, np.atleast_2d(history.intervals))
        return out.reshape(history.shape)
    out = np.full(history.shape, np.nan)
    for pages, m in length_buckets(history.lengths):
        changed, tau_rows, inside = _gather(history, pages, m, tau)
        roots = RootPath(kind, pages.size).extend(changed, tau_rows)
        out[pages, :m] = np.where(inside, roots, np.nan)
    return out


def root_final(history, kind) -> np.ndarray:
    """The root after each page's last crawl, shape (n_pages,): one exact solve per page.

    Pages where no crawl (every crawl) saw a change give 0.0 (``inf``) from the counts
    alone. The others are solved compiled, in parallel over pages, where their intervals
    lie in [2^-600, 2^600] within a factor 2^200 of each other (``_kernels.mle_final_segments``,
    ``_kernels.mm_final_segments``), else by the bracketed log-space Newton solver over
    their crawls, in groups of similar length.
    """
    tau = _flat_intervals(history, kind)
    n1 = segment_totals(history.flat_changed, history)
    n0 = history.lengths - n1
    out = np.where(n0 == 0, np.inf, 0.0)
    regular = (n1 > 0) & (n0 > 0)
    # compiled: one safeguarded Newton solve per page, in parallel, where the intervals lie
    # in the fast range; the log-space solver below handles any magnitudes
    safe = _safe_pages(history, tau)
    fast = np.flatnonzero(regular & safe)
    if fast.size:
        out[fast] = (
            _mle_compiled(history, tau, fast, path=False)[1] if kind is MLE_KIND else _mm_compiled(history, tau, fast)
        )
    regular &= ~safe
    regular = np.flatnonzero(regular)
    if regular.size == 0:
        return out
    sub_lengths = history.lengths[regular]
    for group, m in length_buckets(sub_lengths):
        pages = regular[group]
        changed, tau_rows, inside = _gather(history, pages, m, tau)
        out[pages] = solve_robust(kind, changed, tau_rows, inside, np.full(pages.size, np.nan))
    return out


class RootEstimator(StreamingEstimator):
    needs_crawl_rate = False
    needs_intervals = True
    _kind: _MLEKind | _MMKind | None = None  # set by each subclass

    def __init__(self, *, crawl_rate=None, n_pages=None):
        super().__init__(crawl_rate=crawl_rate, n_pages=n_pages)
        self.solver_ = RootPath(self._kind, 1 if n_pages is None else n_pages)
        self._pages = None  # per-page history once a mask made the pages' lengths differ

    def _update(self, changed, interval, mask):
        if mask is None and self._pages is None:
            self.solver_.extend(changed.reshape(-1, 1), interval.reshape(-1, 1))
            return
        if self._pages is None:
            self._start_per_page()
        self._update_pages(changed, interval, mask)

    # ------------------------------------------------------------ pages of any length
    def _start_per_page(self):
        """Switch to per-page histories: (changed, τ) buffers with each page's own length."""
        changed, tau = self.solver_.history()
        cap = max(64, 2 * changed.shape[1])
        buf_c = np.zeros((self.n_pages, cap))
        buf_t = np.ones((self.n_pages, cap))
        buf_c[:, : changed.shape[1]] = changed
        buf_t[:, : changed.shape[1]] = tau
        n1 = changed.sum(axis=1)
        self._pages = {
            "changed": buf_c,
            "tau": buf_t,
            "n1": n1,
            "n0": changed.shape[1] - n1,
            "root": self.solver_.root.copy(),
        }

    def _update_pages(self, changed, interval, mask):
        """Add a crawl to the masked pages and solve each of their prefixes exactly (O(k) each)."""
        st = self._pages
        rows = np.flatnonzero(mask)
        if rows.size == 0:  # no page crawled in this step: nothing changes
            return
        pos = self.counts_[rows]  # crawls before this one
        need = int(pos.max()) + 1
        cap = st["changed"].shape[1]
        if need > cap:
            for name, fill in (("changed", 0.0), ("tau", 1.0)):
                grown = np.full((self.n_pages, max(need, 2 * cap)), fill)
                grown[:, :cap] = st[name]
                st[name] = grown
        c = changed[rows]
        st["changed"][rows, pos] = c
        st["tau"][rows, pos] = interval[rows]
        st["n1"][rows] += c
        st["n0"][rows] += 1.0 - c
        n1, n0 = st["n1"][rows], st["n0"][rows]
        new = np.where(n0 == 0, np.inf, 0.0)
        regular = np.flatnonzero((n1 > 0) & (n0 > 0))
        if regular.size:
            lengths = pos[regular] + 1
            for group, m in length_buckets(lengths):
                sub = rows[regular[group]]
                inside = np.arange(m)[None, :] < lengths[group][:, None]
                new[regular[group]] = solve_robust(
                    self._kind, st["changed"][sub, :m], st["tau"][sub, :m], inside, st["root"][sub]
                )
        st["root"][rows] = new

    def _rate(self):
        r = self.solver_.root if self._pages is None else self._pages["root"]
        return r[0] if self.n_pages is None else r

    def merge(self, other):
        """A new estimator holding the crawls of ``self`` then ``other`` (disjoint data).

        The estimate depends on the crawls only as a set, so merging concatenates the
        two stored histories (O(k): the root is re-solved once).

        Raises
        ------
        TypeError, ValueError
            If ``other`` is not of the same class with the same pages, or either was fed
            with a ``mask`` that made its pages' lengths differ.
        """
        self._check_mergeable(other)
        if self._pages is not None or other._pages is not None:
            raise ValueError(
                f"{type(self).__name__}.merge needs estimators whose pages have all had the "
                "same crawls; one of them was updated with a `mask`"
            )
        out = type(self)(crawl_rate=self.crawl_rate, n_pages=self.n_pages)
        for est in (self, other):
            changed, tau = est.solver_.history()
            if changed.shape[1]:
                out.solver_.extend(changed, tau)
        out.n_crawls_ = self.n_crawls_ + other.n_crawls_
        return out
