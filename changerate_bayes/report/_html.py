"""HTML building blocks for the validation report (Jinja2 templates)."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import math
import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

import jinja2
import numpy as np
from markupsafe import Markup, escape

__all__ = [
    "VERDICT_KINDS",
    "VERDICT_SEVERITY",
    "check_output_dir",
    "figure_context",
    "figure_to_html",
    "folder_lock",
    "format_duration",
    "format_pvalue",
    "format_value",
    "html_table",
    "render_page",
    "section_outcome",
    "summary_row",
    "verdict_boxes",
    "verdict_html",
    "write_report",
]

_ENV = None


def _env() -> jinja2.Environment:
    global _ENV
    if _ENV is None:
        _ENV = jinja2.Environment(
            loader=jinja2.PackageLoader("changerate_bayes.report", "templates"),
            autoescape=jinja2.select_autoescape(["html", "j2"]),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        _ENV.filters["fmt"] = format_value
        _ENV.filters["fmt_p"] = format_pvalue
        _ENV.filters["duration"] = format_duration
        _ENV.tests["number"] = lambda x: (
            isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))
        )
    return _ENV


def format_value(x, digits: int = 4) -> str:
    """Format a table cell: floats to ``digits`` significant digits, None as '—'."""
    if x is None:
        return "—"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (float, np.floating)):
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "∞" if x > 0 else "−∞"
        if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e6):  # type: ignore[operator]  # numpy's stub: abs(floating[Any]) is object
            return f"{x:.{digits - 1}e}"
        return f"{x:.{digits}g}"
    return str(x)


def format_duration(seconds) -> str:
    """A run time for the report's header: milliseconds below 1 s, one decimal below 10 s.

    Examples
    --------
    >>> format_duration(0.0123), format_duration(3.21), format_duration(492.4)
    ('12 ms', '3.2 s', '492 s')
    """
    seconds = float(seconds)
    if seconds < 1.0:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 10.0:
        return f"{seconds:.1f} s"
    return f"{seconds:.0f} s"


#: matplotlib settings of the report's figures (see :func:`figure_context`)
FIGURE_RC = {"figure.constrained_layout.use": True}


def figure_context():
    """Context manager in which new matplotlib figures get the report's settings.

    Figures made inside it use constrained layout (``layout="constrained"``), so
    :func:`figure_to_html` saves them as they are, without a tight bounding box that
    would draw each figure twice. The validation runner renders every study in it.
    """
    import matplotlib  # matplotlib: heavy, loaded only to draw

    return matplotlib.rc_context(FIGURE_RC)


#: p-values below this are shown as "< 1e-4": Monte Carlo and table p-values carry no more
#: precision, and asymptotic ones (1e-242) only say "far below any level"
PVALUE_FLOOR = 1e-4


def format_pvalue(p, n_draws: int | None = None) -> str:
    """Format a p-value for a table: "< 1e-4" below 1e-4, else 3 significant digits.

    A Monte Carlo p-value estimated from ``n_draws`` replications (or permutations,
    posterior draws) that is 0 only says that p is below 1/N: it prints as ``"< 1/N"``.

    Examples
    --------
    >>> format_pvalue(4.612e-242), format_pvalue(0.0), format_pvalue(0.012345), format_pvalue(1.0)
    ('< 1e-4', '< 1e-4', '0.0123', '1')
    >>> format_pvalue(0.0, n_draws=2000), format_pvalue(0.25, n_draws=2000)
    ('< 1/2000', '0.25')
    """
    if p is None:
        return "—"
    p = float(p)
    if math.isnan(p):
        return "NaN"
    if n_draws is not None and p == 0:
        return f"< 1/{int(n_draws)}"
    if p < PVALUE_FLOOR:
        return "< 1e-4"
    return f"{p:.3g}"


_PVALUE_KEY = re.compile(r"(^|_)p(_?value)?(_|$)", re.IGNORECASE)


def is_pvalue_column(key: str, header: str) -> bool:
    """True for a table column of p-values: key ``p``, ``pvalue``, ``p_value``
    (optionally prefixed or suffixed with ``_``) or a header naming a p-value."""
    return bool(_PVALUE_KEY.search(str(key))) or "p-value" in str(header).lower()


def figure_to_html(fig, *, alt: str, dpi: int = 90) -> Markup:
    """Embed a matplotlib figure as a PNG data URI ``<img>`` and close the figure.

    The figure is saved at its own size, drawn once: make it with a layout engine
    (constrained layout inside :func:`figure_context`) so that nothing is clipped.
    The PNG is flattened on white and stored with a 256-colour palette (about a third
    of the size of the full-colour PNG).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    alt : str
        Alternative text describing what the figure shows.
    dpi : int, default 90

    Returns
    -------
    markupsafe.Markup
        ``<figure><img ...></figure>`` HTML, safe to insert in a template.
    """
    import matplotlib.pyplot as plt  # matplotlib: heavy, loaded only to draw

    if fig.get_layout_engine() is None:  # a figure made outside figure_context(): lay it out once, here
        fig.set_layout_engine("constrained")
    _integer_ticks(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    data = base64.b64encode(_palette_png(buf.getvalue())).decode("ascii")
    return Markup(f'<figure><img src="data:image/png;base64,{data}" alt="{escape(alt)}"></figure>')


def _axis_values(ax, which: str) -> np.ndarray:
    """Data drawn on the x or y axis of ``ax``: line coordinates, and bar edges/heights."""
    vals = []
    for line in ax.get_lines():
        vals.append(np.asarray(line.get_xdata() if which == "x" else line.get_ydata(), dtype=object))
    for patch in ax.patches:
        if type(patch).__name__ == "Rectangle":
            x0, y0, w, h = patch.get_x(), patch.get_y(), patch.get_width(), patch.get_height()
            vals.append(np.array([x0 + w / 2] if which == "x" else [y0 + h], dtype=object))
    if not vals:
        return np.zeros(0)
    try:
        out = np.concatenate([v.ravel() for v in vals]).astype(np.float64)
    except (TypeError, ValueError):  # dates or categories: not a number axis
        return np.zeros(0)
    return out[np.isfinite(out)]


def _integer_ticks(fig) -> None:
    """Integer ticks on every linear axis whose drawn data are all whole numbers (crawl
    counts, cycles, ranks), so that no tick reads 2.5 crawls."""
    from matplotlib.ticker import AutoLocator, MaxNLocator  # matplotlib: heavy, loaded only to draw

    for ax in fig.get_axes():
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if axis.get_scale() != "linear" or type(axis.get_major_locator()) is not AutoLocator:
                continue
            vals = _axis_values(ax, which)
            if vals.size >= 2 and np.all(vals == np.round(vals)) and np.ptp(vals) >= 1:
                axis.set_major_locator(MaxNLocator(integer=True))


def _palette_png(png: bytes) -> bytes:
    """The PNG flattened on white and reduced to a 256-colour palette (Pillow's fast
    octree): line plots keep their look at about a third of the bytes."""
    from PIL import Image  # Pillow (with matplotlib): loaded only to write PNGs

    img = Image.open(io.BytesIO(png))
    flat = Image.new("RGB", img.size, "white")
    flat.paste(img, mask=img.getchannel("A") if img.mode == "RGBA" else None)
    out = io.BytesIO()
    flat.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(out, format="PNG", optimize=True)
    return out.getvalue()


def html_table(records, columns, *, caption: str | None = None, digits: int = 4) -> Markup:
    """An HTML table from a list of dicts.

    Parameters
    ----------
    records : list of dict
    columns : list of str or list of (key, header) pairs
        Which keys to show, in order, with optional headers.
    caption : str, optional
    digits : int, default 4
        Significant digits for floats.

    Notes
    -----
    Text cells are left-aligned and numbers right-aligned; p-value columns (see
    :func:`is_pvalue_column`) are formatted by :func:`format_pvalue`.
    """
    cols = [(c, c) if isinstance(c, str) else tuple(c) for c in columns]
    cols = [(key, header, is_pvalue_column(key, header)) for key, header in cols]
    return Markup(
        _env().get_template("table.html.j2").render(records=records, columns=cols, caption=caption, digits=digits)
    )


#: verdict kinds: CSS class and label of the box
VERDICT_KINDS = {
    "holds": ("ok", "Holds"),
    "fails": ("fail", "Does not hold"),
    "mixed": ("mixed", "Mixed"),
    "finding": ("finding", "Finding about the data"),
}


def verdict_html(text: str, ok: bool | None = None, *, kind: str | None = None) -> Markup:
    """A verdict box, styled by what it reports.

    Parameters
    ----------
    text : str
        The verdict in words (escaped).
    ok : bool or None, default None
        For a check of a claim: True (holds), False (fails), None (mixed).
    kind : {"holds", "fails", "mixed", "finding"}, optional
        Overrides ``ok``. ``"finding"`` is a statement about the data (e.g. "the
        Poisson model is rejected on this real trace"), neither a pass nor a failure of
        the software, shown in a neutral style.

    Returns
    -------
    markupsafe.Markup
        ``<p class="verdict ...">`` HTML.

    Raises
    ------
    ValueError
        For an unknown ``kind``.
    """
    if kind is None:
        kind = {True: "holds", False: "fails", None: "mixed"}[ok]
    if kind not in VERDICT_KINDS:
        raise ValueError(f"`kind` must be one of {sorted(VERDICT_KINDS)}; got {kind!r}")
    cls, label = VERDICT_KINDS[kind]
    return Markup(f'<p class="verdict {cls}"><strong>{label}:</strong> {escape(text)}</p>')


def summary_row(*, verdict: str, key_number: str, kind: str) -> dict:
    """The summary-table entry a study's ``summarize(result)`` returns.

    Parameters
    ----------
    verdict : str
        One sentence: what the study concludes.
    key_number : str
        The number that carries the verdict, with its unit or comparison.
    kind : {"holds", "fails", "mixed", "finding"}
        As in :func:`verdict_html`.

    Raises
    ------
    ValueError
        For an unknown ``kind`` or an empty verdict.
    """
    if kind not in VERDICT_KINDS:
        raise ValueError(f"`kind` must be one of {sorted(VERDICT_KINDS)}; got {kind!r}")
    if not str(verdict).strip():
        raise ValueError("`verdict` must not be empty")
    return {"verdict": str(verdict), "key_number": str(key_number), "kind": kind}


#: how bad each verdict kind is, for :func:`section_outcome` ("finding" is neutral, like "holds")
VERDICT_SEVERITY = {"holds": 0, "finding": 0, "mixed": 1, "fails": 2}
_BOX = re.compile(r'<p class="verdict (ok|fail|mixed|finding)">')
_BOX_KIND = {cls: kind for kind, (cls, _) in VERDICT_KINDS.items()}


def verdict_boxes(html: str) -> list[str]:
    """The kinds of the verdict boxes (:func:`verdict_html`) in an HTML fragment, in order."""
    return [_BOX_KIND[m.group(1)] for m in _BOX.finditer(str(html))]


def section_outcome(summary: dict, html: str) -> dict:
    """A section's summary row, never kinder than the worst verdict box of the section.

    The row's ``kind`` becomes the worst kind among its own and the section's boxes
    (by :data:`VERDICT_SEVERITY`: "fails" > "mixed" > "holds" = "finding"); when a box
    makes it worse, the verdict says how many boxes of that kind the section has.

    Parameters
    ----------
    summary : dict
        From :func:`summary_row`.
    html : str
        The section's HTML, with its verdict boxes.

    Returns
    -------
    dict
        A new summary row (``summary`` itself is not changed).

    Examples
    --------
    >>> row = summary_row(verdict="LLN beats uniform.", key_number="0.9", kind="holds")
    >>> out = section_outcome(row, str(verdict_html("plug-in worse than uniform", False)))
    >>> out["kind"], out["verdict"]
    ('fails', 'LLN beats uniform. But 1 check in this section does not hold.')
    """
    boxes = verdict_boxes(html)
    worst = max(boxes, key=VERDICT_SEVERITY.__getitem__, default=summary["kind"])
    if VERDICT_SEVERITY[worst] <= VERDICT_SEVERITY[summary["kind"]]:
        return dict(summary)
    n = boxes.count(worst)
    what = {"fails": "does not hold" if n == 1 else "do not hold", "mixed": "is mixed" if n == 1 else "are mixed"}
    verdict = summary["verdict"].rstrip()
    verdict += (
        "" if verdict.endswith(".") else "."
    ) + f" But {n} check{'s' if n > 1 else ''} in this section {what[worst]}."
    return {**summary, "verdict": verdict, "kind": worst}


def render_page(*, title: str, sections: list[dict], meta: dict) -> str:
    """Render the whole report page.

    Parameters
    ----------
    title : str
    sections : list of dict
        Each with ``id``, ``title``, ``html`` (an HTML fragment) and ``seconds`` (the
        time it took to compute, or None when it was not timed apart), and
        optionally ``summary`` (:func:`summary_row`), its row of the summary table,
        shown no kinder than the section's worst verdict box (:func:`section_outcome`).
    meta : dict
        Shown in the header (preset, seed, versions, date).
    """
    sections = [
        dict(s, html=Markup(s["html"]), summary=section_outcome(s["summary"], s["html"]) if s.get("summary") else None)
        for s in sections
    ]
    return _env().get_template("report.html.j2").render(title=title, sections=sections, meta=meta)


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"results.json: cannot serialise {type(o).__name__}")


_REPORT_FILES = ("index.html", "results.json")


def check_output_dir(out_dir) -> Path:
    """Check, before any work, that a report can be written into ``out_dir``.

    Creates the folder (and its parents) if needed and tries a temporary file in it.

    Raises
    ------
    TypeError
        If ``out_dir`` is not a str or path.
    ValueError
        If it is empty, is an existing file, cannot be created or written, or holds a
        folder named ``index.html`` or ``results.json``.
    """
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"`out_dir` must be a folder path; got {type(out_dir).__name__}")
    if str(out_dir).strip() == "":
        raise ValueError("`out_dir` must not be empty: give a folder for index.html and results.json")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"`out_dir` {str(out)!r} is an existing file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise ValueError(f"`out_dir` {str(out)!r} cannot be written: {exc.strerror or exc}") from None
    for name in _REPORT_FILES:
        if (out / name).exists() and not (out / name).is_file():
            raise ValueError(f"`out_dir` {str(out)!r} holds a folder named {name!r}; remove or rename it")
    return out


def write_report(out_dir, *, html: str, results: dict) -> Path:
    """Write ``index.html`` and ``results.json`` into ``out_dir`` atomically.

    Both files are first written to a temporary folder inside ``out_dir`` and then
    moved into place under an exclusive lock on the folder ``out_dir``, so two
    processes writing to the same folder at once leave one complete pair, never
    ``index.html`` of one run beside ``results.json`` of the other; if moving the
    second file fails, the first is put back, so a failure never leaves a partial or
    mixed report.

    Raises
    ------
    ValueError
        If ``results`` holds NaN or infinity (not valid JSON: use None), or
        ``out_dir`` cannot hold the report (see :func:`check_output_dir`).
    """
    payload = json.dumps(results, indent=1, default=_json_default, allow_nan=False)
    out = check_output_dir(out_dir)
    tmp = Path(tempfile.mkdtemp(prefix=".report-", dir=out))
    try:
        (tmp / "index.html").write_text(html, encoding="utf-8")
        (tmp / "results.json").write_text(payload, encoding="utf-8")
        with folder_lock(out):  # another process swapping its pair in waits for this swap to end
            backups = []
            try:
                for name in _REPORT_FILES:
                    if (out / name).exists():
                        os.replace(out / name, tmp / f"old-{name}")
                        backups.append(name)
                    os.replace(tmp / name, out / name)
            except OSError:
                for name in backups:  # put the previous report back
                    os.replace(tmp / f"old-{name}", out / name)
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out / "index.html"


_LOCK_FILE = ".report.lock"  # only where the folder itself cannot be locked (not POSIX)
_HELD = threading.local()  # (device, inode) of the folders this thread holds locked


@contextlib.contextmanager
def folder_lock(folder):
    """Hold an exclusive lock on ``folder`` itself (``fcntl.flock`` of the folder's
    descriptor), which leaves no file behind.

    Another process or thread waits until the lock is released. The lock is re-entrant
    within a thread: a thread that already holds it on the same folder (also under
    another path) goes on, so a command may lock its table's folder and then write a
    report into the same folder. On systems without ``flock``, an ``O_EXCL`` lock file
    ``.report.lock`` is polled every 50 ms and removed on release.
    """
    st = os.stat(folder)
    key = (st.st_dev, st.st_ino)
    held = _HELD.__dict__.setdefault("keys", set())
    if key in held:
        yield
        return
    try:
        import fcntl  # fcntl: POSIX only
    except ImportError:  # pragma: no cover - not POSIX
        fcntl = None
    held.add(key)
    try:
        if fcntl is not None:
            fd = os.open(folder, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # closing the descriptor releases the lock
            return
        path = Path(folder) / _LOCK_FILE  # pragma: no cover - not POSIX
        while True:  # pragma: no cover
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                break
            except FileExistsError:
                time.sleep(0.05)
        try:  # pragma: no cover
            yield
        finally:  # pragma: no cover
            os.close(fd)
            os.unlink(path)
    finally:
        held.discard(key)
