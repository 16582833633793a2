"""The HTML report of a user's own crawl log: rates across pages, the busiest pages, the audit."""

from __future__ import annotations

import datetime
import math
import os
import platform
import time
import warnings

import numpy as np
import pandas as pd
import scipy
from markupsafe import escape

from .._version import __version__
from ..datasets import DATASETS, dataset_path
from ..diagnostics import interval_calibration, poisson_gof
from ..io import Audit, CrawlLog
from ..report import figure_to_html, html_table, render_page

__all__ = [
    "crawl_diagnostics",
    "detection_times",
    "estimate_report",
    "diagnose_report",
    "log_attribution",
    "shorten_label",
    "OTA_ATTRIBUTION",
]

_HOURS_PER_DAY = 24.0

#: Attribution of the shipped Open Terms Archive data (kept wherever the data is shown).
OTA_ATTRIBUTION = (
    'Data: Open Terms Archive (licence ODC-BY 1.0), "Open Terms Archive contributors"; dating '
    'collection "Open Terms Archive with contributions from the Dating Privacy collective".'
)


def log_attribution(paths, fmt: str) -> str | None:
    """The data attribution for a report on the logs ``paths`` read as format ``fmt``.

    :data:`OTA_ATTRIBUTION` only when every file is one of the shipped Open Terms
    Archive files (the same file, also through links); for any other file in that
    format, a note of the format alone, which credits no collection; None otherwise.
    """
    shipped = [dataset_path(n) for n in DATASETS if n.startswith("ota_")]

    def is_shipped(p) -> bool:
        try:
            return any(os.path.samefile(p, s) for s in shipped if s.exists())
        except OSError:
            return False

    paths = list(paths)
    if paths and all(is_shipped(p) for p in paths):
        return OTA_ATTRIBUTION
    if fmt == "ota":
        return "Read in the Open Terms Archive observations format."
    return None


def detection_times(log: CrawlLog) -> tuple[np.ndarray, np.ndarray]:
    """Times (hours since each page's first visit) of the crawls that saw a change.

    Returns
    -------
    times : ndarray of float64, shape (n_detections,)
    page : ndarray of int64, same shape
        Page number (row of the history) of each time; pages in order, times sorted.
    """
    h = log.history
    t = np.cumsum(h.flat_intervals)
    start = np.concatenate(([0.0], t))[h.offsets[:-1]]
    t = t - np.repeat(start, h.lengths)
    hit = h.flat_changed.astype(bool)
    return t[hit], h.page_index()[hit]


