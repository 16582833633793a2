"""Per-host caps on the command line: ``--host-limit``, ``--host-limits`` and ``--host-delay`` of
``schedule`` and ``estimate``; each host's next fetches spaced by its delay; bad input named."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changerate_bayes.cli import main
from changerate_bayes.crawllog import SCHEDULE_COLUMNS, schedule, write_schedule
from changerate_bayes.crawllog.fetch_schedule import space_host_fetches

T0 = pd.Timestamp("2024-01-01T00:00:00Z")
#: 6 pages on a.example, 2 on b.example (one with a port and upper case), 1 on c.example
PAGES = [f"https://a.example/p{i}" for i in range(6)] + [
    "https://b.example/x",
    "http://B.Example:8080/y",
    "https://c.example/",
]
HOSTS = ["a.example"] * 6 + ["b.example"] * 2 + ["c.example"]


def _log(pages=PAGES):
    """9 visits every 6 h per page, page j 2 minutes after page j - 1 (so their next fetches fall
    minutes apart), page j changing at every (j % 3 + 1)-th crawl."""
    rows = []
    for j, url in enumerate(pages):
        for k in range(9):
            t = T0 + pd.Timedelta(hours=6 * k, minutes=2 * j)
            rows.append(
                {
                    "page": url,
                    "fetch_time": t.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "changed": int(k > 0 and k % (j % 3 + 1) == 0),
                }
            )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def log_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("log") / "log.csv"
    _log().to_csv(path, index=False)
    return path


def _run(log_csv, out, *flags, budget="40"):
    assert main(["schedule", str(log_csv), "--budget", budget, "--out", str(out), *flags]) == 0
    return pd.read_csv(out, parse_dates=["last_attempt", "next_fetch"])


def _spaced_by_definition(due: pd.Series, hosts, delay_s) -> pd.Series:
    """Each host's due times in order, each moved to max(its due time, the previous one + delay)."""
    out = due.copy()
    for host in sorted(set(hosts)):
        previous = None
        rows = [i for i in np.argsort(due.to_numpy(), kind="stable") if hosts[i] == host]
        for i in rows:
            t = due.iloc[i]
            if previous is not None and t < previous + pd.Timedelta(seconds=delay_s[host]):
                t = previous + pd.Timedelta(seconds=delay_s[host])
            out.iloc[i] = previous = t
    return out


def _min_gap_s(table) -> pd.Series:
    """The shortest time between two next fetches of each host, seconds (inf for a single page)."""
    gaps = table.sort_values("next_fetch").groupby("host")["next_fetch"].diff().dt.total_seconds()
    return gaps.groupby(table["host"]).min().fillna(np.inf)


def test_host_delay_spaces_each_hosts_next_fetches(tmp_path, log_csv, capsys):
    plain = _run(log_csv, tmp_path / "plain.csv")
    capsys.readouterr()
    spaced = _run(log_csv, tmp_path / "spaced.csv", "--host-delay", "600")
    printed = capsys.readouterr().out
    assert list(spaced.columns) == [*SCHEDULE_COLUMNS, "host", "host_at_cap", "host_delay_s"]
    assert spaced["host"].tolist() == HOSTS
    # the allocation is the same; only the next fetch times move, never earlier
    assert spaced["interval_h"].tolist() == plain["interval_h"].tolist()
    due = spaced["last_attempt"] + pd.to_timedelta(spaced["interval_h"] * 3600, unit="s")
    assert (due == plain["next_fetch"]).all()
    expected = _spaced_by_definition(due, HOSTS, dict.fromkeys(HOSTS, 600.0))
    assert (spaced["next_fetch"] == expected).all()
    assert (_min_gap_s(spaced) >= 600).all()
    moved = (spaced["next_fetch"] - due).dt.total_seconds()
    assert np.allclose(spaced["host_delay_s"], moved)
    # 2-minute steps at a 10-minute delay: a.example's 2nd..6th fetches move 8, 16, ..., 40 minutes
    assert moved[:6].tolist() == [0.0, 480.0, 960.0, 1440.0, 1920.0, 2400.0]
    n_moved = int((moved > 0).sum())
    assert f"host delays: {n_moved} next fetch(es) moved later" in printed
    assert "(the largest move: 2400 s;" in printed


