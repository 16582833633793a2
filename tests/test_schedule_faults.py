"""Schedule faults: budgets a schedule cannot honour, honest interval labels, Nutch seeds that Nutch trims."""

import numpy as np
import pandas as pd
import pytest

from changerate_bayes.cli import main
from changerate_bayes.crawllog import allocate_crawls, crawl_schedule, nutch_seed_lines, page_table
from changerate_bayes.io import read_log

T0 = pd.Timestamp("2024-01-01T00:00:00Z")


def _visits(url, n, step_h, changed):
    times = [T0 + pd.Timedelta(hours=step_h * i) for i in range(n)]
    return pd.DataFrame(
        {"page": url, "fetch_time": [t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in times], "changed": [0, *changed]}
    )


@pytest.fixture()
def log_csv(tmp_path):
    path = tmp_path / "log.csv"
    pd.concat(
        [
            _visits("https://a.example/", 41, 6, [1, 0] * 20),
            _visits("https://b.example/x?q=1", 5, 24, [0, 1, 0, 0]),
            _visits("https://c.example/", 3, 12, [0, 0]),
        ],
        ignore_index=True,
    ).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("budget", ["1e7", "1e300", "259200.5"])
def test_a_budget_beyond_one_fetch_per_second_per_page_is_refused(tmp_path, log_csv, capsys, budget):
    # 3 pages, each fetched at most once a second: 3 × 86,400 = 259,200 crawls per day
    out = tmp_path / "s.csv"
    assert main(["schedule", str(log_csv), "--budget", budget, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--budget" in err and "259,200" in err and "3 pages" in err, err
    assert not out.exists()


def test_the_largest_honourable_budget_is_accepted(tmp_path, log_csv):
    out = tmp_path / "s.csv"
    assert main(["schedule", str(log_csv), "--budget", "259200", "--out", str(out)]) == 0
    assert (pd.read_csv(out)["interval_h"] >= 1 / 3600).all()


def test_an_interval_raised_to_one_second_is_not_labelled_the_revisit_bound(log_csv):
    # an allocation interval below half a second is rounded up to the shortest interval, 1 s:
    # labelled min_interval, never revisit_bound (the longest) nor allocation
    log = read_log(log_csv)
    table = allocate_crawls(page_table(log), 3.0)
    table["crawl_interval_h"] = [0.1 / 3600, 0.1 / 3600, 2.0]
    table["at_revisit_bound"] = [True, False, False]
    s = crawl_schedule(table, log.history)
    assert s["interval_source"].tolist() == ["min_interval", "min_interval", "allocation"]
    np.testing.assert_array_equal(s["interval_h"], [1 / 3600, 1 / 3600, 2.0])
    assert s.attrs["n_min_interval"] == 2 and s.attrs["n_revisit_bound"] == 0


@pytest.mark.parametrize(
    "url", [" https://a.example/", "https://a.example/ ", " https://a.example/\u00a0", "\x0bx", "x\x00"]
)
def test_a_url_nutch_would_trim_is_refused(url):
    # Nutch's injector trims the URL (String.trim: every char <= U+0020), so it would not read it back as written
    s = pd.DataFrame({"url": ["https://ok.example/", url], "interval_h": [1.0, 1.0]})
    with pytest.raises(ValueError, match=r"row 1.*trims"):
        nutch_seed_lines(s)


def test_a_url_with_inner_or_non_ascii_space_is_kept():
    # String.trim removes only characters <= U+0020 at either end
    s = pd.DataFrame({"url": ["https://a.example/a b", "https://a.example/\u00a0"], "interval_h": [1.0, 2.0]})
    assert nutch_seed_lines(s) == (
        "https://a.example/a b\tnutch.fetchInterval.fixed=3600\nhttps://a.example/\u00a0\tnutch.fetchInterval.fixed=7200\n"
    )


def test_the_command_names_the_page_with_spaces(tmp_path, capsys):
    log = tmp_path / "log.csv"
    frame = pd.concat(
        [_visits(" https://a.example/", 5, 6, [1, 0, 1, 0]), _visits("https://b.example/", 5, 6, [0] * 4)]
    )
    frame.to_csv(log, index=False)
    out = tmp_path / "seeds.txt"
    assert main(["schedule", str(log), "--out", str(out), "--format", "nutch-seeds"]) == 2
    err = capsys.readouterr().err
    assert "' https://a.example/'" in err and "nutch-seeds" in err, err
    assert not out.exists()


def test_schedule_prints_its_crawl_plan_and_what_set_the_longest_interval(tmp_path, capsys):
    # 7 pages, one that never changes, 100 crawls/day: the allocation's revisit bound 4·N/B = 4·7/100 days
    # = 6.72 h comes before --max-interval-h (2,160 h) and sets the never-changing page's interval
    log = tmp_path / "log.csv"
    pages = [_visits(f"https://a.example/{i}", 41, 6, [1, 0] * 20) for i in range(6)]
    pd.concat([*pages, _visits("https://a.example/still", 41, 6, [0] * 40)]).to_csv(log, index=False)
    out = tmp_path / "s.csv"
    assert main(["schedule", str(log), "--budget", "100", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    plan = [line for line in printed.splitlines() if line.startswith("crawl plan: ")]
    assert len(plan) == 1 and plan[0].startswith("crawl plan: index_mean "), printed
    assert "longest interval: 6.72 h, set by the allocation's revisit bound 4·N/B (N = 7 pages, B = 100" in plan[0]
    assert "below --max-interval-h 2160 h" in plan[0]
    s = pd.read_csv(out).set_index("url")
    assert s.loc["https://a.example/still", "interval_h"] == pytest.approx(6.72, abs=0.5 / 3600)
    assert s.loc["https://a.example/still", "interval_source"] == "revisit_bound"
    # with a limit below the bound, the limit sets it
    assert main(["schedule", str(log), "--budget", "100", "--out", str(out), "--max-interval-h", "5"]) == 0
    plan = [line for line in capsys.readouterr().out.splitlines() if line.startswith("crawl plan: ")]
    assert plan[0].endswith("longest interval: 5 h, set by --max-interval-h"), plan
