"""Run every benchmark in this folder and print one table: goal, measured, verdict.

Run: ``uv run --locked python benchmarks/run_all.py [--only NAME ...] [--skip NAME ...]
[--timeout 1800] [--json results.json]``.

Convention (every ``benchmarks/bench_*.py`` follows it)
-------------------------------------------------------
* A benchmark is a script ``bench_<what>.py`` that runs with no arguments at the sizes
  its goals are stated for, and exits 0 when it could measure (a missed goal is not
  an error).
* Besides its own output it prints one line per goal::

      RESULT {"goal": "...", "measured": "...", "meets": true}

  the word ``RESULT``, a space and a one-line JSON object with ``goal`` (the goal in
  words with its threshold), ``measured`` (this run's value in the goal's terms) and
  ``meets`` (true / false, or null for a measurement shown for information). Optional:
  ``value`` (number), ``unit``, ``note``. ``benchmarks/_result.py`` has
  ``result(goal, measured, meets, **extra)`` which prints such a line
  (``from _result import result``).
* Times are wall times (time.perf_counter) measured in the same run as whatever they
  are compared with, so that the machine's load affects both.

This script runs each benchmark in its own process (``sys.executable``), one after the
other, collects the ``RESULT`` lines and prints the table, with the load average and
the number of cores before and after. The verdict is "meets", "misses", "info" (no
goal), "error" (the script failed or timed out) or "no RESULT line". It exits 1 if a
benchmark failed, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PREFIX = "RESULT "


def discover(only=None, skip=()) -> list[Path]:
    """The benchmark scripts ``bench_*.py`` of this folder, by name; ``only``/``skip`` by stem."""
    scripts = sorted(HERE.glob("bench_*.py"))
    names = {p.stem: p for p in scripts} | {p.stem.removeprefix("bench_"): p for p in scripts}
    if only:
        unknown = [n for n in only if n not in names]
        if unknown:
            raise SystemExit(f"run_all: unknown benchmark {unknown}; choose from {[p.stem for p in scripts]}")
        scripts = list(dict.fromkeys(names[n] for n in only))
    dropped = {names[n] for n in skip if n in names}
    return [p for p in scripts if p not in dropped]


def parse_results(text: str) -> list[dict]:
    """The ``RESULT`` rows printed in ``text`` (lines that do not parse are reported as such)."""
    rows = []
    for line in text.splitlines():
        if not line.startswith(PREFIX):
            continue
        try:
            row = json.loads(line[len(PREFIX) :])
            if not isinstance(row, dict) or not {"goal", "measured", "meets"} <= set(row):
                raise ValueError("needs goal, measured and meets")
        except ValueError as exc:
            row = {
                "goal": line[len(PREFIX) :][:80],
                "measured": f"unreadable RESULT line ({exc})",
                "meets": None,
                "verdict": "error",
            }
        rows.append(row)
    return rows


def verdict(row: dict) -> str:
    if "verdict" in row:
        return row["verdict"]
    return {True: "meets", False: "misses", None: "info"}[row["meets"]]


def run_one(script: Path, timeout: float) -> tuple[list[dict], float, str | None]:
    """Run one benchmark; its rows, its wall time and an error message (None if it ran)."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=timeout, cwd=HERE.parent
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return parse_results(out), time.perf_counter() - t0, f"timed out after {timeout:g} s"
    seconds = time.perf_counter() - t0
    rows = parse_results(proc.stdout)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        return rows, seconds, f"exit {proc.returncode}: {last[:120]}"
    return rows, seconds, None


def _load() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "n/a"
    return f"{one:.1f} (1 min), {five:.1f} (5 min)"


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table: benchmark, goal, measured, verdict."""
    head = ["benchmark", "goal", "measured", "verdict"]
    body = [[r["benchmark"], r["goal"], r["measured"], verdict(r)] for r in rows]
    width = [max(len(head[i]), *(len(b[i]) for b in body)) if body else len(head[i]) for i in range(4)]
    fmt = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, width)) + " |"
    return "\n".join([fmt(head), "|" + "|".join("-" * (w + 2) for w in width) + "|", *map(fmt, body)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these (e.g. optimal_rates)")
    parser.add_argument("--skip", nargs="+", default=[], metavar="NAME", help="do not run these")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per benchmark (default 1800)")
    parser.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    scripts = discover(args.only, args.skip)
    print(f"# {len(scripts)} benchmarks; {os.cpu_count()} cores; load before: {_load()}", flush=True)
    rows, failed = [], False
    for script in scripts:
        print(f"running {script.name} ...", flush=True)
        found, seconds, error = run_one(script, args.timeout)
        for r in found:
            r["benchmark"] = script.stem.removeprefix("bench_")
            print(f"  {verdict(r):8s} {r['goal']}: {r['measured']}", flush=True)
        if error is not None:
            failed = True
            found.append(
                {
                    "benchmark": script.stem.removeprefix("bench_"),
                    "goal": "(the script)",
                    "measured": error,
                    "meets": None,
                    "verdict": "error",
                }
            )
        elif not found:
            found.append(
                {
                    "benchmark": script.stem.removeprefix("bench_"),
                    "goal": "(the script)",
                    "measured": "printed no RESULT line",
                    "meets": None,
                    "verdict": "no RESULT line",
                }
            )
        print(f"  ({seconds:.0f} s)", flush=True)
        rows.extend(found)
    print(f"\n# load after: {_load()}\n")
    print(table(rows))
    counts = {v: sum(verdict(r) == v for r in rows) for v in ("meets", "misses", "info", "error")}
    print(
        f"\n{counts['meets']} meet, {counts['misses']} miss, {counts['info']} for information, {counts['error']} errors"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
