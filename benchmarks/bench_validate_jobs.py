"""Benchmark: ``changerate-bayes validate --quick`` with 2 processes against 1.

Run: ``python benchmarks/bench_validate_jobs.py [--preset quick] [--jobs 2]``.

Runs the whole validation twice in fresh processes, the same seed, first with
``--jobs 2`` then with ``--jobs 1`` (so that any cache warmed by the first run, e.g.
numba's, helps the single-process run, not the one being tested), and prints each wall
time (time.perf_counter around the process), their ratio (goal: <= 0.6), the seconds of
each study as written in results.json, and whether the two results.json agree number
for number (everything but ``meta`` and the wall times some studies record, keys
``seconds``), listing the values that differ. The load average is printed with the result: on a
machine shared with other work, 2 processes cannot get 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _result import load_note, result

GOAL = 0.6
ROOT = Path(__file__).resolve().parent.parent


#: keys of results.json that hold wall times measured by a study (they differ run to run)
TIMING_KEYS = {"seconds"}


def differences(a, b, path="") -> list[str]:
    """Paths where two results.json payloads differ, timings (``TIMING_KEYS``) left out."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}/{k} (only in one)" for k in set(a) ^ set(b)]
        for k in a.keys() & b.keys():
            if k not in TIMING_KEYS:
                out += differences(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path]


def run(preset: str, jobs: int, out: Path) -> float:
    cmd = [
        sys.executable,
        "-c",
        "import sys; from changerate_bayes.cli import main; sys.exit(main())",
        "validate",
        f"--{preset}",
        "--jobs",
        str(jobs),
        "--out",
        str(out),
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"validate --jobs {jobs} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="quick", choices=["quick", "default", "full"])
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
        tmp = Path(tmp)
        print(
            f"# validate --{args.preset}: --jobs {args.jobs}, then --jobs 1; {os.cpu_count()} cores, "
            f"{load_note()} before",
            flush=True,
        )
        t_many = run(args.preset, args.jobs, tmp / "many")
        print(f"--jobs {args.jobs}: {t_many:7.1f} s   ({load_note()})", flush=True)
        t_one = run(args.preset, 1, tmp / "one")
        print(f"--jobs 1: {t_one:7.1f} s   ({load_note()})", flush=True)
        res = {k: json.loads((tmp / k / "results.json").read_text()) for k in ("many", "one")}
    meta = {k: v.pop("meta") for k, v in res.items()}
    diff = differences(res["many"], res["one"])
    same = not diff
    print(f"\n{'study':24s} {'1 job s':>8s} {f'{args.jobs} jobs s':>9s}")
    for name, sec in meta["one"]["section_seconds"].items():
        print(f"{name:24s} {sec:8.1f} {meta['many']['section_seconds'][name]:9.1f}")
    ratio = t_many / t_one
    print(
        f"\nratio {args.jobs} jobs / 1 job = {ratio:.2f} (goal <= {GOAL}); results.json numbers identical "
        f"(study timings {sorted(TIMING_KEYS)} left out): {same}"
    )
    for d in diff[:20]:
        print(f"  differs: {d}")
    result(
        f"validate --{args.preset}: wall time with {args.jobs} jobs <= {GOAL} × with 1 job",
        f"{ratio:.2f} ({t_many:.0f} s vs {t_one:.0f} s)",
        ratio <= GOAL,
        value=ratio,
        note=load_note(),
    )
    result(
        f"validate --{args.preset}: results.json identical for --jobs 1 and {args.jobs} (timings left out)",
        "identical" if same else f"{len(diff)} values differ, e.g. {diff[0]}",
        same,
    )


if __name__ == "__main__":
    main()
