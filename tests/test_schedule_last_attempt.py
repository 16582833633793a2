"""A page's later failed fetch (404, 301) in the log: the next fetch is never before the page's last attempt."""

import pandas as pd
from _helpers import local_dask_client

from changerate_bayes.cli import main
from changerate_bayes.crawllog import schedule

T0 = pd.Timestamp("2024-01-01T00:00:00Z")


def _log(tmp_path, name="log.csv"):
    # a: 11 good visits every 6 h (0..60 h), then a 404 at 100 h and a 301 at 110 h
    # b: 11 good visits every 6 h, nothing after
    rows = []
    for page in ("https://a.example/", "https://b.example/"):
        for i in range(11):
            rows.append((page, T0 + pd.Timedelta(hours=6 * i), 200, f"d{i // 2}"))
    rows += [
        ("https://a.example/", T0 + pd.Timedelta(hours=100), 404, ""),
        ("https://a.example/", T0 + pd.Timedelta(hours=110), 301, ""),
    ]
    frame = pd.DataFrame(rows, columns=["page", "fetch_time", "status", "digest"])
    frame["fetch_time"] = frame["fetch_time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def _check(s):
    s = s.set_index("url")
    a, b = s.loc["https://a.example/"], s.loc["https://b.example/"]
    assert a["last_fetch"] == T0 + pd.Timedelta(hours=60) and a["last_attempt"] == T0 + pd.Timedelta(hours=110)
    assert a["next_fetch"] == a["last_attempt"] + pd.Timedelta(hours=a["interval_h"])
    assert b["last_attempt"] == b["last_fetch"] == T0 + pd.Timedelta(hours=60)
    assert b["next_fetch"] == b["last_fetch"] + pd.Timedelta(hours=b["interval_h"])
    assert (s["next_fetch"] > s["last_attempt"]).all() and (s["last_attempt"] >= s["last_fetch"]).all()


def test_next_fetch_is_after_the_last_attempt(tmp_path):
    _check(schedule(_log(tmp_path), budget=2.0, engine="pandas").schedule)


def test_the_dask_engine_schedules_from_the_last_attempt_too(tmp_path):
    (tmp_path / "more").mkdir()
    logs = [_log(tmp_path, "one.csv"), _log(tmp_path / "more", "two.csv")]
    with local_dask_client(processes=False) as client:
        for paths in (logs[:1], logs):  # one file in blocks, several files one task each
            got = schedule(paths, budget=2.0, engine="dask", client=client).schedule
            _check(got.drop_duplicates("url"))


def test_the_command_writes_last_attempt(tmp_path):
    out = tmp_path / "s.csv"
    assert main(["schedule", str(_log(tmp_path)), "--budget", "2", "--out", str(out)]) == 0
    s = pd.read_csv(out).set_index("url")
    assert s.loc["https://a.example/", "last_attempt"] == "2024-01-05T14:00:00Z"
    assert pd.Timestamp(s.loc["https://a.example/", "next_fetch"]) > pd.Timestamp("2024-01-05T14:00:00Z")