@pytest.mark.parametrize(
    "flags", [["--host-limit", "18"], ["--host-delay", "4800"], ["--host-limit", "50", "--host-delay", "4800"]]
)
def test_no_host_exceeds_its_cap_and_its_fetches_keep_the_delay(tmp_path, log_csv, capsys, flags):
    # 18 crawls per day per host (86,400 / 4,800 s): round robin would give a.example's 6 pages
    # 6 × 40 / 9 = 26.7; held at 18 (every 8 h), the other 22 go to the 3 other pages, 22 / 3 each
    table = _run(log_csv, tmp_path / "s.csv", *flags)
    per_host = (24.0 / table["interval_h"]).groupby(table["host"]).sum()
    assert table["interval_h"].tolist()[:6] == [8.0] * 6
    # intervals are whole seconds: 24 / (22 / 3) h = 11,781.8 s is written 11,782 s (relative 2e-5)
    expected = {"a.example": 18.0, "b.example": 44 / 3, "c.example": 22 / 3}
    assert per_host.to_dict() == pytest.approx(expected, rel=0.5 / 11781.8)
    assert (per_host <= 18.0).all()
    assert table.groupby("host")["host_at_cap"].first().to_dict() == {
        "a.example": True,
        "b.example": False,
        "c.example": False,
    }
    assert (_min_gap_s(table) >= 4800).all()
    assert "1 of 3 host(s) at their cap (column host_at_cap)" in capsys.readouterr().out


def test_estimate_writes_the_hosts_at_their_cap(tmp_path, log_csv, capsys):
    out = tmp_path / "e.csv"
    assert main(["estimate", str(log_csv), "--budget", "40", "--host-limit", "18", "--out", str(out)]) == 0
    table = pd.read_csv(out)
    assert table["host"].tolist() == HOSTS
    assert table["host_at_cap"].tolist() == [True] * 6 + [False] * 3
    per_host = table.groupby("host")["crawls_per_day"].sum()
    assert per_host.to_dict() == pytest.approx({"a.example": 18.0, "b.example": 44 / 3, "c.example": 22 / 3})
    assert "1 of 3 host(s) at their cap (column host_at_cap)" in capsys.readouterr().out


def test_host_limit_spaces_at_a_day_over_the_cap(tmp_path, log_csv):
    spaced = _run(log_csv, tmp_path / "s.csv", "--host-limit", "144")  # 86,400 / 144 = 600 s
    assert (_min_gap_s(spaced) >= 600).all()
    assert spaced["host_delay_s"].max() == 2400.0


def test_host_limits_file_overrides_host_limit_for_its_hosts(tmp_path, log_csv, capsys):
    limits = tmp_path / "limits.csv"
    limits.write_text("host,crawls_per_day\nA.example ,18\nb.example,100\nnot-in-the-log.example,5\n")
    table = _run(log_csv, tmp_path / "s.csv", "--host-limit", "12", "--host-limits", str(limits))
    # a.example held at the file's 18 crawls per day (every 8 h), not --host-limit's 12 (every 12 h)
    assert table["interval_h"].tolist()[:6] == [8.0] * 6
    assert table.groupby("host")["host_at_cap"].first().to_dict() == {
        "a.example": True,
        "b.example": False,
        "c.example": False,
    }
    # delays 86,400 / cap: a.example 4,800 s, b.example 864 s, c.example (--host-limit) 7,200 s
    due = table["last_attempt"] + pd.to_timedelta(table["interval_h"] * 3600, unit="s")
    delays = {"a.example": 4800.0, "b.example": 864.0, "c.example": 7200.0}
    assert (table["next_fetch"] == _spaced_by_definition(due, HOSTS, delays)).all()
    assert table["host_delay_s"].max() == 5 * 4800 - 10 * 60  # a.example's 6th page, due 10 min after its 1st
    out = capsys.readouterr().out
    assert "note: 1 host(s) of --host-limits are not in the log (their caps are unused): not-in-the-log.example" in out
    assert "1 of 3 host(s) at their cap" in out


def test_without_host_flags_the_schedule_is_what_it_was(tmp_path, log_csv):
    for fmt, name in (("csv", "s.csv"), ("nutch-seeds", "seeds.txt")):
        out = tmp_path / name
        assert main(["schedule", str(log_csv), "--budget", "40", "--out", str(out), "--format", fmt]) == 0
        reference = write_schedule(schedule(str(log_csv), budget=40.0).schedule, tmp_path / f"ref-{name}", format=fmt)
        assert out.read_bytes() == reference.read_bytes()
    assert pd.read_csv(tmp_path / "s.csv").columns.tolist() == list(SCHEDULE_COLUMNS)


