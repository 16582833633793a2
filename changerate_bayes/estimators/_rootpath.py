"""Trajectories of the roots of the MLE and moment-matching equations, crawl by crawl.

Both estimators solve an equation F_k(Δ) = Σ_{j≤k} φ(I_j, τ_j, Δ) − T_k = 0 whose terms
are completely monotone in Δ, so the root is unique (``_rootkinds``). A path needs the
root for every prefix k; re-solving each from scratch costs O(k) per evaluation and
O(k²) per path. Three regimes keep the cost low and the roots exact:

1. **The first crawls** (prefix length <= ``K_EXACT``): the root moves a lot from one
   crawl to the next, so each prefix is solved exactly, crawl by crawl for all pages at
   once. A predictor (the local cubic model of the previous root's equation plus the new
   crawl's exact term) is refined by one evaluation of the scale-free function H and its
   first three derivatives over the prefix (O(k) each) and a local cubic step; the
   root is accepted when the estimated truncation error of that model is below 1e-15
   (``_rootsolve.local_error``), which takes one evaluation for most prefixes. Rows that
   do not converge in ``LOCAL_ITER`` evaluations, and the first finite root of each page,
   go to the robust solver.
2. **Later crawls**: the sums are kept as Taylor coefficients around an *anchor* Δ_a in
   the scaled variable t = (Δ − Δ_a)/Δ_a,

       Σ_j φ(Δ_a(1 + t)) = Σ_n A_n t^n,   A_n = Σ_j c_n(Δ_a τ_j),

   so adding crawl k costs O(order) and the root for prefix k is a root of a polynomial
   of fixed degree, found by Newton's method from t = 0, for |t| <= ρ. Each accepted
   root is certified: the truncation error of the series on |t| <= ρ has an explicit
   bound E_k (from complete monotonicity, or the Lagrange remainder of exp), the root must
   lie in [−ρ, ρ] with margin E_k, and E_k/|Q'(t*)| (the root's error in t) must be below
   1e-13. When a prefix fails (the root drifted beyond ρ, or the bound is too loose), its
   root is solved exactly by the robust solver and the series is re-anchored there
   (O(k)); this is rare once the estimate has settled.
3. **Intervals of extreme magnitude** (a page with an interval outside
   [2^-600, 2^600] ≈ [2e-181, 4e180], or whose longest interval exceeds 2^200 times its
   shortest): from that crawl on, every prefix of the page is solved by the robust
   log-space solver (``_rootsolve.solve_robust``), which converges for any finite
   positive intervals. It costs O(k) per prefix, so O(k²) per path, for such pages only.

Everything is vectorised over pages, in chunks of ``PAGE_CHUNK`` pages, so time and
memory grow linearly with the number of pages. A page's numbers do not depend on the
other pages (sums over a prefix run in an order fixed by the page's own crawls), and the
streaming estimators, which add one crawl at a time, follow the same three regimes, so
they agree with the batch path to the accuracy above.
"""

from __future__ import annotations

import numpy as np

from ._rootkinds import MLE_KIND, MM_KIND, RHO, powers
from ._rootsolve import cubic_root, local_error, local_sums, shift, solve_robust

__all__ = ["RootPath", "MLE_KIND", "MM_KIND"]

ORDER = 18  # Taylor order N
CERTIFY = 1e-13  # largest accepted bound on the root's relative error (Taylor tracking)
K_EXACT = 128  # prefixes up to this length are solved exactly, crawl by crawl
LOCAL_TOL = 1e-15  # accepted estimated relative error of the local cubic model's root
LOCAL_ITER = 3  # local evaluations per prefix before falling back to the robust solver
PREDICTOR_ITER = 2  # Newton steps on the predictor's model (O(1) per page each)
PAGE_CHUNK = 4096  # pages processed together (bounds memory; time is linear in pages)
WINDOW_ELEMENTS = 2**16  # pages × crawls per vectorised Taylor block (bounds memory: × order)
MIN_WINDOW, MAX_WINDOW = 8, 8192
REANCHOR_CHUNK = 2048
REANCHOR_ELEMENTS = 2**22  # pages × prefix length solved and re-expanded at once (bounds memory)
SAFE_TAU = (2.0**-600, 2.0**600)  # intervals handled by the fast regimes 1-2
SAFE_SPREAD = 2.0**200  # largest ratio of a page's longest to shortest interval there


