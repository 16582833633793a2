"""Run the validation studies and write the HTML report and results.json."""

from __future__ import annotations

import datetime as _dt
import importlib
import numbers
import os
import platform
import signal
import threading
import time
from pathlib import Path

import numpy as np

from changerate_bayes import __version__
from changerate_bayes._upstream import silence_harmless_upstream_output

from ._preset import Preset, Progress

__all__ = ["STUDIES", "run_validation", "load_study", "default_jobs"]

# Report order. Each entry is a module of this package (see the package docstring).
STUDIES: tuple[str, ...] = (
    "monte_carlo",
    "convergence",
    "traces_study",
    "gof_size",
    "last_modified",
    "scheduling_rates",
    "scheduling_closed_loop",
    "scheduling_whittle",
    "scheduling_sampling",
    "scheduling_replay",
    "calibration",
    "pooling",
    "prequential",
    "bursts",
    "politeness",
    "signals_replay",  # new studies go last: each study's seed is its position here, so the others keep theirs
)


def _check_study_name(name: str) -> None:
    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; choose from {STUDIES}")


def load_study(name: str):
    """Import the study module ``validation.<name>`` and check its interface."""
    _check_study_name(name)
    mod = importlib.import_module(f"{__package__}.{name}")
    for attr in ("TITLE", "KEYS", "run", "render"):
        if not hasattr(mod, attr):
            raise TypeError(f"study module {mod.__name__} lacks {attr}")
    return mod