def test_nutch_seeds_carry_the_spaced_schedules_intervals(tmp_path, log_csv):
    table = _run(log_csv, tmp_path / "s.csv", "--host-delay", "600")
    seeds = tmp_path / "seeds.txt"
    assert (
        main(
            [
                "schedule",
                str(log_csv),
                "--budget",
                "40",
                "--out",
                str(seeds),
                "--format",
                "nutch-seeds",
                "--host-delay",
                "600",
            ]
        )
        == 0
    )
    lines = [line.split("\t") for line in seeds.read_text().splitlines()]
    assert [u for u, _ in lines] == table["url"].tolist()
    assert [int(m.split("=")[1]) for _, m in lines] == (table["interval_h"] * 3600).round().astype(int).tolist()


def _limits(tmp_path, text):
    path = tmp_path / "limits.csv"
    path.write_text(text)
    return str(path)


def _assert_rejected(tmp_path, log_csv, capsys, command, flags, message):
    """The command exits 2, names the flag and the fault on stderr, and writes no output file."""
    out = tmp_path / "out.csv"
    assert main([command, str(log_csv), "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert f"changerate-bayes: error: {flags[0]}" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--host-limit", "0"], "--host-limit (crawls per day per host) must be a finite number > 0; got 0.0"),
        (["--host-limit", "-3"], "--host-limit (crawls per day per host) must be a finite number > 0; got -3.0"),
        (["--host-limit", "nan"], "--host-limit (crawls per day per host) must be a finite number > 0; got nan"),
        (["--host-limit", "inf"], "--host-limit (crawls per day per host) must be a finite number > 0; got inf"),
        (["--host-delay", "0"], "--host-delay (seconds) must be a finite number > 0; got 0.0"),
        (["--host-delay", "-5"], "--host-delay (seconds) must be a finite number > 0; got -5.0"),
    ],
)
@pytest.mark.parametrize("command", ["schedule", "estimate"])
def test_bad_host_flags_are_named_and_nothing_is_written(tmp_path, log_csv, capsys, command, flags, message):
    _assert_rejected(tmp_path, log_csv, capsys, command, flags, message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("host,cap\na.example,3\n", "lacks the column(s) crawls_per_day: it needs a header line host,crawls_per_day"),
        ("site,crawls_per_day\na.example,3\n", "lacks the column(s) host:"),
        ("host,crawls_per_day\na.example,3\n\nb.example,lots\n", "line 4: crawls_per_day 'lots' is not a number"),
        ("host,crawls_per_day\na.example,\n", "line 2: crawls_per_day '' is not a number"),
        ("host,crawls_per_day\na.example,3\nb.example,0\n", "line 3: crawls_per_day 0 must be finite and > 0"),
        ("host,crawls_per_day\na.example,NaN\n", "line 2: crawls_per_day 'NaN' is not a number"),
        ("host,crawls_per_day\na.example,3\n,4\n", "line 3: has no host"),
        (
            "host,crawls_per_day\na.example,3\nb.example,4\nA.Example,5\n",
            "host 'a.example' is listed twice (lines 2 and 4); give it one cap",
        ),
        ("", "is empty; it needs a header line host,crawls_per_day"),
    ],
)
@pytest.mark.parametrize("command", ["schedule", "estimate"])
def test_bad_host_limits_file_is_named_and_nothing_is_written(tmp_path, log_csv, capsys, command, text, message):
    _assert_rejected(tmp_path, log_csv, capsys, command, ["--host-limits", _limits(tmp_path, text)], message)


@pytest.mark.parametrize("flag", ["--host-limit", "--host-delay"])
def test_a_cap_that_is_not_a_number_is_named(tmp_path, log_csv, capsys, flag):
    with pytest.raises(SystemExit) as stop:
        main(["schedule", str(log_csv), "--out", str(tmp_path / "s.csv"), flag, "ten"])
    assert stop.value.code == 2
    assert f"argument {flag}: invalid float value: 'ten'" in capsys.readouterr().err


def test_a_missing_host_limits_file_is_named(tmp_path, log_csv, capsys):
    missing = tmp_path / "nowhere.csv"
    assert main(["schedule", str(log_csv), "--out", str(tmp_path / "s.csv"), "--host-limits", str(missing)]) == 2
    assert f"--host-limits {str(missing)!r}: no such file" in capsys.readouterr().err


def test_a_page_without_a_host_is_named(tmp_path, capsys):
    log = tmp_path / "log.csv"
    _log([*PAGES[:2], "page-without-host"]).to_csv(log, index=False)
    out = tmp_path / "s.csv"
    assert main(["schedule", str(log), "--budget", "5", "--out", str(out), "--host-limit", "10"]) == 2
    err = capsys.readouterr().err
    assert "the log's page 'page-without-host' has no host name" in err
    assert not out.exists()