def _prefix_total(values: np.ndarray, start: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """start + Σ of the first ``lengths`` entries along the last axis, added sequentially."""
    acc = np.concatenate([start[..., None], values], axis=-1).cumsum(axis=-1)
    idx = np.broadcast_to(lengths, acc.shape[:-1])[..., None]
    return np.take_along_axis(acc, idx, axis=-1)[..., 0]


def _horner(coef: np.ndarray, t: np.ndarray):
    """Q(t) = Σ_n coef[n] t^n and Q'(t) (coef along axis 0; sums run over n in order)."""
    pw = powers(t, coef.shape[0] - 1)
    q = (coef * pw).sum(axis=0)
    n = np.arange(1, coef.shape[0]).reshape((-1,) + (1,) * t.ndim)
    dq = (coef[1:] * n * pw[:-1]).sum(axis=0)
    return q, dq


def _rows(arr, rows, j):
    """arr[rows, :j], as a view when ``rows`` is an increasing contiguous range."""
    if rows.size == 1 or (rows.size and rows[-1] - rows[0] + 1 == rows.size and (np.diff(rows) == 1).all()):
        return arr[rows[0] : rows[-1] + 1, :j]
    return arr[rows, :j]


class RootPath:
    """Running state of the MLE or MM root for ``n_pages`` pages (the whole history is kept).

    Parameters
    ----------
    kind : MLE_KIND or MM_KIND
    n_pages : int

    Attributes
    ----------
    root : ndarray, shape (n_pages,)
        The root after the last crawl (NaN before any crawl).
    n_exact : int
        Prefixes (pages × crawls) solved by the robust solver, for benchmarks.
    n_reanchor : int
        Re-anchors of the Taylor tracking (each O(k)), for benchmarks.
    """

    def __init__(self, kind, n_pages: int):
        self.kind = kind
        self.n_pages = n_pages
        self.order = ORDER
        self.length = 0
        self._changed = np.empty((n_pages, 64))
        self._tau = np.empty((n_pages, 64))
        self.anchor = np.ones(n_pages)  # any Δ_a > 0 is a valid expansion point
        self.coef = np.zeros((self.order + 1, n_pages))
        self.err = np.zeros(n_pages)
        self.expanded = np.ones(n_pages, dtype=bool)  # coef/err hold the whole prefix
        self.target = np.zeros(n_pages)
        self.n_changed = np.zeros(n_pages)
        self.n_unchanged = np.zeros(n_pages)
        self.root = np.full(n_pages, np.nan)
        self.local = np.zeros((4, n_pages))  # H and its t-derivatives at the root (regime 1)
        self.has_local = np.zeros(n_pages, dtype=bool)
        self.tau_min = np.full(n_pages, np.inf)
        self.tau_max = np.zeros(n_pages)
        self.unsafe = np.zeros(n_pages, dtype=bool)
        self.n_exact = 0
        self.n_reanchor = 0

    # ----------------------------------------------------------------- history
    def _append(self, changed, tau):
        add = changed.shape[1]
        need = self.length + add
        if need > self._changed.shape[1]:
            cap = max(need, 2 * self._changed.shape[1])
            for name in ("_changed", "_tau"):
                old = getattr(self, name)
                new = np.empty((self.n_pages, cap))
                new[:, : self.length] = old[:, : self.length]
                setattr(self, name, new)
        self._changed[:, self.length : need] = changed
        self._tau[:, self.length : need] = tau
        self.length = need

    def history(self):
        """The stored (changed, intervals), shape (n_pages, k)."""
        return self._changed[:, : self.length], self._tau[:, : self.length]

    def _safe_stop(self, tau):
        """Per page, the first new crawl from which its intervals leave the fast regimes."""
        lo = np.minimum(np.minimum.accumulate(tau, axis=1), self.tau_min[:, None])
        hi = np.maximum(np.maximum.accumulate(tau, axis=1), self.tau_max[:, None])
        bad = (lo < SAFE_TAU[0]) | (hi > SAFE_TAU[1]) | (hi / SAFE_SPREAD > lo)
        stop = np.where(bad.any(axis=1), np.argmax(bad, axis=1), tau.shape[1])
        stop[self.unsafe] = 0
        self.tau_min, self.tau_max = lo[:, -1], hi[:, -1]
        self.unsafe |= bad[:, -1]
        return stop

    # ----------------------------------------------------------------- public
    def extend(self, changed: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """Add crawls (arrays (n_pages, L)); return the roots after each, shape (n_pages, L)."""
        changed = np.ascontiguousarray(changed, dtype=np.float64)
        tau = np.ascontiguousarray(tau, dtype=np.float64)
        start = self.length
        self._append(changed, tau)
        n_new = changed.shape[1]
        stop = self._safe_stop(tau)
        out = np.empty((self.n_pages, n_new))
        for c0 in range(0, self.n_pages, PAGE_CHUNK):
            pages = np.arange(c0, min(c0 + PAGE_CHUNK, self.n_pages))
            self._extend_pages(pages, start, n_new, stop[pages], out)
        return out

    # ----------------------------------------------------------------- regimes
    def _extend_pages(self, pages, start, n_new, stop, out):
        n_early = min(n_new, max(0, K_EXACT - start))
        for i in range(n_early):  # regime 1 (and regime 3 for unsafe pages)
            self._step(pages[i < stop], pages[i >= stop], start + i, out[:, i])
        tracked = stop > n_early
        if tracked.any():  # regime 2
            self._track(pages[tracked], start, n_early, stop[tracked], out)
        for i in range(max(n_early, int(stop.min())), n_new):  # regime 3 after the first crawls
            rows = pages[stop <= i]
            self._step(rows[:0], rows, start + i, out[:, i])

    def _step(self, local_rows, robust_rows, g, out_col):
        """Crawl ``g`` (0-based): update the counts and solve prefix g + 1 exactly."""
        rows = np.concatenate([local_rows, robust_rows])
        if rows.size == 0:
            return
        kind, j = self.kind, g + 1
        c, t = self._changed[rows, g], self._tau[rows, g]
        self.n_changed[rows] += c
        self.n_unchanged[rows] += 1.0 - c
        self.target[rows] += kind.rhs(c, t)
        self.expanded[rows] = False
        n1, n0 = self.n_changed[rows], self.n_unchanged[rows]
        regular = (n1 > 0) & (n0 > 0)
        root = np.where(n0 == 0, np.inf, 0.0)
        is_local = np.arange(rows.size) < local_rows.size
        fast = regular & is_local & self.has_local[rows]
        if fast.any():
            idx = np.flatnonzero(fast)
            root[idx] = self._local_solve(rows[idx], c[idx], t[idx], j)
        slow = regular & ~fast
        todo = slow | (fast & ~np.isfinite(root))
        if todo.any():
            idx = np.flatnonzero(todo)
            sub = rows[idx]
            ch, tau = _rows(self._changed, sub, j), _rows(self._tau, sub, j)
            root[idx] = solve_robust(kind, ch, tau, np.ones(ch.shape, dtype=bool), self.root[sub])
            self.n_exact += idx.size
            loc = idx[is_local[idx]]
            if loc.size:  # derivatives at the new root, for the next crawl's predictor
                sub = rows[loc]
                self.local[:, sub] = shift(self._local_sums(sub, root[loc], j), np.zeros(loc.size))
        self.has_local[rows] = regular & is_local
        self.root[rows] = root
        out_col[rows] = root

    def _local_solve(self, rows, c, t, j):
        """Regime 1 for rows whose previous root is finite: predictor, then local cubic steps.

        Returns the roots (NaN where ``LOCAL_ITER`` evaluations did not converge).
        """
        kind = self.kind
        r, d = self.root[rows], self.local[:, rows]
        x = r * t
        tt = np.zeros(rows.size)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for _ in range(PREDICTOR_ITER):  # predictor: previous cubic model + the new crawl's exact term
                v = kind.local_terms(x * (1.0 + tt), c)
                lin0, lin1 = kind.local_linear(r * (1.0 + tt), kind.rhs(c, t), 1.0 - c)
                m = tt * (d[1] + tt * (d[2] / 2.0 + tt * d[3] / 6.0)) + v[0] + lin0
                dm = d[1] + tt * (d[2] + tt * d[3] / 2.0) + (v[1] + lin1) / (1.0 + tt)
                tt = np.minimum(np.maximum(tt - m / dm, -0.5), 1.0)
            tt = np.where(np.isfinite(tt), tt, 0.0)
        point = r * (1.0 + tt)
        out = np.full(rows.size, np.nan)
        todo = np.arange(rows.size)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # failures -> NaN -> robust
            self._local_iterate(rows, point, todo, out, j)
        return out

    def _local_sums(self, sub, point, j):
        """The local sums (derivatives of the root's equation, :func:`local_sums`) of pages
        ``sub`` at ``point``, over their first j crawls."""
        return local_sums(
            self.kind,
            point,
            _rows(self._changed, sub, j),
            _rows(self._tau, sub, j),
            self.target[sub],
            self.n_unchanged[sub],
        )

    def _local_iterate(self, rows, point, todo, out, j):
        for _ in range(LOCAL_ITER):
            sub = rows[todo]
            h = self._local_sums(sub, point[todo], j)
            step = cubic_root(h)
            new = point[todo] * (1.0 + step)
            ok = local_error(h, step) <= LOCAL_TOL
            out[todo[ok]] = new[ok]
            self.local[:, sub[ok]] = shift(h[:, ok], step[ok])
            point[todo] = new
            todo = todo[~ok]
            if todo.size == 0:
                break

    def _track(self, pages, start, n_early, stop, out):
        """Regime 2 for new crawls n_early <= i < stop of each page."""
        pos = np.zeros(self.n_pages, dtype=np.int64)
        limit = np.zeros(self.n_pages, dtype=np.int64)
        pos[pages], limit[pages] = n_early, stop
        stale = pages[~self.expanded[pages]]
        if stale.size and start + n_early > 0:  # hand-over from regime 1: expand once
            regular = (self.n_changed[stale] > 0) & (self.n_unchanged[stale] > 0)
            self.anchor[stale] = np.where(regular, self.root[stale], self.anchor[stale])
            self._expand(stale, np.full(stale.size, start + n_early))
        while True:
            active = pages[pos[pages] < limit[pages]]
            if active.size == 0:
                break
            lo = int(pos[active].min())
            cap = max(MIN_WINDOW, min(MAX_WINDOW, WINDOW_ELEMENTS // active.size))
            width = min(int((limit[active] - pos[active]).max()), cap, max(16, start + lo))
            self._block(active, pos, limit, start, width, out)

    def _block(self, pages, pos, limit, start, width, out):
        n_new = limit[pages, None]
        cols = pos[pages, None] + np.arange(width)  # indices into the new block
        inside = cols < n_new
        gcols = np.minimum(cols, n_new - 1) + start  # global column indices
        ch = np.take_along_axis(self._changed[pages], gcols, axis=1) * inside
        tau = np.where(inside, np.take_along_axis(self._tau[pages], gcols, axis=1), 1.0)
        anchor = self.anchor[pages]
        x = np.ascontiguousarray(anchor[:, None] * tau)
        kind, order = self.kind, self.order
        d = kind.coefficients(x, ch, tau, order) * inside
        coef = np.concatenate([self.coef[:, pages, None], d], axis=2).cumsum(axis=2)[:, :, 1:]
        err = np.concatenate([self.err[pages, None], kind.bound(x, ch, tau, order) * inside], axis=1)
        err = err.cumsum(axis=1)[:, 1:]
        target = np.concatenate([self.target[pages, None], kind.rhs(ch, tau) * inside], axis=1)
        target = target.cumsum(axis=1)[:, 1:]
        n1 = self.n_changed[pages, None] + np.cumsum(ch, axis=1)
        n0 = self.n_unchanged[pages, None] + np.cumsum((1.0 - ch) * inside, axis=1)

        coef0 = coef.copy()
        coef0[0] -= target
        q_lo, _ = _horner(coef0, np.full(x.shape, -RHO))
        q_hi, _ = _horner(coef0, np.full(x.shape, RHO))
        in_disk = (q_lo > err) & (q_hi < -err)
        t = np.zeros(x.shape)
        todo = in_disk.copy()
        q, dq = _horner(coef0, t)
        for _ in range(60):
            if not todo.any():
                break
            with np.errstate(divide="ignore", invalid="ignore"):
                step = np.where(todo, q / dq, 0.0)
            t_new = np.clip(t - step, -RHO, RHO)
            todo = todo & (np.abs(t_new - t) > 1e-16)
            t = np.where(in_disk, t_new, t)
            q, dq = _horner(coef0, t)
        with np.errstate(divide="ignore", invalid="ignore"):
            certified = in_disk & ~todo & (2.0 * err <= CERTIFY * np.abs(dq))
        special_inf = n0 == 0
        special_zero = n1 == 0
        ok = (special_inf | special_zero | certified) & inside
        roots = np.where(special_inf, np.inf, np.where(special_zero, 0.0, anchor[:, None] * (1.0 + t)))

        n_ok = np.where(ok.all(axis=1), width, np.argmin(ok, axis=1))
        n_ok = np.minimum(n_ok, limit[pages] - pos[pages])
        rows = np.repeat(np.arange(pages.size), width).reshape(pages.size, width)
        take = np.arange(width) < n_ok[:, None]
        out[pages[rows[take]], cols[take]] = roots[take]
        has = n_ok > 0
        last = np.maximum(n_ok - 1, 0)
        for name, arr in (("err", err), ("target", target), ("n_changed", n1), ("n_unchanged", n0)):
            state = getattr(self, name)
            state[pages[has]] = arr[has, last[has]]
        self.coef[:, pages[has]] = coef[:, has, last[has]]
        self.root[pages[has]] = roots[has, last[has]]
        pos[pages] += n_ok

        failed = pages[pos[pages] < np.minimum(pos[pages] - n_ok + width, limit[pages])]
        if failed.size:
            self._reanchor(failed, pos, start, out)

    def _reanchor(self, pages, pos, start, out):
        """Solve the failing prefix of each page exactly and expand around its root."""
        self.n_reanchor += pages.size
        batch = max(1, REANCHOR_ELEMENTS // (start + int(pos[pages].max()) + 1))
        for b0 in range(0, pages.size, batch):
            self._reanchor_batch(pages[b0 : b0 + batch], pos, start, out)

    def _reanchor_batch(self, pages, pos, start, out):
        lengths = start + pos[pages] + 1  # prefix length including the failing crawl
        m = int(lengths.max())
        inside = np.arange(m) < lengths[:, None]
        ch_all = self._changed[pages, :m] * inside
        tau_all = np.where(inside, self._tau[pages, :m], 1.0)
        n1 = _prefix_total(ch_all, np.zeros(pages.size), lengths)
        n0 = lengths - n1
        regular = (n0 > 0) & (n1 > 0)
        root = np.where(n0 == 0, np.inf, 0.0)
        if regular.any():
            r = regular
            root[r] = solve_robust(self.kind, ch_all[r], tau_all[r], inside[r], self.root[pages[r]])
            self.n_exact += int(r.sum())
        self.anchor[pages] = np.where(regular, root, self.anchor[pages])
        self._expand(pages, lengths)
        self.root[pages] = root
        out[pages, pos[pages]] = root
        pos[pages] += 1

    def _expand(self, pages, lengths):
        """The series around each page's anchor over its prefix (chunked, sequential sums)."""
        batch = max(1, REANCHOR_ELEMENTS // int(lengths.max()))
        for b0 in range(0, pages.size, batch):
            self._expand_batch(pages[b0 : b0 + batch], lengths[b0 : b0 + batch])

    def _expand_batch(self, pages, lengths):
        m = int(lengths.max())
        inside = np.arange(m) < lengths[:, None]
        ch_all = self._changed[pages, :m] * inside
        tau_all = np.where(inside, self._tau[pages, :m], 1.0)
        kind, anchor = self.kind, self.anchor[pages]
        zero = np.zeros(pages.size)
        coef = np.zeros((self.order + 1, pages.size))
        err = np.zeros(pages.size)
        for c0 in range(0, m, REANCHOR_CHUNK):
            c1 = min(m, c0 + REANCHOR_CHUNK)
            ins = inside[:, c0:c1]
            x = np.ascontiguousarray(anchor[:, None] * tau_all[:, c0:c1])
            lens = np.clip(lengths - c0, 0, c1 - c0)
            d = kind.coefficients(x, ch_all[:, c0:c1], tau_all[:, c0:c1], self.order) * ins
            coef = _prefix_total(d, coef, lens)
            b = kind.bound(x, ch_all[:, c0:c1], tau_all[:, c0:c1], self.order) * ins
            err = _prefix_total(b, err, lens)
        self.coef[:, pages] = coef
        self.err[pages] = err
        self.target[pages] = _prefix_total(kind.rhs(ch_all, tau_all) * inside, zero, lengths)
        n1 = _prefix_total(ch_all, zero, lengths)
        self.n_changed[pages] = n1
        self.n_unchanged[pages] = lengths - n1
        self.expanded[pages] = True
