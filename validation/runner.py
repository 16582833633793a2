"""Run the validation studies and write the HTML report and results.json."""

from __future__ import annotations

import datetime as _dt
import importlib
import platform
import time
from pathlib import Path

from ._preset import Preset, Progress

__all__ = ["STUDIES", "run_validation", "load_study"]

# Report order. Each entry is a module of this package (see the package docstring).
STUDIES: tuple[str, ...] = (
    "monte_carlo",
    "convergence",
    "traces_study",
    "gof_size",
    "scheduling_rates",
    "scheduling_closed_loop",
    "scheduling_whittle",
    "scheduling_sampling",
    "calibration",
    "pooling",
)


def load_study(name: str):
    """Import the study module ``validation.<name>`` and check its interface."""
    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; choose from {STUDIES}")
    mod = importlib.import_module(f"{__package__}.{name}")
    for attr in ("TITLE", "KEYS", "run", "render"):
        if not hasattr(mod, attr):
            raise TypeError(f"study module {mod.__name__} lacks {attr}")
    return mod


def _versions() -> dict:
    import arviz
    import numpy
    import pymc
    import scipy
    import statsmodels

    return {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "statsmodels": statsmodels.__version__,
        "pymc": pymc.__version__,
        "arviz": arviz.__version__,
    }


def run_validation(out_dir="reports", *, preset="default", seed: int = 20201, only=None, progress=None) -> Path:
    """Run the studies and write ``index.html`` and ``results.json`` to ``out_dir``.

    Parameters
    ----------
    out_dir : str or Path, default "reports"
    preset : {"quick", "default", "full"} or Preset
    seed : int, default 20201
        Master seed; study i gets ``SeedSequence(seed).spawn(len(STUDIES))[i]``'s
        first word, so studies do not share random streams.
    only : list of str, optional
        Run only these studies (module names from ``STUDIES``).
    progress : Progress, optional
        Where progress lines go (stderr by default).

    Returns
    -------
    Path
        The written ``index.html``. Nothing is written if a study fails.

    Raises
    ------
    ValueError
        For an unknown preset or study name, or an ``out_dir`` that cannot hold the
        report (checked before any study runs).
    """
    from changerate_bayes import __version__
    from changerate_bayes.report import check_output_dir, render_page, write_report
    import numpy as np

    preset = preset if isinstance(preset, Preset) else Preset(preset)
    progress = progress or Progress()
    names = list(STUDIES) if not only else list(dict.fromkeys(only))  # each study once, in the given order
    modules = [load_study(n) for n in names]  # validates names before any work
    check_output_dir(out_dir)  # fail now, not after the studies have run
    seeds = np.random.SeedSequence(seed).generate_state(len(STUDIES))
    results: dict = {}
    sections = []
    t_start = time.perf_counter()
    for i, (name, mod) in enumerate(zip(names, modules), start=1):
        progress(f"[{i}/{len(modules)}] {mod.TITLE} ...")
        t0 = time.perf_counter()
        study_seed = int(seeds[STUDIES.index(name)])
        result = mod.run(preset, seed=study_seed, progress=progress.child(f"  {name}: "))
        if set(result) != set(mod.KEYS):
            raise RuntimeError(f"study {name} returned keys {sorted(result)}, expected {sorted(mod.KEYS)}")
        clash = set(result) & set(results)
        if clash:
            raise RuntimeError(f"study {name} repeats results.json keys {sorted(clash)}")
        results.update(result)
        html = mod.render(result)
        seconds = time.perf_counter() - t0
        summary = mod.summarize(result) if hasattr(mod, "summarize") else None  # row of the summary table
        sections.append({"id": name, "title": mod.TITLE, "html": html, "seconds": seconds, "summary": summary})
        progress(f"[{i}/{len(modules)}] done in {seconds:.1f} s")
    total = time.perf_counter() - t_start
    meta = {
        "version": __version__,
        "preset": preset.name,
        "seed": seed,
        "studies": names,
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "total_seconds": total,
        "section_seconds": {s["id"]: s["seconds"] for s in sections},
        "versions": _versions(),
    }
    html = render_page(title="changerate_bayes validation report", sections=sections, meta=meta)
    path = write_report(out_dir, html=html, results={"meta": meta, **results})
    progress(f"report written to {path} ({total:.1f} s)")
    return path
