"""The documentation: its command lines run as shown, its API reference is complete, and
the built site needs no network.

The pages' Python examples run as doctests (``--doctest-glob=*.rst``, docs/conftest.py);
this module runs the shell sessions of the pages (``.. code-block:: console``: ``$``
lines and the output that follows) through the command-line interface, in a temporary
folder, on the shipped data, and compares the output with ELLIPSIS.
"""

import doctest
import importlib
import inspect
import re
import shlex
import sys
from pathlib import Path

import pytest

from changerate_bayes.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))
import check_offline  # noqa: E402  (docs/check_offline.py, run by CI on the built site)

sys.path.remove(str(DOCS))

#: a console session in a page: the ``code-block:: console`` directive and its indented body
_CONSOLE = re.compile(r"^\.\. code-block:: console\n\n((?:(?:    .*)?\n)+)", flags=re.M)
#: how a page spells the command
_PREFIXES = ("uv run --locked changerate-bayes ", "changerate-bayes ")


def _sessions():
    """(page, command line, expected output) of every console session of the pages."""
    found = []
    for page in sorted(DOCS.rglob("*.rst")):
        if "_build" in page.parts or "generated" in page.parts:
            continue
        for block in _CONSOLE.findall(page.read_text(encoding="utf-8")):
            lines = [line[4:] for line in block.rstrip("\n").split("\n")]
            command, output = None, []
            for line in lines + ["$ "]:
                if line.startswith("$ "):
                    if command is not None:
                        found.append((page.relative_to(ROOT).as_posix(), command, "\n".join(output).strip() + "\n"))
                    command, output = line[2:].strip(), []
                elif command is not None:
                    output.append(line)
    return [s for s in found if s[1]]


SESSIONS = _sessions()


def _argv(command):
    """The arguments of ``main`` for a page's command line; shipped files by their path."""
    for prefix in _PREFIXES:
        if command.startswith(prefix):
            args = shlex.split(command[len(prefix) :])
            return [str(ROOT / a) if a.startswith("changerate_bayes/") else a for a in args]
    raise AssertionError(f"not a changerate-bayes command: {command!r}")


def test_the_pages_have_console_sessions():
    commands = [c for _, c, _ in SESSIONS]
    assert any(" estimate " in f" {c} " for c in commands)
    assert any(" schedule " in f" {c} " and "nutch-seeds" in c for c in commands)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("page", "command", "expected"),
    SESSIONS,
    ids=[f"{Path(p).stem}-{i}-{c.split('changerate-bayes ')[1].split()[0]}" for i, (p, c, _) in enumerate(SESSIONS)],
)
def test_console_session_prints_what_the_page_shows(page, command, expected, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(_argv(command)) == 0
    captured = capsys.readouterr()
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    assert checker.check_output(expected, captured.out, flags), (
        f"{page}: `{command}` printed\n{captured.out}\ninstead of\n{expected}"
    )
    for arg, following in zip(command.split(), command.split()[1:]):
        if arg == "--out":
            assert (tmp_path / following).stat().st_size > 0


def _documented_names():
    """Every name an autosummary table of the API reference lists, with its module."""
    names = set()
    for page in (DOCS / "api").glob("*.rst"):
        module = None
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith(".. currentmodule:: "):
                module = line.split()[-1]
            elif re.match(r"^   [A-Za-z_][\w.]*$", line) and module is not None:
                names.add(f"{module}.{line.strip()}")
    return names


PUBLIC_PACKAGES = [
    "estimators", "bayes", "dynamic", "bursts", "diagnostics", "scheduling", "replay", "io",
    "history", "simulate", "traces", "datasets", "report", "crawllog", "signals",
]  # fmt: skip


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_api_reference_lists_every_public_class_and_function(package):
    module = importlib.import_module(f"changerate_bayes.{package}")
    public = {n for n in module.__all__ if inspect.isclass(getattr(module, n)) or callable(getattr(module, n))}
    listed = {n.rsplit(".", 1)[1] for n in _documented_names() if n.rsplit(".", 1)[0] == module.__name__}
    assert public - listed == set()


def test_the_crawl_log_functions_keep_their_top_level_names():
    import changerate_bayes
    from changerate_bayes import crawllog

    listed = _documented_names()
    for name in (
        "estimate_pages",
        "estimate_log",
        "LogEstimates",
        "allocate_crawls",
        "schedule_pages",
        "write_schedule",
    ):
        assert f"changerate_bayes.crawllog.{name}" in listed
        assert name in changerate_bayes.__all__
        assert getattr(changerate_bayes, name) is getattr(crawllog, name)


def test_offline_check_finds_network_scripts_and_stylesheets(tmp_path):
    page = """<html><head>
    <script src="_static/doctools.js"></script>
    <script async src="https://cdn.example.org/mathjax/tex-chtml.js"></script>
    <link rel="stylesheet" href="//fonts.example.com/css?family=x">
    <link rel="canonical" href="https://example.org/page.html">
    <style>@import url("https://fonts.example.com/y.css");</style>
    </head><body><a href="https://docs.astral.sh/uv/">uv</a><img src=http://example.org/a.png></body></html>"""
    assert check_offline.remote_loads(page) == [
        "https://cdn.example.org/mathjax/tex-chtml.js",
        "//fonts.example.com/css?family=x",
        "http://example.org/a.png",
        "https://fonts.example.com/y.css",
    ]
    (tmp_path / "index.html").write_text(page)
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "theme.css").write_text("body { background: url('https://example.org/bg.png') }")
    (tmp_path / "_static" / "ok.css").write_text("body { background: url('bg.png') }")
    assert check_offline.check_site(tmp_path) == {
        "_static/theme.css": ["https://example.org/bg.png"],
        "index.html": [
            "https://cdn.example.org/mathjax/tex-chtml.js",
            "//fonts.example.com/css?family=x",
            "http://example.org/a.png",
            "https://fonts.example.com/y.css",
        ],
    }
    assert check_offline.main([str(tmp_path)]) == 1
    (tmp_path / "index.html").write_text('<script src="_static/doctools.js"></script><a href="https://x.org">x</a>')
    (tmp_path / "_static" / "theme.css").unlink()
    assert check_offline.main([str(tmp_path)]) == 0


def test_ci_builds_the_docs_with_warnings_as_errors_and_checks_them_offline():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "uv run --locked --extra docs sphinx-build -W --keep-going -b html docs docs/_build/html" in ci
    assert any("docs/check_offline.py docs/_build/html" in line for line in ci)


def test_every_nutch_inject_in_the_docs_updates_existing_records():
    # a log's pages are already in the CrawlDb: a plain inject keeps their records and ignores the new intervals
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.rst")), *sorted(DOCS.rglob("*.md"))]
    injects = [
        (page.name, line.strip())
        for page in pages
        if "_build" not in page.parts
        for line in page.read_text(encoding="utf-8").splitlines()
        if "bin/nutch inject" in line
    ]
    assert injects
    assert all(re.search(r"bin/nutch inject \S+ \S+ -update\b", line) for _, line in injects), injects