def _json_safe(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _records(table: pd.DataFrame) -> list[dict]:
    out = []
    for rec in table.to_dict("records"):
        row = {}
        for k, v in rec.items():
            if isinstance(v, pd.Timestamp):
                v = None if pd.isna(v) else v.isoformat()
            elif isinstance(v, (np.floating, float)):
                v = _json_safe(float(v))
            elif isinstance(v, np.integer):
                v = int(v)
            elif v is pd.NaT:
                v = None
            row[k] = v
        out.append(row)
    return out


def _audit_html(audit: Audit):
    rows = [{"item": k, "value": v} for k, v in audit.as_dict().items() if k not in ("dropped", "sources")]
    rows += [{"item": f"dropped: {r}", "value": n} for r, n in audit.dropped]
    rows.append({"item": "sources", "value": ", ".join(audit.sources)})
    return html_table(rows, [("item", "Audit"), ("value", "Count")], caption="Every row read, accounted for")


def _rate_figure(table: pd.DataFrame):
    import matplotlib  # optional dependency, heavy: imported when a report is written

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rate = table["rate_per_day"].to_numpy()
    rate = rate[np.isfinite(rate) & (rate > 0)]
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    if rate.size:
        bins = np.logspace(np.log10(rate.min()) - 0.05, np.log10(rate.max()) + 0.05, min(40, max(5, rate.size // 2)))
        ax.hist(rate, bins=bins, color="#4477aa")  # type: ignore[arg-type]  # matplotlib's stub says Sequence[float]; it takes arrays
        ax.set_xscale("log")
    ax.set_xlabel("recommended change rate (changes per day)")
    ax.set_ylabel("pages")
    return figure_to_html(fig, alt="Histogram of the recommended change rate across pages, log scale")


def _forest_figure(top: pd.DataFrame, level: float):
    import matplotlib.pyplot as plt  # optional dependency, heavy: imported when a report is written

    fig, ax = plt.subplots(figsize=(6.5, 0.45 * len(top) + 1.2), layout="constrained")
    y = np.arange(len(top))[::-1]
    m, lo, hi = (
        top[c].to_numpy(dtype=np.float64) for c in ("rate_per_day", "rate_lower_per_day", "rate_upper_per_day")
    )
    # a page only bounded below (rate_bound "lower") has no upper end: its bar runs to the plot's edge,
    # marked by an arrow; its rate (the posterior mean) may lie outside its interval
    unbounded = ~np.isfinite(hi)
    finite = np.concatenate([m, lo, hi[~unbounded]])
    edge = 1.1 * float(np.nanmax(finite[np.isfinite(finite)], initial=1.0))
    hi = np.where(unbounded, edge, hi)
    out = (lo > m) | (hi < m)  # the rate outside its interval: the interval is drawn on its own
    err = [np.where(out, 0.0, m - lo), np.where(out, 0.0, hi - m)]
    ax.errorbar(m, y, xerr=err, fmt="o", color="#aa3377", capsize=3)
    if out.any():
        ax.hlines(y[out], lo[out], hi[out], color="#aa3377")
        ax.plot(lo[out], y[out], "|", color="#aa3377")
    what = "credible interval"
    if unbounded.any():
        ax.plot(hi[unbounded], y[unbounded], ">", color="#aa3377")
        what = "interval; ▶: no upper bound"
    # page names are plain text (a URL's "$5-$10" is not mathtext), shortened in the middle
    ax.set_yticks(y, [shorten_label(p, 44) for p in top["page"]], fontsize=7, parse_math=False)
    ax.set_xlabel(f"change rate per day\n(recommended rate and {level:.0%} {what})")
    return figure_to_html(fig, alt="Recommended rates and credible intervals of the busiest pages")


def shorten_label(name, max_chars: int = 44) -> str:
    """``name`` as text of at most ``max_chars`` characters: longer names keep their
    start and end around an ellipsis.

    Raises
    ------
    ValueError
        If ``max_chars`` < 5.

    Examples
    --------
    >>> shorten_label("https://example.com/a/very/long/path/to/one/page.html", 30)
    'https://exa…h/to/one/page.html'
    >>> shorten_label("short")
    'short'
    """
    text = str(name)
    if max_chars < 5:
        raise ValueError(f"`max_chars` must be >= 5; got {max_chars}")
    if len(text) <= max_chars:
        return text
    head = (max_chars - 1) * 2 // 5
    return text[:head] + "…" + text[len(text) - (max_chars - 1 - head) :]


def crawl_diagnostics(
    log: CrawlLog, *, pages=None, max_pages: int = 20, seed: int = 0, n_resamples: int = 199, alpha: float = 0.05
) -> list[dict]:
    """Poisson diagnostics of a crawl log, page by page: crawl-grid tests of the crawls
    that saw a change, and the interval calibration of each page's history.

    The detections (visits that saw a change) are tested by
    :func:`~changerate_bayes.diagnostics.poisson_gof` with ``crawl_interval`` the
    page's median interval, i.e. as independent crawls on their grid; the exact-time
    tests never run on them. :func:`~changerate_bayes.diagnostics.interval_calibration`
    tests P(I = 1 | τ) = 1 − e^{−Δτ} on the page's crawl intervals.

    Parameters
    ----------
    log : CrawlLog
    pages : sequence, optional
        Pages to test, in order (default: the ``max_pages`` pages with most changes seen).
    max_pages : int, default 20
    seed : int, default 0
        Seed of the Monte Carlo p-values.
    n_resamples : int, default 199
    alpha : float, default 0.05
        Family-wise level of the Holm-corrected rejections.

    Returns
    -------
    list of dict
        One per page: ``page``, ``visits``, ``detections``, ``step`` (median crawl
        interval, hours), ``rejected`` (tests rejected, "none", or "—" when fewer than
        3 detections), ``calibration_p`` (float, or the reason it was not tested),
        ``reading`` (rates in changes per day) and ``tests`` ({test: {"pvalue",
        "reading"}}, empty if not tested).
    """
    calib = interval_calibration(log.history)
    times, page = detection_times(log)
    h = log.history
    if pages is None:
        n_det = np.bincount(page, minlength=len(log.page_ids))
        order = np.lexsort((np.arange(n_det.size), -n_det))[:max_pages]  # most changes seen, then log order
        pages = [log.page_ids[i] for i in order]
    index = {p: i for i, p in enumerate(log.page_ids)}
    rows = []
    for p in pages:  # a handful of pages, each its own trace
        i = index[p]
        t = times[page == i]
        lo, hi = h.offsets[i], h.offsets[i + 1]
        step = float(np.median(h.flat_intervals[lo:hi]))
        row = {
            "page": p,
            "visits": int(hi - lo) + 1,
            "detections": int(t.size),
            "step": step,
            "calibration_p": _calib_p(calib, i),
        }
        if t.size < 3:
            rows.append({**row, "rejected": "—", "reading": "fewer than 3 changes seen: not tested", "tests": {}})
            continue
        with warnings.catch_warnings():  # in days, so that the readings' rates are per day
            warnings.simplefilter("ignore")
            res = poisson_gof(
                t / _HOURS_PER_DAY, crawl_interval=step / _HOURS_PER_DAY, n_resamples=n_resamples, rng=seed
            )
        rej = res.rejected(alpha)
        reading = res.summary(alpha).split("\n")[0].replace("per input time unit", "per day")
        rows.append(
            {
                **row,
                "rejected": ", ".join(rej) if rej else "none",
                "reading": reading,
                "tests": {
                    k: {"pvalue": _json_safe(v.pvalue), "reading": v.reading} for k, v in res.tests.items() if v.ran
                },
            }
        )
    return rows


def _gof_rows(log: CrawlLog | None, top: pd.DataFrame, *, seed: int, n_resamples: int):
    """Poisson diagnostics of the busiest pages' detections (crawl-grid tests)."""
    if log is None:
        return []
    rows = crawl_diagnostics(log, pages=list(top["page"]), seed=seed, n_resamples=n_resamples)
    return [
        {
            "page": r["page"],
            "detections": r["detections"],
            "crawl step (h)": r["step"],
            "rejected (Holm 5%)": r["rejected"],
            "interval calibration p": r["calibration_p"],
            "reading": r["reading"],
        }
        for r in rows
    ]


def _calib_p(calib, i):
    return float(calib.pvalue[i]) if calib.status[i] == "ok" else calib.status[i]


def estimate_report(
    table: pd.DataFrame,
    audit: Audit,
    *,
    log: CrawlLog | None = None,
    busiest: int = 6,
    seed: int = 0,
    n_resamples: int = 199,
    attribution: str | None = None,
    started: float | None = None,
):
    """HTML and JSON results of ``changerate-bayes estimate --report``.

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`changerate_bayes.estimate_pages`.
    audit : Audit
    log : CrawlLog, optional
        Needed for the Poisson diagnostics of the busiest pages (detection times).
    busiest : int, default 6
        Pages (most changes seen) shown with their posteriors and diagnostics.
    seed : int, default 0
        Seed of the diagnostics' Monte Carlo p-values.
    n_resamples : int, default 199
    attribution : str, optional
        Data attribution shown in the header (see :func:`log_attribution`).
    started : float, optional
        ``time.perf_counter()`` when the command started: the header gives the time from
        then to the report (default: the time this function takes).

    Returns
    -------
    (str, dict)
        The page (self-contained HTML) and the results for ``results.json``.
    """
    started = time.perf_counter() if started is None else started
    t0 = time.perf_counter()
    level = table.attrs.get("level", 0.9)
    top = table.sort_values(["n_changes", "rate_per_day"], ascending=False).head(busiest)
    methods = [c for c in table.columns if c in ("naive", "lln", "sa", "sam", "mle", "mm", "regular")]
    rate = table["rate_per_day"].to_numpy()
    q = np.quantile(rate, [0.1, 0.5, 0.9])
    chosen = table["rate_method"].value_counts()
    intro = (
        f"<p>{len(table)} pages; recommended change rate per day: 10% {q[0]:.3g}, median {q[1]:.3g}, "
        f"90% {q[2]:.3g} ({int(chosen.get('mle', 0))} pages by the MLE, "
        f"{int(chosen.get('posterior_mean', 0))} by the posterior mean). Prior {table.attrs.get('prior', '')}; "
        f"budget {table.attrs.get('budget_per_day', float('nan')):.4g} crawls/day "
        f"({table.attrs.get('objective', '')}). All rates in changes per day, intervals in hours.</p>"
        f"<p>{_esc(table.attrs.get('rate_rule', ''))}.</p>"
    )
    warn = table.attrs.get("warnings") or []
    warn_html = ""
    if warn:
        warn_html = (
            f"<details><summary>Model checks of the estimators: {len(warn)} warning(s)</summary>"
            + "".join(f"<p class='verdict mixed'>{_esc(w)}</p>" for w in warn)
            + "</details>"
        )
    rates_html = intro + str(_rate_figure(table)) + warn_html
    t1 = time.perf_counter()
    forest_html = str(_forest_figure(top, level))
    t2 = time.perf_counter()
    gof = _gof_rows(log, top, seed=seed, n_resamples=n_resamples)
    t3 = time.perf_counter()
    audit_html = str(_audit_html(audit))
    t4 = time.perf_counter()
    cols = [
        "page",
        "n_crawls",
        "n_changes",
        "mean_interval_h",
        "rate_per_day",
        "rate_lower_per_day",
        "rate_upper_per_day",
        "rate_method",
        *methods,
        "crawl_interval_h",
    ]
    sections: list[dict] = [
        {"id": "rates", "title": "Change rates across pages", "seconds": t1 - t0, "html": rates_html},
        {
            "id": "busiest",
            "title": f"The {len(top)} busiest pages",
            "seconds": t2 - t1,
            "html": forest_html
            + str(html_table(_records(top[cols]), cols, caption="Rates in changes per day; intervals in hours")),
        },
        {
            "id": "poisson",
            "title": "Poisson diagnostics of the busiest pages",
            "seconds": t3 - t2,
            "html": (
                "<p>Crawl-grid tests of the times at which crawls saw a change, and the interval calibration "
                "of each page's history (P(I = 1 | τ) = 1 − e<sup>−Δτ</sup> by interval bins). These are "
                "findings about the data: a rejection says these pages' changes are not a homogeneous Poisson "
                "process.</p>"
                + str(
                    html_table(
                        gof,
                        [
                            "page",
                            "detections",
                            "crawl step (h)",
                            "rejected (Holm 5%)",
                            "interval calibration p",
                            "reading",
                        ],
                    )
                )
                if gof
                else "<p>Not available for this engine.</p>"
            ),
        },
        {"id": "audit", "title": "Audit of the log", "seconds": t4 - t3, "html": audit_html},
    ]
    if attribution:
        sections[0]["html"] = f"<p><em>{_esc(attribution)}</em></p>" + sections[0]["html"]
    sections[0]["html"] = f"<p>Sources: {_esc(', '.join(audit.sources))}</p>" + sections[0]["html"]
    html = render_page(
        title="Change rates of your pages",
        sections=sections,
        meta=_meta("estimate", seed, time.perf_counter() - started),
    )
    results = {
        "audit": audit.as_dict(),
        "pages": _records(table),
        "diagnostics": gof,
        "attrs": {k: (v if not isinstance(v, float) else _json_safe(v)) for k, v in table.attrs.items()},
    }
    return html, results


def diagnose_report(
    results: list,
    *,
    sources,
    alpha: float = 0.05,
    seed: int = 0,
    kind: str = "events",
    n_pages: int | None = None,
    started: float | None = None,
):
    """HTML and JSON results of ``changerate-bayes diagnose``: a summary and one section per page.

    Parameters
    ----------
    results : list
        ``kind="events"``: (page, PoissonGOFResult) pairs of exact change times;
        ``kind="crawl"``: the rows of :func:`crawl_diagnostics`.
    sources : sequence of str
    alpha : float, default 0.05
    seed : int, default 0
    kind : {"events", "crawl"}, default "events"
    n_pages : int, optional
        Pages in the file (default: those in ``results``); the report says when only
        some were tested.
    started : float, optional
        ``time.perf_counter()`` at the command's start, for the run time in the header.
    """
    started = time.perf_counter() if started is None else started
    if kind not in ("events", "crawl"):
        raise ValueError(f"`kind` must be 'events' or 'crawl'; got {kind!r}")
    n_pages = len(results) if n_pages is None else n_pages
    rows, details, pages = [], {}, []
    if kind == "events":
        for page, res in results:
            rej = res.rejected(alpha)
            rows.append(
                {
                    "page": page,
                    "events": res.n_events,
                    "rate per hour": res.rate,
                    "rejected (Holm)": ", ".join(rej) if rej else "none",
                }
            )
            details[str(page)] = res.to_dict()
            tests = [{"test": k, "p-value": v.pvalue, "reading": v.reading} for k, v in res.tests.items()]
            pages.append(
                (page, f"<p>{_esc(res.summary(alpha))}</p>" + str(html_table(tests, ["test", "p-value", "reading"])))
            )
        columns = ["page", "events", "rate per hour", "rejected (Holm)"]
        intro = "<p>Exact change times: every test of the homogeneous Poisson model.</p>"
        title = "Is it Poisson? Your change times"
    else:
        for r in results:
            rows.append(
                {
                    "page": r["page"],
                    "visits": r["visits"],
                    "changes seen": r["detections"],
                    "crawl step (h)": r["step"],
                    "rejected (Holm)": r["rejected"],
                    "interval calibration p": r["calibration_p"],
                }
            )
            details[str(r["page"])] = {k: v for k, v in r.items() if k != "page"}
            tests = [{"test": k, "p-value": v["pvalue"], "reading": v["reading"]} for k, v in r["tests"].items()]
            pages.append(
                (
                    r["page"],
                    f"<p>{_esc(r['reading'])}</p>"
                    + (str(html_table(tests, ["test", "p-value", "reading"])) if tests else ""),
                )
            )
        columns = ["page", "visits", "changes seen", "crawl step (h)", "rejected (Holm)", "interval calibration p"]
        intro = (
            "<p>A crawl log: each row is a visit, not a change. The visits that saw a change are tested on their "
            "crawl grid (independent crawls of the median step), and the interval calibration tests "
            "P(I = 1 | τ) = 1 − e<sup>−Δτ</sup> by interval bins; tests for exact change times are not run on "
            "crawl detections.</p>"
        )
        title = "Is it Poisson? Your crawl log"
    tested = (
        f"<p>{len(results)} of {n_pages} pages tested (the busiest; --max-pages); the others are not detailed.</p>"
        if len(results) < n_pages
        else f"<p>All {n_pages} page(s) tested.</p>"
    )
    sections = [
        {
            "id": "summary",
            "title": "Poisson diagnostics",
            "seconds": None,  # not timed apart
            "html": f"<p>Sources: {_esc(', '.join(map(str, sources)))}</p>"
            + intro
            + tested
            + str(html_table(rows, columns)),
        }
    ]
    for page, body in pages:
        sections.append({"id": f"page-{len(sections)}", "title": f"Page {page}", "seconds": None, "html": body})
    html = render_page(title=title, sections=sections, meta=_meta("diagnose", seed, time.perf_counter() - started))
    return html, {"kind": kind, "n_pages": n_pages, "pages": rows, "details": details}


def _meta(command: str, seed: int, seconds: float) -> dict:
    import matplotlib  # optional dependency, heavy: its version only when a report is written

    return {
        "preset": command,
        "seed": seed,
        "total_seconds": seconds,
        "version": __version__,
        "generated": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "pandas": pd.__version__,
            "scipy": scipy.__version__,
            "matplotlib": matplotlib.__version__,
        },
    }


def _esc(text: str) -> str:
    return str(escape(text))
