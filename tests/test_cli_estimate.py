"""The estimate and diagnose commands on small logs, and their refusals (nothing written)."""

import json

import numpy as np
import pandas as pd
import pytest
from _helpers import TWO_PAGE_LOG_RENAMED, write_log

from changerate_bayes.cli import main

LOG = """page,fetch_time,status,digest
a,2024-01-01T00:00:00Z,200,x
a,2024-01-01T06:00:00Z,200,y
a,2024-01-01T12:00:00Z,200,y
a,2024-01-01T18:00:00Z,200,z
b,2024-01-01T00:00:00Z,200,k
b,2024-01-02T00:00:00Z,503,k
b,2024-01-03T00:00:00Z,200,k
c,2024-01-01T00:00:00Z,200,q
"""


def test_estimate_writes_table_and_report(tmp_path, capsys):
    log = tmp_path / "log.csv"
    log.write_text(LOG)
    out = tmp_path / "est.csv"
    rc = main(
        [
            "estimate",
            str(log),
            "--methods",
            "lln",
            "mle",
            "--out",
            str(out),
            "--report",
            str(tmp_path / "r"),
            "--budget",
            "4",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "read 8 rows of 3 pages" in text and "failed_status 1" in text and "single-visit pages: 1" in text
    t = pd.read_csv(out)
    assert t["page"].tolist() == ["a", "b"] and t["n_crawls"].tolist() == [3, 1]
    assert t["n_changes"].tolist() == [2, 0]
    np.testing.assert_allclose(t["lln"], [4 * 2 / (3 + 1 - 2), 0.5 * 0 / 2])  # p Î/(k + 1 − Î) per day
    assert t["crawls_per_day"].sum() == pytest.approx(4.0)
    assert t["rate_method"].tolist() == ["posterior_mean", "posterior_mean"]  # 3 and 1 crawls: thin evidence
    html = (tmp_path / "r" / "index.html").read_text()
    assert "Audit of the log" in html and "data:image/png;base64" in html and "http" not in html.split("<body>")[1]
    assert "per input time unit" not in html and "recommended change rate" in html
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    assert res["audit"]["rows_read"] == 8 and len(res["pages"]) == 2


@pytest.mark.parametrize(
    "text, flags, message",
    [
        # logs that cannot be read: the file and line named
        ("url,fetch_time,digest\na,2024-01-01T00:00Z,x\n", [], "log.csv: line 1: missing required column 'page'"),
        (
            "page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,noon,y\n",
            [],
            "log.csv: line 3, column 'fetch_time': unparsable time",
        ),
        (
            "page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,2024-01-02T00:00,y\n",
            [],
            "log.csv: line 3, column 'fetch_time': naive and time-zone-aware",
        ),
        (
            "page,fetch_time,digest\na,2024-01-01T00:00Z,\na,2024-01-02T00:00Z,\n",
            [],
            "log.csv: line 1, column 'digest': the digest column is entirely empty",
        ),
        # a --columns flag that cannot be read: the flag named
        *(
            (TWO_PAGE_LOG_RENAMED, ["--columns", value], message)
            for value, message in [
                ("page", "--columns takes ROLE=COLUMN pairs"),
                ("page=url,url=x", "--columns: unknown role 'url'"),
                ("page=url,page=x", "--columns gives role 'page' twice"),
                ("page=url,fetch_time=url", "--columns maps column 'url' to two roles, 'page' and 'fetch_time'"),
            ]
        ),
    ],
)
def test_estimate_bad_input_writes_nothing(tmp_path, capsys, text, flags, message):
    log = write_log(tmp_path, text)
    out = tmp_path / "o" / "est.parquet"
    assert main(["estimate", str(log), "--out", str(out), "--report", str(tmp_path / "r"), *flags]) == 2
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.csv"]  # no table, report or folder left behind
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_estimate_unknown_format_and_bad_out(tmp_path, capsys):
    log = tmp_path / "log.json"
    log.write_text("{}")
    assert main(["estimate", str(log), "--out", str(tmp_path / "e.parquet")]) == 2
    assert "log.json: unknown format" in capsys.readouterr().err
    good = tmp_path / "log.csv"
    good.write_text(LOG)
    assert main(["estimate", str(good), "--out", str(tmp_path / "e.xlsx")]) == 2
    assert "--out must end in .parquet or .csv" in capsys.readouterr().err


def test_diagnose_many_pages(tmp_path, capsys):
    rng = np.random.default_rng(1)
    # page p: Poisson events at rate 1 per hour; page q: perfectly regular, every hour (not Poisson)
    p_times = np.cumsum(rng.exponential(1.0, 300))
    q_times = np.arange(1.0, 301.0)
    df = pd.DataFrame({"page": ["p"] * 300 + ["q"] * 300, "time": np.concatenate([p_times, q_times])})
    path = tmp_path / "events.csv"
    df.to_csv(path, index=False)
    rc = main(["diagnose", str(path), "--report", str(tmp_path / "d"), "--n-resamples", "99"])
    assert rc == 0
    out = capsys.readouterr().out
    q_line = next(line for line in out.splitlines() if line.startswith("q:"))
    assert "300 events" in q_line and "none" not in q_line  # a regular trace is rejected
    res = json.loads((tmp_path / "d" / "results.json").read_text())
    assert {r["page"] for r in res["pages"]} == {"p", "q"}
    assert main(["diagnose", str(path), "--time-column", "when", "--report", str(tmp_path / "e")]) == 2
    assert "missing time column 'when'" in capsys.readouterr().err


def test_estimate_states_each_note_once_and_hides_other_estimators(tmp_path, capsys):
    # two pages crawled every 6 h (a fixed schedule): the Poisson-crawling note of naive, lln, sa
    # and sam is printed once, naming the four
    times = pd.date_range("2024-01-01", periods=30, freq="6h", tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ")
    df = pd.DataFrame(
        {
            "page": np.repeat(["a", "b"], 30),
            "fetch_time": np.tile(times, 2),
            "changed": np.tile(np.arange(30) % 3 == 1, 2).astype(int),
        }
    )
    log = tmp_path / "log.csv"
    df.to_csv(log, index=False)
    out = tmp_path / "est.csv"
    assert main(["estimate", str(log), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "assume Poisson crawling" not in text and text.count("note: rate_per_day is") == 1
    assert pd.read_csv(out).columns.tolist()[6:11] == [
        "rate_per_day",
        "rate_lower_per_day",
        "rate_upper_per_day",
        "rate_bound",
        "rate_method",
    ]
    assert main(["estimate", str(log), "--out", str(out), "--all-estimators", "--report", str(tmp_path / "r")]) == 0
    text = capsys.readouterr().out
    html = (tmp_path / "r" / "index.html").read_text()
    assert html.count("assume Poisson crawling") == 1 and html.count("rate_per_day is the maximum-likelihood") == 1
    assert text.count("assume Poisson crawling") == 1
    assert "note: methods 'naive', 'lln', 'sa', 'sam' assume Poisson crawling" in text
    t = pd.read_csv(out)
    assert {"naive", "lln", "sa", "sam", "mle", "mm", "regular"} <= set(t.columns)
