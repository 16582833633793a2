"""The report in a real browser: headless Chromium loads every image and nothing is
wider than the page at 1280 px.

Needs Debian's ``chromium`` (``apt-get install chromium``) or ``$CHROMIUM``, an optional
system tool: without it these tests are skipped with the reason printed (``-ra``), unless
``CHANGERATE_REQUIRE_BROWSER=1`` (set by CI, which installs Chromium) makes its absence a
failure.
"""

import os

import matplotlib.pyplot as plt
import pytest

from changerate_bayes.report import figure_to_html, html_table, render_page, verdict_html
from changerate_bayes.report.browser import browser_check, find_chromium

META = {
    "preset": "quick",
    "seed": 1,
    "generated": "today",
    "total_seconds": 1.0,
    "version": "0",
    "versions": {"python": "3"},
    "studies": ["a"],
}


NO_BROWSER_REASON = (
    "no Chromium on this machine (neither $CHROMIUM nor chromium on PATH): the report's browser "
    "check is skipped; apt-get install chromium to run it"
)


@pytest.fixture(scope="module")
def chromium():
    binary = find_chromium()
    if binary is None:
        if os.environ.get("CHANGERATE_REQUIRE_BROWSER") == "1":
            pytest.fail(
                "CHANGERATE_REQUIRE_BROWSER=1 but no Chromium found: apt-get install chromium (or set $CHROMIUM)"
            )
        pytest.skip(NO_BROWSER_REASON)
    return binary


def _page(tmp_path, body: str):
    html = render_page(
        title="check",
        sections=[
            {
                "id": "a",
                "title": "A",
                "html": body,
                "seconds": 1.0,
                "summary": {"verdict": "v", "key_number": "1", "kind": "holds"},
            }
        ],
        meta=META,
    )
    path = tmp_path / "index.html"
    path.write_text(html, encoding="utf-8")
    return path


def test_report_page_with_wide_content_passes(tmp_path, chromium):
    fig, ax = plt.subplots(figsize=(20, 4))  # wider than the page: scaled down by the style sheet
    ax.plot([0, 1], [0, 1])
    long_text = "a long reading of a test with many words in it " * 8
    rows = [{"test": f"test {i}", "pvalue": 1e-300, "reading": long_text, "x": 1.23456789} for i in range(5)]
    cols = [("test", "test"), ("pvalue", "p-value"), ("reading", "reading")] + [
        ("x", f"column {j} with a header") for j in range(12)
    ]
    body = figure_to_html(fig, alt="a line") + html_table(rows, cols, caption="wide") + verdict_html("ok", True)
    res = browser_check(_page(tmp_path, body), chromium=chromium)
    assert res.images == 1 and res.tables == 2  # the summary table and this one
    assert res.ok, res.problems()


def test_broken_image_and_overflow_are_caught(tmp_path, chromium):
    body = (
        '<figure><img src="data:image/png;base64,AAAA" alt="broken figure"></figure>'
        '<table><caption>too wide</caption><tr><td><div style="width: 3000px">x</div></td></tr></table>'
        '<div style="width: 2500px; height: 10px"></div>'
    )
    res = browser_check(_page(tmp_path, body), chromium=chromium)
    assert not res.ok
    assert res.broken_images == ("broken figure",)
    assert [t["caption"] for t in res.wide_tables] == ["too wide"]
    assert res.page_width > res.window_width == 1280
