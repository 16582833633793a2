"""Streaming updates at memory speed: one ``update`` of 10^7 pages against ``np.copyto``.

For LLN, SA and SAM, times one ``update(changed)`` of ``--pages`` pages (float64 state,
``changed`` as int8 0/1) and a plain ``np.copyto`` of the same state bytes (LLN and SA:
one float64 array; SAM: two), interleaved in the same run, and prints the ratio beside
the goal (≤ 4× memcpy). Also times the previous implementation (numpy expressions, a new
array per step; kept here as the reference) and checks that both give the same rates to
1e-12 after several updates.

Run: ``uv run --locked python benchmarks/bench_streaming.py [--pages 10000000] [--repeats 7]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _result import load_note, result

from changerate_bayes import LLNEstimator, SAEstimator, SAMEstimator
from changerate_bayes.estimators import momentum_at, stepsize_at

GOAL = 4.0


# ---------------------------------------------------------------- previous implementation
def _checked(changed):
    """The previous updates' input check: ``changed`` as an array of 0/1."""
    arr = np.asarray(changed)
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        raise ValueError("bad")
    return arr


class PreviousLLN:
    """The numpy update before the compiled kernels: checks, then Î + I into a new array."""

    def __init__(self, p, n):
        self.p, self.changes, self.k = p, np.zeros(n), 0

    def update(self, changed):
        self.changes = self.changes + _checked(changed).astype(np.float64)
        self.k += 1

    def rate(self):
        return self.p * self.changes / (self.k + 1.0 - self.changes)


class PreviousSA:
    def __init__(self, p, n, eta=0.75):
        self.p, self.y, self.k, self.eta = p, np.zeros(n), 0, eta

    def update(self, changed):
        obs = _checked(changed).astype(np.float64)
        e = stepsize_at(self.eta, self.k)
        self.y = self.y + e * (obs * (self.y + self.p) - self.y)
        self.k += 1

    def rate(self):
        return self.y


class PreviousSAM:
    def __init__(self, p, n, eta=0.75, beta=0.6, omega=1.0):
        self.p, self.k = p, 0
        self.z, self.zp, self.div = np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool)
        self.params = (eta, beta, omega)

    def update(self, changed):
        obs = _checked(changed).astype(np.float64)
        eta, beta, omega = self.params
        e, zeta = stepsize_at(eta, self.k), momentum_at(eta, beta, omega, self.k)
        with np.errstate(over="ignore", invalid="ignore"):
            new = self.z + e * (obs * (self.z + self.p) - self.z) + zeta * (self.z - self.zp)
            newly = ~np.isfinite(new) & ~self.div
            sign = np.where(np.isnan(new), np.sign(self.z), np.sign(new))
            frozen = np.where(self.div, self.z, np.where(sign == 0, 1.0, sign) * np.inf)
            new = np.where(newly | self.div, frozen, new)
        self.zp, self.z = self.z, new
        self.div = self.div | newly
        self.k += 1

    def rate(self):
        return self.z


def _time(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=10**7)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    n = args.pages
    rng = np.random.default_rng(0)
    p = 2.0
    steps = [(rng.random(n) < 0.3).astype(np.int8) for _ in range(3)]
    print(f"one update of {n:.0e} pages (float64 state, changed int8), best of {args.repeats}; {load_note()}")

    # same results after a few updates (also compiles the kernels before timing)
    cases = {
        "LLN": (LLNEstimator(crawl_rate=p, n_pages=n), PreviousLLN(p, n), 1),
        "SA": (SAEstimator(crawl_rate=p, n_pages=n), PreviousSA(p, n), 1),
        "SAM": (SAMEstimator(crawl_rate=p, n_pages=n), PreviousSAM(p, n), 2),
    }
    for name, (new, old, _) in cases.items():
        for c in steps:
            new.update(c)
            old.update(c)
        diff = float(np.max(np.abs(new.rate - old.rate()) / np.maximum(np.abs(old.rate()), 1e-300)))
        print(f"  {name}: max relative difference from the previous implementation after 3 updates: {diff:.1e}")
        result(
            f"streaming {name}: same rates as the previous implementation to 1e-12",
            f"{diff:.1e}",
            diff <= 1e-12,
            value=diff,
        )

    for name, (new, old, n_arrays) in cases.items():
        src = [np.random.default_rng(1).random(n) for _ in range(n_arrays)]
        dst = [np.empty(n) for _ in range(n_arrays)]
        copy_t, new_t, old_t = [], [], []
        for r in range(args.repeats):
            c = steps[r % len(steps)]
            copy_t.append(_time(lambda: [np.copyto(d, s) for d, s in zip(dst, src)]))
            new_t.append(_time(lambda: new.update(c)))
            old_t.append(_time(lambda: old.update(c)))
        t_copy, t_new, t_old = min(copy_t), min(new_t), min(old_t)
        ratio = t_new / t_copy
        print(
            f"  {name:4s}: update {t_new * 1e9 / n:5.2f} ns/page = {ratio:4.2f}x memcpy "
            f"({t_copy * 1e9 / n:4.2f} ns/page for {8 * n_arrays} bytes/page); previous implementation "
            f"{t_old * 1e9 / n:5.2f} ns/page = {t_old / t_copy:4.2f}x memcpy"
        )
        result(
            f"streaming {name} update of {n:.0e} pages: <= {GOAL:g}x np.copyto of the state bytes",
            f"{ratio:.2f}x memcpy ({t_new * 1e9 / n:.2f} ns/page; previous {t_old / t_copy:.2f}x)",
            ratio <= GOAL,
            value=ratio,
            unit="x memcpy",
            note=load_note(),
        )


if __name__ == "__main__":
    main()
