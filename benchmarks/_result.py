"""The machine-readable result line of a benchmark script (see ``run_all.py``).

Each ``benchmarks/bench_*.py`` prints, besides its own human-readable output, one line
per goal it measures::

    RESULT {"goal": "...", "measured": "...", "meets": true}

that is, the word ``RESULT``, one space and a JSON object on a single line with

* ``goal`` (str): the goal in words, with its threshold, e.g. "MLE path, 10^5 pages ×
  100 crawls: ≤ 8 s";
* ``measured`` (str): what this run measured, in the goal's terms, e.g. "26.5 s";
* ``meets`` (true, false or null): whether the measurement meets the goal; null for a
  measurement shown for information, with no goal attached.

Optional keys: ``value`` (float, the measured number), ``unit`` (str) and ``note``
(str, e.g. the load or the reference used). ``run_all.py`` runs every script and prints
one table of these lines. A script imports :func:`result` with ``from _result import
result`` (the script's folder is on ``sys.path`` when it is run as a script) or prints
the line itself.
"""

from __future__ import annotations

import json
import os

__all__ = ["result", "load_note"]


def result(goal: str, measured: str, meets, **extra) -> dict:
    """Print the ``RESULT`` line of one goal and return it as a dict.

    Parameters
    ----------
    goal : str
        The goal, with its threshold.
    measured : str
        The measurement, formatted for a reader.
    meets : bool or None
        Whether the goal is met (None: informational, no goal).
    **extra
        ``value``, ``unit``, ``note``: JSON-able extras.
    """
    if meets is not None:
        meets = bool(meets)
    row = {"goal": str(goal), "measured": str(measured), "meets": meets, **extra}
    print("RESULT " + json.dumps(row, ensure_ascii=False), flush=True)
    return row


def load_note() -> str:
    """The 1-minute load average and the number of cores, as a short note."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # not available on this platform
        return f"{os.cpu_count()} cores"
    return f"load {load:.1f} on {os.cpu_count()} cores"
