"""README.md is the front door: its commands are the ones CI runs, its quick start and its
example run as written, and every number it quotes is real."""

import doctest
import gzip
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from changerate_bayes.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, flags=re.S)
SHELL = re.findall(r"```bash\n(.*?)```", TEXT, flags=re.S)

MAIN_JOB = "uv run --locked changerate-bayes validate --quick"
TESTS = "uv run --locked --extra test pytest -q -n auto"
DOCS_BUILD = "uv run --locked --extra docs sphinx-build -W --keep-going -b html docs docs/_build/html"


def test_readme_has_the_two_commands_and_the_docs_build():
    shell = "\n".join(SHELL).splitlines()
    assert MAIN_JOB in shell and TESTS in shell
    assert DOCS_BUILD in shell


def test_ci_runs_the_readme_test_command_and_builds_the_docs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert TESTS in ci
    assert DOCS_BUILD in ci
    assert ci.index(DOCS_BUILD) > ci.index(TESTS)


def test_readme_is_a_front_door_with_the_set_up_then_the_quick_start_before_the_validation_suite():
    assert len(TEXT.splitlines()) <= 300
    # the pitch, the two set-up commands, the crawler engineer's quick start, then the suite
    suite = TEXT.index("## The validation suite")
    assert TEXT.index(MAIN_JOB) < TEXT.index("## Quick start") < suite
    assert TEXT.index("changerate-bayes estimate") < suite
    assert TEXT.index("changerate-bayes schedule") < suite


def test_readme_links_point_to_files_of_the_repository():
    links = re.findall(r"\]\(((?!https?:)[^)#]+)\)", TEXT)
    assert len(links) >= 10
    missing = [link for link in links if not (ROOT / link).exists()]
    assert missing == []


def _quick_start():
    """The quick start's command lines, its shell variables substituted."""
    block = next(b for b in SHELL if "changerate-bayes estimate" in b)
    variables = dict(re.findall(r"^([A-Z_]+)=(\S+)", block, flags=re.M))
    commands = []
    for line in block.splitlines():
        line = line.split("  #")[0].strip()
        for name, value in variables.items():
            line = line.replace(f"${name}", value)
        if line.startswith("uv run --locked changerate-bayes "):
            commands.append(shlex.split(line)[4:])
    return commands


@pytest.mark.slow
def test_quick_start_runs_as_written_on_the_shipped_log(tmp_path, monkeypatch, capsys):
    commands = _quick_start()
    assert [c[0] for c in commands] == ["estimate", "schedule", "schedule"]
    # a log's pages are already in the CrawlDb: only -update (or -overwrite) gives them the new intervals
    assert "bin/nutch inject crawl/crawldb seeds/ -update" in next(b for b in SHELL if "changerate-bayes estimate" in b)
    monkeypatch.chdir(tmp_path)
    outputs = []
    for argv in commands:
        argv = [str(ROOT / a) if a.startswith("changerate_bayes/") else a for a in argv]
        assert main(argv) == 0
        outputs.append(capsys.readouterr().out)
    # the lines the README shows are the estimate command's output
    shown = re.search(r"it prints an\naudit of every row read, then:\n\n```\n(.*?)```", TEXT, flags=re.S).group(1)
    checker = doctest.OutputChecker()
    assert checker.check_output("...\n" + shown + "...\n", outputs[0], doctest.ELLIPSIS), outputs[0]
    table = pd.read_parquet(tmp_path / "estimates.parquet")
    assert len(table) == 69 and table["rate_per_day"].notna().all()
    schedule = pd.read_csv(tmp_path / "next.csv")
    assert len(schedule) == 69
    # the seed list is what Nutch's injector reads: URL <TAB> nutch.fetchInterval.fixed=<integer seconds>
    seeds = (tmp_path / "seeds" / "seeds.txt").read_text(encoding="utf-8").splitlines()
    assert len(seeds) == 69
    assert all(re.fullmatch(r"[^\t]+\tnutch\.fetchInterval\.fixed=[1-9]\d*", line) for line in seeds)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_example_prints_what_it_shows(index):
    assert len(BLOCKS) >= 1
    test = doctest.DocTestParser().get_doctest(BLOCKS[index], {}, f"README.md block {index}", str(README), 0)
    assert test.examples
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_readme_numbers_of_the_shipped_data_are_real():
    data = ROOT / "changerate_bayes" / "datasets" / "data" / "opentermsarchive"
    crawls = pd.read_csv(data / "crawls_dating.csv.gz")
    documents = pd.read_csv(data / "versions_pages.csv")
    with gzip.open(data / "versions_changes.csv.gz", "rt") as f:
        changes = sum(1 for _ in f) - 1
    traces = sorted((ROOT / "changerate_bayes" / "traces" / "data").glob("*.csv"))
    facts = {
        f"{len(crawls):,} visits of {crawls['page'].nunique()} pages": "quick start",
        f"{len(crawls):,} crawl visits of {crawls['page'].nunique()} URLs": "data",
        f"{len(documents):,} documents with {changes:,} detected changes": "data",
        f"{len(traces)} real change traces": "data",
    }
    missing = [fact for fact in facts if fact not in " ".join(TEXT.split())]
    assert missing == []


def test_readme_timings_are_the_measured_ones_of_the_docs():
    performance = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    rows = [
        line
        for line in TEXT.splitlines()
        if line.startswith("| `uv run --locked") or line.startswith("| the first NUTS")
    ]
    assert len(rows) == 3
    for row in rows:
        assert row in performance
    measured = re.search(r"Measured on this project's 2-core machine \((.*?)\)", TEXT, flags=re.S).group(1)
    assert " ".join(measured.split()) in " ".join(performance.split())
