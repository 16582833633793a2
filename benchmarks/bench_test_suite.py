"""Benchmark: wall time of the test suite, as the README runs it.

Run: ``python benchmarks/bench_test_suite.py [--workers auto] [--durations 0]``.

Runs ``python -m pytest -q -n auto -p no:cacheprovider`` (pytest-xdist, one worker per
core) in a fresh process from the repository root and prints its wall time against the
goal (<= 90 s on 2 cores), the number of tests that passed, and with ``--durations N``
the N slowest test phases (pytest's report).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from _result import load_note, result

GOAL = 90.0
ROOT = Path(__file__).resolve().parent.parent


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="auto")
    parser.add_argument("--durations", type=int, default=0)
    args = parser.parse_args(argv)
    cmd = [sys.executable, "-m", "pytest", "-q", "-n", args.workers, "-p", "no:cacheprovider"]
    if args.durations:
        cmd.append(f"--durations={args.durations}")
    print(f"# {' '.join(cmd[1:])}; {os.cpu_count()} cores, {load_note()} before", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    tail = proc.stdout.strip().splitlines()
    if args.durations:
        start = next((i for i, line in enumerate(tail) if "slowest" in line), len(tail))
        print("\n".join(tail[start : start + args.durations + 1]))
    summary = tail[-1] if tail else "(no output)"
    for line in tail:  # the short summary of failures (pytest -q prints one line per failure)
        if line.startswith(("FAILED ", "ERROR ")):
            print(line)
    print(summary)
    passed = re.search(r"(\d+) passed", summary)
    ok = proc.returncode == 0
    print(f"wall {wall:.1f} s (goal <= {GOAL:g} s on 2 cores); exit status {proc.returncode}")
    result(
        f"test suite (pytest -n {args.workers}) on {os.cpu_count()} cores: <= {GOAL:g} s wall, all pass",
        f"{wall:.0f} s, {passed.group(1) if passed else '?'} passed{'' if ok else ', FAILURES'}",
        ok and wall <= GOAL,
        value=wall,
        unit="s",
        note=load_note(),
    )


if __name__ == "__main__":
    main()
