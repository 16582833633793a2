"""What a new user meets on the command line: --columns, errors that name flags, crawl
logs in diagnose, the estimate report's labels, header and attribution, and Ctrl-C or
SIGTERM stopping a command with one line and status 130."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _helpers import AT_A_TERMINAL, TWO_PAGE_LOG_RENAMED

from changerate_bayes.cli import main
from changerate_bayes.cli._common import cli_message, parse_columns

CLI = str(Path(sys.executable).parent / "changerate-bayes")

LOG = TWO_PAGE_LOG_RENAMED


def test_estimate_maps_columns(tmp_path, capsys):
    log = tmp_path / "log.csv"
    log.write_text(LOG)
    out = tmp_path / "e.csv"
    assert main(["estimate", str(log), "--methods", "lln", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "missing required column 'page'" in err and "--columns" in err and "`columns=`" not in err
    rc = main(
        ["estimate", str(log), "--methods", "lln", "--out", str(out), "--columns", "page=url,fetch_time=ts,digest=sha1"]
    )
    assert rc == 0
    t = pd.read_csv(out)
    assert t["page"].tolist() == ["a", "b"] and t["n_changes"].tolist() == [2, 0]


def test_replay_names_its_flags(tmp_path, capsys):
    path = tmp_path / "ch.csv"
    path.write_text("url,when\na,2024-01-01T05:00:00Z\na,2024-01-03T05:00:00Z\nb,2024-01-02T07:00:00Z\n")
    base = ["replay", str(path), "--budget", "1", "--policies", "uniform", "--n-boot", "0"]
    assert main(base) == 2
    err = capsys.readouterr().err
    assert "CHANGES.csv lacks column(s) ['page', 'timestamp']" in err and "--columns" in err and "`" not in err
    assert main(base + ["--columns", "page=url,timestamp=when"]) == 2
    err = capsys.readouterr().err
    assert "without --window or --windows, CHANGES.csv needs columns start and end" in err
    assert "`window`" not in err and "None" not in err
    assert main(base + ["--columns", "page=url,timestamp=when", "--window", "2024-01-01", "2024-01-05"]) == 0
    assert "uniform" in capsys.readouterr().out


def test_cli_message_and_parse_columns():
    assert cli_message("`window` is None, so `changes` needs columns start and end", {"changes": "CHANGES.csv"}) == (
        "without --window or --windows, CHANGES.csv needs columns start and end"
    )
    assert cli_message("`budget` must be > 0 (map yours with `columns=`)", {"budget": "--budget"}).startswith(
        "--budget must be > 0 (map yours with --columns ROLE=COLUMN"
    )
    assert cli_message("`other` stays", {}) == "`other` stays"
    assert parse_columns(None, ("page",)) is None


def _crawl_log(tmp_path):
    rng = np.random.default_rng(4)
    rows = []
    for page, rate in (("p", 0.3), ("q", 0.1), ("r", 0.05)):
        t, digest = pd.Timestamp("2024-01-01T00:00Z"), 0
        for _ in range(150):  # hourly crawls; a change before a crawl with probability 1 - exp(-rate)
            digest += rng.random() < 1 - np.exp(-rate)
            rows.append((page, t.isoformat(), f"h{digest}"))
            t += pd.Timedelta(hours=1)
    path = tmp_path / "crawl.csv"
    pd.DataFrame(rows, columns=["page", "fetch_time", "digest"]).to_csv(path, index=False)
    return path


def test_diagnose_reads_a_crawl_log_as_visits(tmp_path, capsys):
    path = _crawl_log(tmp_path)
    rep = tmp_path / "d"
    assert main(["diagnose", str(path), "--report", str(rep), "--n-resamples", "49", "--max-pages", "2"]) == 0
    out = capsys.readouterr().out
    assert f"the report goes to {rep}/index.html" in out
    assert "a crawl log" in out and "tests for exact change times are not run on crawl detections" in out
    assert "tested the 2 pages with most changes seen of 3 (--max-pages 2); the other 1 pages are not detailed" in out
    p_line = next(line for line in out.splitlines() if line.startswith("p:"))
    assert "150 visits" in p_line and "150 events" not in p_line
    res = json.loads((rep / "results.json").read_text())
    assert res["kind"] == "crawl" and res["n_pages"] == 3 and [r["page"] for r in res["pages"]] == ["p", "q"]
    n_changes = pd.read_csv(path).groupby("page")["digest"].nunique() - 1
    assert res["pages"][0]["changes seen"] == n_changes["p"] < 150
    tests = set(res["details"]["p"]["tests"])
    assert "geometric_gaps" in tests and "laplace_trend" in tests  # the crawl-grid forms
    assert not tests & {"ks_lilliefors", "anderson_darling", "ks_bootstrap", "time_rescaling"}  # exact-time tests
    html = (rep / "index.html").read_text()
    assert "2 of 3 pages tested" in html
    assert "Section computed in" not in html  # its sections are not timed apart: no "0 s" shown


def test_estimate_report_labels_attribution_and_time(tmp_path, monkeypatch):
    import changerate_bayes.crawllog.report as report
    from changerate_bayes import estimate_pages
    from changerate_bayes.crawllog.report import OTA_ATTRIBUTION, estimate_report, log_attribution
    from changerate_bayes.io import read_csv

    pages = ["https://shop.example.com/catalogue/item?price=$5-$10&sort=asc", "https://x.example/$\\foo{$", "c"]
    rows = ["page,fetch_time,digest"]
    for p in pages:
        rows += [f"{p},2024-01-0{d}T00:00:00Z,h{d // 2}" for d in range(1, 9)]
    path = tmp_path / "log.csv"
    path.write_text("\n".join(rows) + "\n")
    log = read_csv(path)
    table = estimate_pages(log, methods=["mle"])
    captured = []
    real = report.figure_to_html
    monkeypatch.setattr(report, "figure_to_html", lambda fig, **kw: (captured.append(fig), real(fig, **kw))[1])
    html, _ = estimate_report(table, log.audit, log=log, n_resamples=19, started=time.perf_counter() - 2.5)
    forest = captured[1].axes[0]
    labels = [t for t in forest.get_yticklabels()]
    assert all(not t.get_parse_math() for t in labels)  # drawn as plain text, "$5-$10" is no mathtext
    texts = [t.get_text() for t in labels]
    assert texts[0].startswith("https://shop.exam") and "…" in texts[0] and texts[0].endswith("=$5-$10&sort=asc")
    assert max(len(t) for t in texts) <= 44
    value, unit = re.search(r"\bin (\d+(?:\.\d+)?) (ms|s);", html).groups()  # the header's run time
    assert float(value) * (1e-3 if unit == "ms" else 1.0) >= 2.5  # the time since `started`, not "0 s"
    shipped = Path(__file__).parents[1] / "changerate_bayes/datasets/data/opentermsarchive/crawls_dating.csv.gz"
    assert log_attribution([shipped], "ota") == OTA_ATTRIBUTION
    own = tmp_path / "mine.csv.gz"
    own.write_bytes(b"")
    assert log_attribution([own], "ota") == "Read in the Open Terms Archive observations format."
    assert "Dating" not in log_attribution([own], "ota") and log_attribution([path], "csv") is None


def _start(args, tmp_path):
    """The command started as a shell at a terminal starts it (SIGINT handled by Python)."""
    env = {**os.environ, "PYTHONWARNINGS": "default"}
    return subprocess.Popen(
        [sys.executable, "-c", AT_A_TERMINAL, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip


def _wait_for(path: Path, proc, timeout=120.0):
    t0 = time.monotonic()
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < timeout
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_estimate_stops_on_a_signal_with_one_line(tmp_path, sig):
    shipped = Path(__file__).parents[1] / "changerate_bayes/datasets/data/opentermsarchive/crawls_dating.csv.gz"
    out = tmp_path / "new" / "e.parquet"
    proc = _start(["estimate", str(shipped), "--out", str(out), "--report", str(tmp_path / "rep")], tmp_path)
    _wait_for(out.parent, proc)  # the command has started: it made --out's folder
    time.sleep(0.5)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == "changerate-bayes: interrupted; no partial output is left"
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # the new folders are removed


@pytest.mark.slow
def test_validate_stops_on_sigterm_and_leaves_nothing(tmp_path):
    out = tmp_path / "v" / "sub"
    proc = _start(
        [
            "validate",
            "--quick",
            "--only",
            "scheduling_sampling",
            "scheduling_closed_loop",
            "-j",
            "2",
            "--out",
            str(out),
        ],
        tmp_path,
    )
    _wait_for(out, proc)
    time.sleep(3.0)  # the two worker processes are running studies
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "leaked semaphore" not in stderr
    assert stderr.strip().splitlines()[-1] == "changerate-bayes: interrupted; no report written"
    assert not (tmp_path / "v").exists()


def test_claims_about_run_times_and_sizes_are_the_measured_ones(capsys):
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "under 5 minutes" not in help_text and "under 20 minutes" not in help_text
    assert "about 3 in a fresh clone" in help_text  # the README's 167 s in a fresh clone
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    sizes = set(re.findall(r"report (?:is about )?(\d+(?:\.\d+)?) MB", readme))
    assert len(sizes) == 1, sizes  # one size of the quick report
    pooled = (Path(__file__).parents[1] / "docs" / "tutorials" / "pooled.rst").read_text(encoding="utf-8")
    assert "pooled_posterior(h" in pooled
    assert "a few seconds" not in pooled  # the first pooled fit compiles its model: about 23 s


def test_report_folder_errors_name_the_flag(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    log = tmp_path / "log.csv"
    log.write_text(LOG)
    assert main(["validate", "--quick", "--only", "scheduling_sampling", "--out", str(blocker)]) == 2
    assert f"--out '{blocker}' is an existing file" in capsys.readouterr().err
    assert (
        main(
            [
                "estimate",
                str(log),
                "--columns",
                "page=url,fetch_time=ts,digest=sha1",
                "--out",
                str(tmp_path / "e.csv"),
                "--report",
                str(blocker),
            ]
        )
        == 2
    )
    assert f"--report '{blocker}' is an existing file" in capsys.readouterr().err
    assert main(["diagnose", str(log), "--report", str(blocker)]) == 2
    err = capsys.readouterr().err
    assert f"--report '{blocker}' is an existing file" in err and "`out_dir`" not in err


def test_diagnose_maps_the_time_column(tmp_path, capsys):
    path = tmp_path / "ev.csv"
    times = np.cumsum(np.random.default_rng(2).exponential(1.0, 40))
    pd.DataFrame({"url": ["a"] * 40, "when": times}).to_csv(path, index=False)
    assert main(["diagnose", str(path), "--report", str(tmp_path / "d"), "--n-resamples", "19"]) == 2
    assert "--columns time=COLUMN" in capsys.readouterr().err
    assert (
        main(
            [
                "diagnose",
                str(path),
                "--report",
                str(tmp_path / "d"),
                "--n-resamples",
                "19",
                "--columns",
                "page=url,time=when",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "a: 40 events" in out and "tested all 1 page(s)" in out


def test_the_parser_lists_the_readers_columns():
    from changerate_bayes.cli._common import LOG_ROLES
    from changerate_bayes.io import STANDARD_COLUMNS

    assert LOG_ROLES == STANDARD_COLUMNS


def test_diagnose_crawl_log_with_a_timestamp_and_changed_column(tmp_path, capsys):
    rows = ["page,timestamp,changed"] + [
        f"a,2024-01-{1 + i // 24:02d}T{i % 24:02d}:00:00Z,{int(i % 3 == 0)}" for i in range(40)
    ]
    path = tmp_path / "log.csv"
    path.write_text("\n".join(rows) + "\n")
    assert main(["diagnose", str(path), "--report", str(tmp_path / "d"), "--n-resamples", "19"]) == 0
    out = capsys.readouterr().out
    assert "a: 40 visits, 13 changes seen" in out  # 14 rows say changed; the first visit is the reference copy


def test_table_and_report_in_one_folder_do_not_wait_for_each_other(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text(LOG)
    out = tmp_path / "same"
    proc = subprocess.run(
        [
            CLI,
            "estimate",
            str(log),
            "--columns",
            "page=url,fetch_time=ts,digest=sha1",
            "--methods",
            "mle",
            "--out",
            str(out / "e.csv"),
            "--report",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )  # a lock waiting for itself never returns
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["e.csv", "index.html", "results.json"]


def test_folder_lock_is_reentrant_in_a_thread_and_exclusive_across_threads(tmp_path):
    import threading

    from changerate_bayes.report._html import folder_lock

    (tmp_path / "sub").mkdir()
    order = []

    def other_thread():
        with folder_lock(tmp_path):
            order.append("other")

    with folder_lock(tmp_path):
        with folder_lock(tmp_path / "sub" / ".."):  # the same folder under another path: goes on
            other = threading.Thread(target=other_thread)
            other.start()
            other.join(0.5)
            assert other.is_alive() and order == []  # another thread waits
            order.append("first")
    other.join(10)
    assert order == ["first", "other"]
    assert [p.name for p in tmp_path.iterdir()] == ["sub"]  # no lock file
