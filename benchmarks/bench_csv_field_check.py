"""The cost of refusing CSV rows with fields too many or too few, on the reader's good path.

A synthetic CSV crawl log (``--rows`` rows, default 10^6, of 10^4 pages; columns page,
fetch_time, status, digest, unquoted) is read by ``changerate_bayes.io.read_csv`` with
the field-count check and with it replaced by a no-op, alternately, ``--repeats`` times
each (the order alternating) after one warm-up read of each, and the check alone as
many times; the medians are printed, and the check's time as a share of the read (the
steadier figure: the with/without ratio of two reads of seconds is noisy on a shared
machine). A gzip copy is timed the same way (the check decompresses
the file a second time).

Run: ``uv run --locked python benchmarks/bench_csv_field_check.py [--rows 1000000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _result import result  # noqa: E402

from changerate_bayes.io import _fields, _tabular, read_csv  # noqa: E402


def _write(path: Path, rows: int) -> None:
    rng = np.random.default_rng(0)
    pages = rng.integers(0, 10_000, rows)
    t = np.datetime64("2024-01-01T00:00") + np.sort(rng.integers(0, 365 * 24 * 60, rows)).astype("timedelta64[m]")
    digest = rng.integers(0, 50, rows)
    with open(path, "w") as fh:
        fh.write("page,fetch_time,status,digest\n")
        fh.writelines(f"https://example.org/p{p},{str(x)}Z,200,d{d}\n" for p, x, d in zip(pages, t, digest))


def _time(path, repeats: int) -> tuple[float, float, float]:
    real = _fields.check_field_counts

    def run(check: bool) -> float:
        _tabular.check_field_counts = real if check else (lambda *a, **k: None)
        t0 = time.perf_counter()
        read_csv(path)
        return time.perf_counter() - t0

    def alone() -> float:
        t0 = time.perf_counter()
        real(path, src=str(path))
        return time.perf_counter() - t0

    try:
        run(True), run(False)  # warm-up (numba, page cache)
        on, off, check = [], [], []
        for k in range(repeats):  # the order alternates: the first read of a pair is not favoured
            for c in (True, False) if k % 2 == 0 else (False, True):
                (on if c else off).append(run(c))
            check.append(alone())
    finally:
        _tabular.check_field_counts = real
    return statistics.median(on), statistics.median(off), statistics.median(check)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    try:
        plain = tmp / "log.csv"
        _write(plain, args.rows)
        packed = tmp / "log.csv.gz"
        with open(plain, "rb") as src, gzip.open(packed, "wb", compresslevel=1) as dst:
            shutil.copyfileobj(src, dst)
        print(f"load average before: {os.getloadavg()}")
        for name, path in (("plain", plain), ("gzip", packed)):
            on, off, alone = _time(path, args.repeats)
            print(
                f"{name}: read_csv {on:.2f} s with the check, {off:.2f} s without (ratio {on / off:.3f}); "
                f"the check alone {alone:.3f} s ({alone / off:.1%} of read_csv without it)"
            )
            result(
                f"read_csv of {args.rows:,} rows ({name}): the field-count check alone <= 5% of the read",
                f"{alone / off:.1%}",
                alone / off <= 0.05,
                value=alone / off,
            )
            result(
                f"read_csv of {args.rows:,} rows ({name}), with/without the check (median, noisy on a shared machine)",
                f"{on / off:.3f}",
                None,
                value=on / off,
            )
        print(f"load average after: {os.getloadavg()}")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