def test_spacing_moves_nothing_that_is_already_a_delay_apart():
    times = pd.to_datetime(["2024-01-01 00:00", "2024-01-01 00:10", "2024-01-01 00:05", "2024-01-01 00:00"], utc=True)
    s = pd.DataFrame({"url": ["a/1", "a/2", "b/1", "b/2"], "next_fetch": times})
    out = space_host_fetches(s, ["a", "a", "b", "b"], {"a": 600.0, "b": 0.5})
    assert (out["next_fetch"] == times).all()
    assert out.attrs["n_host_delayed"] == 0 and out.attrs["max_host_delay_s"] == 0.0
    # a host without a delay in the mapping is not spaced; ties keep their order
    same = pd.DataFrame({"url": ["a/1", "a/2", "c/1", "c/2"], "next_fetch": [times[0]] * 4})
    out = space_host_fetches(same, ["a", "a", "c", "c"], {"a": 1.5})
    assert out["host_delay_s"].tolist() == [0.0, 1.5, 0.0, 0.0]


@pytest.mark.parametrize(
    ("hosts", "delay", "error", "message"),
    [
        (["a", "a"], 0.0, ValueError, "`delay_s` must be finite, > 0 and at most a century of seconds; got 0"),
        (
            ["a", "a"],
            {"a": float("nan")},
            ValueError,
            "`delay_s` of host 'a' must be finite, > 0 and at most a century",
        ),
        (["a", "a"], "5", TypeError, "`delay_s` must be a number of seconds (or one per host); got str"),
        (
            ["a", "a"],
            {"a": 3, "b": True},
            TypeError,
            "`delay_s` must be a number of seconds (or one per host); got bool",
        ),
        (["a"], 5.0, ValueError, "`hosts` has 1 entries but `schedule` has 2 rows"),
        (["a", None], 5.0, ValueError, "`hosts` row 1 (url 'u2') has no host"),
    ],
)
def test_space_host_fetches_names_bad_input(hosts, delay, error, message):
    s = pd.DataFrame({"url": ["u1", "u2"], "next_fetch": pd.to_datetime(["2024-01-01"] * 2, utc=True)})
    with pytest.raises(error) as info:
        space_host_fetches(s, hosts, delay)
    assert message in str(info.value)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from("abcd"), st.integers(0, 3_600_000)),  # host, due time in ms
        min_size=1,
        max_size=25,
    ),
    delays_ms=st.dictionaries(st.sampled_from("abc"), st.integers(1, 900_000)),
)
def test_spacing_is_the_definition_on_any_schedule(rows, delays_ms):
    hosts = [h for h, _ in rows]
    due = pd.Series([T0 + pd.Timedelta(milliseconds=ms) for _, ms in rows])
    s = pd.DataFrame({"url": [f"u{i}" for i in range(len(rows))], "next_fetch": due})
    out = space_host_fetches(s, hosts, {h: ms / 1000 for h, ms in delays_ms.items()})
    reference = _spaced_by_definition(due, hosts, {h: delays_ms.get(h, 0) / 1000 for h in hosts})
    assert (out["next_fetch"] == reference).all()
    assert (out["next_fetch"] >= due).all()
    assert out.attrs["n_host_delayed"] == int((out["next_fetch"] > due).sum())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("host,crawls_per_day\na.example,5,9\n", "line 2: 3 fields, but the header (line 1) has 2 (a field too many)"),
        ("host,crawls_per_day\na.example,5\nb.example\n", "line 3: 1 fields, but the header (line 1) has 2"),
        ("host,crawls_per_day\n", "lists no host"),
        ("host,crawls_per_day\n\n\n", "lists no host"),
    ],
)
@pytest.mark.parametrize("command", ["schedule", "estimate"])
def test_host_limits_lines_of_the_wrong_width_or_none_are_named(tmp_path, log_csv, capsys, command, text, message):
    path = _limits(tmp_path, text)
    _assert_rejected(tmp_path, log_csv, capsys, command, ["--host-limits", path], message)


def test_host_limits_errors_name_the_file(tmp_path, log_csv, capsys):
    path = _limits(tmp_path, "host,crawls_per_day\na.example,5,9\n")
    assert main(["schedule", str(log_csv), "--out", str(tmp_path / "s.csv"), "--host-limits", path]) == 2
    assert f"--host-limits {path!r}: line 2: 3 fields" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--host-limit", "1e-9"], "--host-limit (crawls per day per host) must be at least one crawl per century"),
        (["--host-delay", "4e9"], "--host-delay (seconds) must be at most a century (3.16224e+09 s); got 4e+09"),
    ],
)
def test_caps_below_one_crawl_per_century_are_named_by_flag(tmp_path, log_csv, capsys, flags, message):
    _assert_rejected(tmp_path, log_csv, capsys, "schedule", flags, message)