def _versions() -> dict:
    """Versions of Python and of the main libraries, read from the installed metadata."""
    # here, not at the top: the command line's parser imports this module (0.2 s)
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("numpy", "scipy", "statsmodels", "pymc", "arviz", "nutpie", "matplotlib"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def default_jobs() -> int:
    """The number of cores this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def _check_jobs(jobs) -> int:
    if isinstance(jobs, bool) or not isinstance(jobs, numbers.Integral):
        raise TypeError(f"`jobs` must be an int >= 1; got {type(jobs).__name__}")
    if jobs < 1:
        raise ValueError(f"`jobs` must be >= 1; got {jobs}")
    return int(jobs)


def _run_study(name: str, preset: Preset, seed: int, progress) -> dict:
    """Run one study and render its section; the unit of work of a process."""
    # here, not at the top: the command line's parser imports this module (jinja2: 0.2 s)
    from changerate_bayes.report import figure_context

    mod = load_study(name)
    t0 = time.perf_counter()
    result = mod.run(preset, seed=seed, progress=progress.child(f"  {name}: "))
    if set(result) != set(mod.KEYS):
        raise RuntimeError(f"study {name} returned keys {sorted(result)}, expected {sorted(mod.KEYS)}")
    import matplotlib  # matplotlib: heavy, loaded only to draw

    matplotlib.use("Agg")  # the studies draw off-screen, whatever display the machine has
    with figure_context():
        html = str(mod.render(result))
    summary = mod.summarize(result) if hasattr(mod, "summarize") else None  # row of the summary table
    return {"result": result, "html": html, "seconds": time.perf_counter() - t0, "title": mod.TITLE, "summary": summary}


class _QueueProgress(Progress):
    """Progress of a study in a worker process: lines are sent to the parent's queue."""

    def __init__(self, queue, prefix: str = ""):
        super().__init__(prefix=prefix, bar_mode="off")
        self._queue = queue

    def __call__(self, message: str) -> None:
        self._queue.put(f"{self.prefix}{message}")

    def child(self, prefix: str) -> _QueueProgress:
        return _QueueProgress(self._queue, prefix=prefix)


_WORKER_QUEUE = None


def _worker_init(queue, processes: int) -> None:
    """Worker set-up: Ctrl-C is handled by the parent, which stops the workers; numba's
    parallel kernels run on this worker's share of the cores (cores // ``processes``
    threads, at least 1, at most numba's limit ``NUMBA_NUM_THREADS``).

    With every core already running a worker, a kernel's extra threads would wait at each
    parallel region for a core held by the other worker: a region over a few crawls then
    takes tens of milliseconds instead of tens of microseconds. The kernels' results do not
    depend on the number of threads.
    """
    global _WORKER_QUEUE

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent handles SIGTERM as Ctrl-C and stops the workers
    silence_harmless_upstream_output()
    _WORKER_QUEUE = queue
    import numba  # numba: heavy; the package imports without it

    # numba.config sets its options as module attributes at import time, which mypy cannot see
    numba.set_num_threads(max(1, min(numba.config.NUMBA_NUM_THREADS, (os.cpu_count() or 1) // processes)))  # type: ignore[attr-defined]


def _worker_run(name: str, preset_name: str, seed: int) -> dict:
    return _run_study(name, Preset(preset_name), seed, _QueueProgress(_WORKER_QUEUE))


def _ignoring_sigint(start):
    """Call ``start()`` with Ctrl-C ignored, so that processes it spawns inherit that."""
    if threading.current_thread() is not threading.main_thread():
        return start()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return start()
    finally:
        signal.signal(signal.SIGINT, previous)


def _run_parallel(names, preset, seeds, jobs, progress, done):
    """Run the studies ``names`` in ``jobs`` spawned processes; results in ``names`` order."""
    import multiprocessing as mp  # only for --jobs > 1; keeps the command line's start light (~30 ms)
    import queue as _queue  # only for --jobs > 1; keeps the command line's start light (~20 ms)

    ctx = mp.get_context("spawn")  # no fork of a process holding threads (BLAS, numba, tqdm)
    lines = ctx.Queue()
    # Longest first (by the measured relative costs), so that no process is left with a
    # long study at the end; the results are put back in report order.
    order = sorted(range(len(names)), key=lambda i: -_COST_HINT.get(names[i], 0.0))
    processes = min(jobs, len(names))
    pool = _ignoring_sigint(lambda: ctx.Pool(processes, initializer=_worker_init, initargs=(lines, processes)))
    try:
        pending = {i: pool.apply_async(_worker_run, (names[i], preset.name, seeds[i])) for i in order}
        out: dict = {}
        while pending:
            try:  # relay the workers' progress lines while waiting
                progress(lines.get(timeout=0.2))
                continue
            except _queue.Empty:
                pass
            for i in [i for i, r in pending.items() if r.ready()]:
                out[i] = pending.pop(i).get()  # re-raises a study's exception here
                done(names[i], out[i])
        while True:
            try:
                progress(lines.get_nowait())
            except _queue.Empty:
                break
    finally:  # all results in hand, a study failed, or Ctrl-C: stop the workers now, without
        pool.terminate()  # waiting for their interpreters to wind down (seconds under load)
        pool.join()
        lines.close()
    return [out[i] for i in range(len(names))]


#: Relative cost of each study (wall seconds at the quick preset, measured in a fresh
#: clone with two processes); used only to start the longest studies first when several
#: processes run them, so that no process is left with a long study at the end. A study
#: missing here counts as cheap.
_COST_HINT: dict[str, float] = {
    "pooling": 86.0,
    "traces_study": 56.0,
    "prequential": 41.5,
    "bursts": 83.0,
    "scheduling_replay": 40.3,
    "gof_size": 37.1,
    "calibration": 15.2,
    "monte_carlo": 12.5,
    "convergence": 8.8,
    "scheduling_whittle": 5.3,
    "scheduling_rates": 5.0,
    "scheduling_closed_loop": 2.5,
    "scheduling_sampling": 0.9,
    "last_modified": 0.5,
    "politeness": 4.0,
    "signals_replay": 30.0,
}


def run_validation(
    out_dir="reports", *, preset="default", seed: int = 20201, only=None, progress=None, jobs: int = 1
) -> Path:
    """Run the studies and write ``index.html`` and ``results.json`` to ``out_dir``.

    Parameters
    ----------
    out_dir : str or Path, default "reports"
    preset : {"quick", "default", "full"} or Preset
    seed : int, default 20201
        Master seed; study i gets ``SeedSequence(seed).spawn(len(STUDIES))[i]``'s
        first word, so studies do not share random streams.
    only : list of str, optional
        Run only these studies (module names from ``STUDIES``); the report then says
        it is partial (``meta["partial"]`` True, ``meta["studies"]`` the studies run).
    progress : Progress, optional
        Where progress lines go (stderr by default); a bar with an ETA on a terminal.
    jobs : int, default 1
        Processes running studies at once. The studies are independent and each has
        its own seed, so the results are the same whatever ``jobs`` is; only the
        timings in ``meta`` differ. More than 1 starts fresh (spawned) processes.

    Returns
    -------
    Path
        The written ``index.html``. Nothing is written if a study fails or the run is
        interrupted.

    Raises
    ------
    ValueError
        For an unknown preset or study name, ``jobs`` < 1, or an ``out_dir`` that cannot
        hold the report (checked before any study runs).
    TypeError
        If ``jobs`` is not an int.
    """
    # here, not at the top: the command line's parser imports this module (jinja2: 0.2 s)
    from changerate_bayes.report import check_output_dir, render_page, write_report

    preset = preset if isinstance(preset, Preset) else Preset(preset)
    jobs = _check_jobs(jobs)
    progress = progress or Progress()
    names = list(STUDIES) if not only else list(dict.fromkeys(only))  # each study once, in the given order
    for name in names:  # before any work
        _check_study_name(name)
    parallel = jobs > 1 and len(names) > 1
    # one process imports the studies here; with several, each worker imports its own, and
    # this process does not import them at all (it would delay the workers' start)
    modules = None if parallel else [load_study(n) for n in names]
    check_output_dir(out_dir)  # fail now, not after the studies have run
    all_seeds = np.random.SeedSequence(seed).generate_state(len(STUDIES))
    seeds = [int(all_seeds[STUDIES.index(name)]) for name in names]
    results: dict = {}
    t_start = time.perf_counter()
    n = len(names)
    with progress.bar(n, desc="validate") as bar:
        finished = []

        def done(name, out):
            finished.append(name)
            progress(f"[{len(finished)}/{n}] {name} done in {out['seconds']:.1f} s")
            bar.update(1)

        if parallel:
            progress(f"running {n} studies in {min(jobs, n)} processes")
            outs = _run_parallel(names, preset, seeds, jobs, progress, done)
        else:
            outs = []
            assert modules is not None  # loaded above when the studies run in this process
            for i, (name, mod) in enumerate(zip(names, modules), start=1):
                progress(f"[{i}/{n}] {mod.TITLE} ...")
                bar.set_postfix_str(name)
                outs.append(_run_study(name, preset, seeds[i - 1], progress))
                done(name, outs[-1])
    sections = []
    for name, out in zip(names, outs):
        clash = set(out["result"]) & set(results)
        if clash:
            raise RuntimeError(f"study {name} repeats results.json keys {sorted(clash)}")
        results.update(out["result"])
        sections.append(
            {
                "id": name,
                "title": out["title"],
                "html": out["html"],
                "seconds": out["seconds"],
                "summary": out["summary"],
            }
        )
    total = time.perf_counter() - t_start
    meta = {
        "version": __version__,
        "preset": preset.name,
        "seed": seed,
        "studies": names,
        "partial": set(names) != set(STUDIES),
        "jobs": min(jobs, n),
        "generated": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "total_seconds": total,
        "section_seconds": {s["id"]: s["seconds"] for s in sections},
        "versions": _versions(),
    }
    html = render_page(title="changerate_bayes validation report", sections=sections, meta=meta)
    path = write_report(out_dir, html=html, results={"meta": meta, **results})
    progress(f"report written to {path} ({total:.1f} s)")
    return path
