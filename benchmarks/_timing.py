"""Small helpers the benchmark scripts share: the best of several timed calls, and one call in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["best_of", "run_in_process"]

_HERE = Path(__file__).resolve().parent


def best_of(fn, repeats: int):
    """Call ``fn()`` ``repeats`` times; return (the fastest call's seconds, the last call's value)."""
    best, value = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def run_in_process(module: str, call: str, *args, what: str) -> dict:
    """Run ``module.call(*args)`` in a fresh Python process; return the JSON its last stdout line holds.

    ``module`` is a script of this folder; ``args`` are written with ``repr``. A failed
    process stops the benchmark with ``what`` failed and the end of its stderr.
    """
    code = (
        f"import sys; sys.path.insert(0, {str(_HERE)!r}); import {module} as b; "
        f"b.{call}({', '.join(repr(a) for a in args)})"
    )
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