@pytest.mark.parametrize("flags", [["--host-delay", "3e9"], ["--host-limit", "3e-5"]])
def test_caps_spacing_fetches_past_2262_are_named_by_flag(tmp_path, log_csv, capsys, flags):
    # a.example's 6 pages, each every 6 / 3e-5 days (or 6 × 3e9 s): 550 years or more
    out = tmp_path / "s.csv"
    assert main(["schedule", str(log_csv), "--budget", "40", "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err
    assert "changerate-bayes: error: --host-limit, --host-limits or --host-delay: " in err
    assert "2262-04-11" in err and "give its host a larger cap" in err
    assert "delay_s" not in err and "max-interval-h" not in err and "host_budgets" not in err
    assert not out.exists()


def test_a_cap_below_the_revisit_limit_wins(tmp_path, log_csv, capsys):
    # a.example's 6 pages share 1e-3 crawls per day: each every 6 / 1e-3 days = 144,000 h, far beyond
    # --max-interval-h 2160; the schedule keeps that interval and spends 40 crawls per day
    table = _run(
        log_csv, tmp_path / "s.csv", "--host-limits", _limits(tmp_path, "host,crawls_per_day\na.example,0.001\n")
    )
    a = table["host"] == "a.example"
    assert table.loc[a, "interval_h"].tolist() == [144_000.0] * 6
    assert table.loc[a, "interval_source"].tolist() == ["host_cap"] * 6
    assert (24 / table.loc[a, "interval_h"]).sum() == pytest.approx(1e-3, rel=1e-9)
    # each page's next fetch is its last attempt plus its interval, then spaced by the cap's delay
    due = table["last_attempt"] + pd.to_timedelta(table["interval_h"] * 3600, unit="s")
    assert (table.loc[a, "next_fetch"] >= due[a]).all()
    out = capsys.readouterr().out
    assert "the host caps hold 6 page(s) beyond --max-interval-h 2160" in out
    spends = float(out.split("the schedule spends ")[1].split()[0])
    # the other 3 pages share 40 - 1e-3 per day, every 1.8 h to within the rounding to whole seconds
    assert spends == pytest.approx(40.0, abs=40.0 * 0.5 / 6480)
    assert (24 / table["interval_h"]).sum() == pytest.approx(spends, abs=1e-3)


def test_pages_held_at_their_cap_are_not_at_the_revisit_bound(tmp_path, capsys):
    log = tmp_path / "one.csv"
    _log([f"https://one.example/p{i}" for i in range(50)]).to_csv(log, index=False)
    out = tmp_path / "e.csv"
    assert main(["estimate", str(log), "--budget", "100", "--host-limit", "10", "--out", str(out)]) == 0
    table = pd.read_csv(out)
    assert table["crawl_interval_h"].to_numpy() == pytest.approx(120.0, rel=1e-12)  # 50 pages / 10 per day
    assert not table["at_revisit_bound"].any()
    printed = capsys.readouterr().out
    assert "get the revisit bound" not in printed
    assert "the host caps hold 50 page(s) beyond the revisit bound 48 h, at intervals up to 120 h" in printed
    s = tmp_path / "s.csv"
    assert main(["schedule", str(log), "--budget", "100", "--host-limit", "10", "--out", str(s)]) == 0
    assert (pd.read_csv(s)["interval_source"] == "host_cap").all()


def test_space_host_fetches_of_an_empty_schedule_is_the_schedule():
    s = schedule(_log(PAGES[:2]), budget=4.0).schedule.iloc[:0]
    out = space_host_fetches(s, [], 5.0)
    assert out.empty and list(out.columns) == [*s.columns, "host", "host_delay_s"]
    assert out.attrs["n_host_delayed"] == 0 and out.attrs["max_host_delay_s"] == 0.0


@pytest.mark.parametrize("command", ["schedule", "estimate"])
def test_help_says_the_file_caps_its_hosts_and_the_flags_the_others(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = "".join(capsys.readouterr().out.split())  # argparse wraps lines, at hyphens too
    assert "thecapofeachhostitlists(--host-limitand--host-delaycapeveryotherhost)" in text
    assert "insteadof--host-limit" not in text
