"""Render a report in headless Chromium and check that every image loads and nothing
is wider than the page.

Run: ``python -m changerate_bayes.report.browser reports/index.html`` (exit status 0 if
the page passes, 1 if not, 2 if Chromium is missing). Needs Debian's ``chromium``
(``apt-get install chromium``) or ``$CHROMIUM`` pointing at a Chromium binary.

The page is copied next to a small script that, once the page has loaded, measures in
the browser: every ``<img>`` decoded with a non-zero size, the document no wider than
the window, and every table no wider than the box that holds it. The script writes the
measurements into the DOM, which ``chromium --headless --dump-dom`` prints.
"""

from __future__ import annotations

import html as _html
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BrowserCheck", "browser_check", "find_chromium"]

_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
)

_PROBE = """
<script>
window.addEventListener("load", function () {
  var imgs = Array.from(document.images);
  var broken = imgs.filter(function (im) { return !(im.complete && im.naturalWidth > 0 && im.naturalHeight > 0); })
                   .map(function (im) { return im.alt || im.src.slice(0, 40); });
  var wide = [];
  document.querySelectorAll("table").forEach(function (t) {
    var box = t.parentElement.getBoundingClientRect().width;
    var w = t.getBoundingClientRect().width;
    if (w > box + 1 || t.getBoundingClientRect().right > window.innerWidth + 1) {
      var cap = t.querySelector("caption");
      wide.push({caption: cap ? cap.textContent : t.textContent.slice(0, 60), width: w, box: box});
    }
  });
  var out = {images: imgs.length, broken: broken, tables: document.querySelectorAll("table").length,
             wide_tables: wide, page_width: document.documentElement.scrollWidth,
             window_width: window.innerWidth, height: document.documentElement.scrollHeight};
  var pre = document.createElement("pre");
  pre.id = "browser-check-result";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


@dataclass(frozen=True)
class BrowserCheck:
    """What Chromium measured on a report page.

    Attributes
    ----------
    images : int
        ``<img>`` elements on the page.
    broken_images : tuple of str
        Alt texts of the images that did not decode.
    tables : int
    wide_tables : tuple of dict
        Tables wider than their container or the window: caption, width and box (px).
    page_width, window_width, height : int
        Document scroll width, window width and document height (px).
    """

    images: int
    broken_images: tuple
    tables: int
    wide_tables: tuple
    page_width: int
    window_width: int
    height: int

    @property
    def ok(self) -> bool:
        """Every image loads, no table is too wide and the page does not scroll sideways."""
        return not self.broken_images and not self.wide_tables and self.page_width <= self.window_width

    def problems(self) -> list[str]:
        """The failures in words (empty if :attr:`ok`)."""
        out = [f"image did not load: {a}" for a in self.broken_images]
        out += [
            f"table wider than its box ({t['width']:.0f} px > {t['box']:.0f} px): {t['caption'][:80]}"
            for t in self.wide_tables
        ]
        if self.page_width > self.window_width:
            out.append(f"page scrolls sideways: {self.page_width} px wide at a {self.window_width} px window")
        return out


def find_chromium() -> str | None:
    """The Chromium binary: ``$CHROMIUM``, else ``chromium`` or ``chromium-browser`` on PATH."""
    env = os.environ.get("CHROMIUM")
    if env:
        return env
    return shutil.which("chromium") or shutil.which("chromium-browser")


def browser_check(
    html_path, *, width: int = 1280, height: int = 900, chromium: str | None = None, timeout: float = 120.0
) -> BrowserCheck:
    """Load ``html_path`` in headless Chromium at ``width`` px and measure it.

    Parameters
    ----------
    html_path : str or os.PathLike
        A report page (``index.html``).
    width, height : int, default 1280 and 900
        Window size in CSS pixels.
    chromium : str, optional
        The browser binary (default :func:`find_chromium`).
    timeout : float, default 120
        Seconds before the browser is stopped.

    Returns
    -------
    BrowserCheck

    Raises
    ------
    TypeError
        If ``html_path`` is not a str or path.
    FileNotFoundError
        If the page or the browser is missing (install Debian's ``chromium``).
    RuntimeError
        If the browser fails or prints no measurements.
    """
    if not isinstance(html_path, (str, os.PathLike)):
        raise TypeError(f"`html_path` must be a file path; got {type(html_path).__name__}")
    page = Path(html_path)
    if not page.is_file():
        raise FileNotFoundError(f"`html_path` {str(page)!r} is not a file")
    binary = chromium or find_chromium()
    if binary is None:
        raise FileNotFoundError("no Chromium found: install it (Debian: apt-get install chromium) or set $CHROMIUM")
    html = page.read_text(encoding="utf-8")
    html = html.replace("</body>", _PROBE + "</body>") if "</body>" in html else html + _PROBE
    with tempfile.TemporaryDirectory(prefix="report-check-") as tmp:
        probe = Path(tmp) / "index.html"
        probe.write_text(html, encoding="utf-8")
        cmd = [
            binary,
            *_FLAGS,
            f"--user-data-dir={Path(tmp) / 'profile'}",
            f"--window-size={width},{height}",
            "--virtual-time-budget=20000",
            "--dump-dom",
            probe.as_uri(),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    start = proc.stdout.find('<pre id="browser-check-result">')
    if start < 0:
        raise RuntimeError(f"chromium printed no measurements (exit {proc.returncode}): {proc.stderr[-2000:]}")
    body = proc.stdout[start:].split(">", 1)[1].split("</pre>", 1)[0]

    data = json.loads(_html.unescape(body))
    return BrowserCheck(
        images=int(data["images"]),
        broken_images=tuple(data["broken"]),
        tables=int(data["tables"]),
        wide_tables=tuple(data["wide_tables"]),
        page_width=int(data["page_width"]),
        window_width=int(data["window_width"]),
        height=int(data["height"]),
    )


def main(argv=None) -> int:
    """Command line: check each page given; print the measurements and any problem."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print("usage: python -m changerate_bayes.report.browser PAGE.html ...", file=sys.stderr)
        return 2
    status = 0
    for path in argv:
        try:
            res = browser_check(path)
        except FileNotFoundError as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return 2
        print(
            f"{path}: {res.images} images, {res.tables} tables, {res.page_width} px wide at "
            f"{res.window_width} px, {res.height} px tall: {'OK' if res.ok else 'PROBLEMS'}"
        )
        for p in res.problems():
            print(f"  {p}")
        status = status or (0 if res.ok else 1)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
