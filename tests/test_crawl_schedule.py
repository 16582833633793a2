"""The crawl schedule against hand derivations, its Nutch seed list byte for byte, both engines, bad input."""

import os

import numpy as np
import pandas as pd
import pytest
from _helpers import dask_flags, local_dask_client
from scipy import integrate, special

from changerate_bayes import CrawlHistory, GammaPrior, posterior_summary
from changerate_bayes.bayes import change_probability, posterior_history
from changerate_bayes.cli import main
from changerate_bayes.crawllog import (
    MAX_INTERVAL_H,
    SCHEDULE_COLUMNS,
    allocate_crawls,
    crawl_schedule,
    nutch_seed_lines,
    page_table,
    schedule_pages,
    write_schedule,
)
from changerate_bayes.io import read_log

T0 = pd.Timestamp("2024-01-01T00:00:00Z")


def _visits(url, n, step_h, changed):
    """n visits every step_h hours from T0; ``changed`` (n - 1 flags) after the reference copy."""
    times = [T0 + pd.Timedelta(hours=step_h * i) for i in range(n)]
    return pd.DataFrame(
        {"page": url, "fetch_time": [t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in times], "changed": [0, *changed]}
    )


def _log_frame():
    # a: 41 visits every 6 h, every other crawl saw a change (20 of 40): well identified, MLE
    # b: 5 visits every 24 h, the 2nd crawl saw a change: thin, posterior mean
    # c: 3 visits every 12 h, no change: thin, posterior mean
    return pd.concat(
        [
            _visits("https://a.example/", 41, 6, [1, 0] * 20),
            _visits("https://b.example/x?q=1", 5, 24, [0, 1, 0, 0]),
            _visits("https://c.example/", 3, 12, [0, 0]),
        ],
        ignore_index=True,
    )


@pytest.fixture()
def log_csv(tmp_path):
    path = tmp_path / "log.csv"
    _log_frame().to_csv(path, index=False)
    return path


# The default prior BetaPrimePrior(1, 2) on x = Δ/p has density 2 (1 + x)^-3. With S0 the unchanged
# time and all changed intervals τ, ∫ e^{-Δ S} (1 + Δ/p)^{-3} dΔ = p e^{z} E_3(z), z = S p, and
# ∫ Δ e^{-Δ S} (1 + Δ/p)^{-3} dΔ = p² e^{z} (E_2(z) − E_3(z)) (E_n the exponential integrals).
def _e3(z):
    return np.exp(z) * special.expn(3, z)


def _e2m3(z):
    return np.exp(z) * (special.expn(2, z) - special.expn(3, z))


def _thin_page(p, s0, tau, changes):
    """Posterior mean and P(changed within t) of a page with 0 or 1 change, default prior."""

    def z(s):  # Z(S0) up to the prior constant: e^{-ΔS0} times (1 − e^{-Δτ}) if one change
        return _e3(s * p) - (_e3((s + tau) * p) if changes else 0.0)

    mean = p * (_e2m3(s0 * p) - (_e2m3((s0 + tau) * p) if changes else 0.0)) / z(s0)
    return mean, (lambda t: 1.0 - z(s0 + t) / z(s0))


def _steady_page_p_changed(t):
    """Page a: P(changed within t) by adaptive quadrature of the posterior in Δ (default prior)."""
    p, s0 = 1 / 6, 120.0

    def density(d, extra=0.0):
        return (1 + d / p) ** -3 * np.exp(-d * (s0 + extra)) * (-np.expm1(-6 * d)) ** 20

    z0 = integrate.quad(density, 0, np.inf, epsabs=0, epsrel=1e-13, limit=500)[0]
    z1 = integrate.quad(density, 0, np.inf, args=(t,), epsabs=0, epsrel=1e-13, limit=500)[0]
    return 1.0 - z1 / z0


def _expected(log_path, budget, max_interval_h=MAX_INTERVAL_H):
    """The expected schedule, from hand derivations and the allocation the command calls."""
    log = read_log(log_path)
    assert np.allclose(log.history.crawl_rate, [1 / 6, 1 / 24, 1 / 12], rtol=1e-15)  # visits / Σ τ, per hour
    alloc = allocate_crawls(page_table(log), budget)["crawl_interval_h"].to_numpy()
    hours = np.where(alloc <= max_interval_h, alloc, max_interval_h)
    seconds = np.maximum(np.rint(hours * 3600), 1).astype(np.int64)
    last = [T0 + pd.Timedelta(hours=240), T0 + pd.Timedelta(hours=96), T0 + pd.Timedelta(hours=24)]
    mean_b, p_b = _thin_page(1 / 24, 72.0, 24.0, 1)
    mean_c, p_c = _thin_page(1 / 12, 24.0, 0.0, 0)
    interval_h = seconds / 3600
    return {
        "url": ["https://a.example/", "https://b.example/x?q=1", "https://c.example/"],
        "last": last,
        "next": [t + pd.Timedelta(seconds=int(s)) for t, s in zip(last, seconds)],
        "seconds": seconds,
        "interval_h": interval_h,
        "source": ["allocation" if a <= max_interval_h else "max_interval" for a in alloc],
        # a: equal intervals, 1 − e^{−6Δ} = 20/40, Δ = ln 2 / 6 per hour = 4 ln 2 per day
        "rate": [4 * np.log(2), mean_b * 24, mean_c * 24],
        "method": ["mle", "posterior_mean", "posterior_mean"],
        "p_changed": [_steady_page_p_changed(interval_h[0]), p_b(interval_h[1]), p_c(interval_h[2])],
    }


def test_schedule_command_matches_hand_derivation(tmp_path, log_csv, capsys):
    out = tmp_path / "next.csv"
    assert main(["schedule", str(log_csv), "--budget", "3", "--out", str(out)]) == 0
    assert "wrote the schedule of 3 pages" in capsys.readouterr().out
    got = pd.read_csv(out)
    exp = _expected(log_csv, 3.0)
    assert got.columns.tolist() == list(SCHEDULE_COLUMNS)
    assert got["url"].tolist() == exp["url"]
    assert got["last_fetch"].tolist() == [t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in exp["last"]]
    assert got["next_fetch"].tolist() == [t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in exp["next"]]
    np.testing.assert_array_equal(got["interval_h"], exp["interval_h"])
    assert got["interval_source"].tolist() == exp["source"]
    assert got["rate_method"].tolist() == exp["method"]
    np.testing.assert_allclose(got["rate_per_day"], exp["rate"], rtol=1e-9)
    np.testing.assert_allclose(got["p_changed"], exp["p_changed"], rtol=1e-8)
    assert ((got["p_changed"] > 0) & (got["p_changed"] < 1)).all()


def test_nutch_seeds_byte_for_byte(tmp_path, log_csv):
    out = tmp_path / "seeds.txt"
    assert main(["schedule", str(log_csv), "--budget", "3", "--out", str(out), "--format", "nutch-seeds"]) == 0
    exp = _expected(log_csv, 3.0)
    expect = "".join(f"{u}\tnutch.fetchInterval.fixed={s}\n" for u, s in zip(exp["url"], exp["seconds"]))
    assert out.read_bytes() == expect.encode()


def test_one_page_gets_the_whole_budget(tmp_path):
    # one page: all 2 crawls/day go to it, every 12 h = 43,200 s, next fetch 12 h after its last (day 10)
    log = tmp_path / "one.csv"
    _visits("https://a.example/", 41, 6, [1, 0] * 20).to_csv(log, index=False)
    seeds, table = tmp_path / "seeds.txt", tmp_path / "one.parquet"
    assert main(["schedule", str(log), "--budget", "2", "--out", str(seeds), "--format", "nutch-seeds"]) == 0
    assert seeds.read_bytes() == b"https://a.example/\tnutch.fetchInterval.fixed=43200\n"
    assert main(["schedule", str(log), "--budget", "2", "--out", str(table)]) == 0
    t = pd.read_parquet(table)
    assert t["next_fetch"].iloc[0] == pd.Timestamp("2024-01-11T12:00:00Z") and t["interval_h"].iloc[0] == 12.0
    assert t["rate_per_day"].iloc[0] == pytest.approx(4 * np.log(2), rel=1e-12)


def test_pages_beyond_the_revisit_limit_are_bounded_and_marked(tmp_path, log_csv):
    log = read_log(log_csv)
    table = allocate_crawls(page_table(log), 3.0)
    table.loc[0, "crawl_interval_h"] = np.inf  # dropped by the allocation
    table.loc[1, "crawl_interval_h"] = 5000.0  # beyond the limit
    s = crawl_schedule(table, log.history, max_interval_h=100.0)
    assert s["interval_source"].tolist() == ["max_interval", "max_interval", "allocation"]
    assert s["interval_h"].iloc[0] == 100.0 and s["interval_h"].iloc[1] == 100.0
    assert s["next_fetch"].iloc[0] == pd.Timestamp("2024-01-11T00:00:00Z") + pd.Timedelta(hours=100)
    assert np.isfinite(s["interval_h"]).all() and s.attrs["n_max_interval"] == 2
    flagged = table.assign(at_revisit_bound=[True, False, True])  # an allocation that flags its own bound
    assert crawl_schedule(flagged, log.history, max_interval_h=100.0)["interval_source"].tolist() == [
        "max_interval",
        "max_interval",
        "revisit_bound",
    ]
    assert s.attrs["crawls_per_day"] == pytest.approx(24 / 100 + 24 / 100 + 24 / s["interval_h"].iloc[2])
    # the command says so
    out = tmp_path / "s.csv"
    assert main(["schedule", str(log_csv), "--budget", "0.01", "--out", str(out), "--max-interval-h", "100"]) == 0
    assert (pd.read_csv(out)["interval_source"] == "max_interval").all()


def test_change_probability_gamma_closed_forms():
    # page 0: no change in S0 = 5 h: posterior Gamma(a, b + S0), P = 1 − ((b + S0)/(b + S0 + t))^a.
    # page 1: m = 3 changes, each after τ = 2 h, and S0 = 4 h; with a Gamma(1, b) prior,
    # Z(S0) = m!/(τ Π_{j=0..m} (x + j)), x = (b + S0)/τ (the partial fractions of
    # Σ_j (−1)^j C(m, j)/(x + j)), so P = 1 − Π_j (x + j)/(x + t/τ + j).
    h = CrawlHistory.from_segments([0, 0, 1, 0, 1, 1], [2.0, 3.0, 2.0, 4.0, 2.0, 2.0], lengths=[2, 4])
    t = np.array([5.0, 7.0])
    got = change_probability(h, t, prior=GammaPrior(1.0, 2.0))
    x = (2.0 + 4.0) / 2.0
    expect = [1 - (7.0 / 12.0), 1 - np.prod([(x + j) / (x + 3.5 + j) for j in range(4)])]
    np.testing.assert_allclose(got, expect, rtol=1e-11)
    g2 = change_probability(
        CrawlHistory.from_segments([0, 0], [2.0, 3.0], lengths=[2]), 5.0, prior=GammaPrior(2.5, 2.0)
    )
    np.testing.assert_allclose(g2, [1 - (7.0 / 12.0) ** 2.5], rtol=1e-11)
    assert change_probability(h, 0.0, prior=GammaPrior(1.0, 2.0)).tolist() == [0.0, 0.0]


def test_posterior_history_keeps_the_posterior(log_csv):
    log = read_log(log_csv)
    small = posterior_history(log.history)
    assert small.lengths.tolist() == [21, 2, 1]  # the changes, then one unchanged interval of S0
    assert small.flat_intervals[20] == 120.0 and small.flat_intervals.tolist()[21:] == [24.0, 72.0, 24.0]
    a, b = posterior_summary(log.history), posterior_summary(small)
    np.testing.assert_array_equal(a.mean, b.mean)
    np.testing.assert_array_equal(a.upper, b.upper)
    np.testing.assert_array_equal(change_probability(log.history, 10.0), change_probability(small, 10.0))


def test_write_schedule_atomic_umask_and_symlink(tmp_path, log_csv):
    s = schedule_pages(read_log(log_csv), budget=3.0)
    target = tmp_path / "real.csv"
    target.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    os.chmod(target, 0o604)
    write_schedule(s, link)
    assert link.is_symlink() and pd.read_csv(target)["url"].tolist() == s["url"].tolist()
    assert (target.stat().st_mode & 0o777) == 0o604  # a file replaced keeps its mode
    old = os.umask(0o027)
    try:
        write_schedule(s, tmp_path / "new.csv")  # a new file: the umask's mode, not mkstemp's 0600
    finally:
        os.umask(old)
    assert ((tmp_path / "new.csv").stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.csv", "log.csv", "new.csv", "real.csv"]
    with pytest.raises(ValueError, match="`format` is needed"):
        write_schedule(s, tmp_path / "x.txt")
    bad = s.copy()
    bad.loc[1, "url"] = "https://b.example/\tx"
    with pytest.raises(ValueError, match="row 1: url .* cannot be a Nutch seed"):
        write_schedule(bad, tmp_path / "x.txt", format="nutch-seeds")
    assert not (tmp_path / "x.txt").exists()
    with pytest.raises(ValueError, match="cannot be a Nutch seed"):
        nutch_seed_lines(pd.DataFrame({"url": ["#comment"], "interval_h": [1.0]}))
    with pytest.raises(ValueError, match="not a whole number of seconds"):
        nutch_seed_lines(pd.DataFrame({"url": ["https://a/"], "interval_h": [0.1 / 3600]}))


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--budget", "0"], "--budget must be > 0"),
        (["--budget", "nan"], "--budget must be > 0"),
        (["--budget", "inf"], "--budget must be > 0"),
        (["--max-interval-h", "0"], "--max-interval-h must be finite"),
        (["--max-interval-h", "inf"], "--max-interval-h must be finite"),
        (["--max-interval-h", "1e9", "--format", "nutch-seeds"], "--max-interval-h 1e+09 is beyond what Nutch reads"),
        (["--format", "parquet"], "--format parquet does not match --out"),
        (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler needs --engine dask"),
    ],
)
def test_bad_flags_are_named_and_nothing_is_written(tmp_path, log_csv, capsys, extra, message):
    out = tmp_path / "new" / ("next.txt" if "nutch-seeds" in extra else "next.csv")
    assert main(["schedule", str(log_csv), "--out", str(out), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_bad_out_is_named(tmp_path, log_csv, capsys):
    assert main(["schedule", str(log_csv), "--out", str(tmp_path / "next.txt")]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["schedule", str(log_csv), "--out", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    before = log_csv.read_bytes()
    assert main(["schedule", str(log_csv), "--out", str(log_csv)]) == 2
    assert "is the input" in capsys.readouterr().err
    link = tmp_path / "alias.csv"
    link.symlink_to(log_csv)
    assert main(["schedule", str(log_csv), "--out", str(link)]) == 2
    assert "is the input" in capsys.readouterr().err
    assert log_csv.read_bytes() == before
    # a URL Nutch cannot read back: the error names it and nothing is written
    frame = _log_frame()
    frame.loc[frame["page"] == "https://c.example/", "page"] = "https://c.example/\tx"
    tab = tmp_path / "tab.csv"
    frame.to_csv(tab, index=False)
    seeds = tmp_path / "seeds.txt"
    assert main(["schedule", str(tab), "--out", str(seeds), "--format", "nutch-seeds"]) == 2
    assert "cannot be a Nutch seed" in capsys.readouterr().err and not seeds.exists()


def test_bad_log_names_the_file(tmp_path, capsys):
    log = tmp_path / "log.csv"
    log.write_text("page,fetch_time,changed\na,2024-01-01T00:00Z,0\na,noon,1\n")
    assert main(["schedule", str(log), "--out", str(tmp_path / "s.csv")]) == 2
    err = capsys.readouterr().err
    assert "log.csv" in err and "line 3" in err and not (tmp_path / "s.csv").exists()


def _with_digests(frame):
    """The log with a digest per visit (a new one after each change) instead of ``changed``."""
    version = frame.groupby("page", sort=False)["changed"].cumsum()
    return frame.assign(digest=[f"D{v}{p[8]}" for v, p in zip(version, frame["page"])]).drop(columns="changed")


def _stamp(text, fmt):
    return pd.Timestamp(text).strftime(fmt)


def _write_logs(folder):
    """The same visits as one log in each format the Dask engine reads file by file (and one CSV, OTA-free)."""
    import base64
    import hashlib
    import json
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    frame = _with_digests(_log_frame())
    logs = {"csv": [folder / "log.csv"], "parquet": [folder / "log.parquet"]}
    frame.to_csv(logs["csv"][0], index=False)
    frame.to_parquet(logs["parquet"][0])
    halves = [frame[frame["page"] == frame["page"].iloc[0]], frame[frame["page"] != frame["page"].iloc[0]]]
    logs["csv x2"] = [folder / "part-a.csv", folder / "part-b.csv"]
    for part, path in zip(halves, logs["csv x2"]):
        part.to_csv(path, index=False)
    logs["parquet x2"] = [folder / "part-a.parquet", folder / "part-b.parquet"]
    for part, path in zip(halves, logs["parquet x2"]):
        part.to_parquet(path)
    cdx = "".join(
        f"{u} {_stamp(t, '%Y%m%d%H%M%S')} {u} text/html 200 {d} 100\n"
        for u, t, d in frame[["page", "fetch_time", "digest"]].itertuples(index=False)
    )
    logs["cdx"] = [folder / "log.cdx"]
    logs["cdx"][0].write_text(cdx)
    cdxj = "".join(
        f"{u} {_stamp(t, '%Y%m%d%H%M%S')} " + json.dumps({"url": u, "status": "200", "digest": d}) + "\n"
        for u, t, d in frame[["page", "fetch_time", "digest"]].itertuples(index=False)
    )
    logs["cdxj"] = [folder / "log.cdxj"]
    logs["cdxj"][0].write_text(cdxj)
    logs["warc"] = [folder / "log.warc.gz"]
    with open(logs["warc"][0], "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for u, t, d in frame[["page", "fetch_time", "digest"]].itertuples(index=False):
            body = d.encode()
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            writer.write_record(
                writer.create_warc_record(
                    u,
                    "response",
                    payload=BytesIO(body),
                    http_headers=http,
                    warc_headers_dict={
                        "WARC-Date": _stamp(t, "%Y-%m-%dT%H:%M:%SZ"),
                        "WARC-Payload-Digest": "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode(),
                    },
                )
            )
    # CDX and WARC of the same pages together: one log (the first page's captures in WARC, the rest in CDX)
    logs["cdx + warc"] = [folder / "rest.cdx", folder / "first.warc.gz"]
    first = frame["page"].iloc[0]
    logs["cdx + warc"][0].write_text("".join(line + "\n" for line in cdx.splitlines() if not line.startswith(first)))
    with open(logs["cdx + warc"][1], "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for u, t, d in frame[frame["page"] == first][["page", "fetch_time", "digest"]].itertuples(index=False):
            body = d.encode()
            writer.write_record(
                writer.create_warc_record(
                    u,
                    "response",
                    payload=BytesIO(body),
                    http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1"),
                    warc_headers_dict={"WARC-Date": _stamp(t, "%Y-%m-%dT%H:%M:%SZ")},
                )
            )
    # Last-Modified alone decides, in two files, with a server that reports the fetch time
    lm = _log_frame()
    lm["last_modified"] = np.where(
        lm["changed"] == 1,
        (pd.to_datetime(lm["fetch_time"]) - pd.Timedelta(hours=1)).dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "2023-06-01T00:00:00Z",
    )
    lm = lm.drop(columns="changed")
    liar = _visits("https://liar.example/", 6, 12, [0] * 5).drop(columns="changed")
    liar["last_modified"] = liar["fetch_time"]
    logs["last_modified x2 with a liar"] = [folder / "lm-a.csv", folder / "lm-b.csv"]
    pd.concat([lm.iloc[:20], liar]).to_csv(logs["last_modified x2 with a liar"][0], index=False)
    lm.iloc[20:].to_csv(logs["last_modified x2 with a liar"][1], index=False)
    return logs


@pytest.mark.slow
@pytest.mark.xdist_group("dask_cluster")
def test_dask_engine_writes_the_same_files(tmp_path, log_csv, capsys):
    logs = {"changed csv": [log_csv], **_write_logs(tmp_path)}
    with local_dask_client(processes=True) as client:
        for kind, paths in logs.items():
            outputs = (("s.csv", []), ("s.parquet", []), ("seeds.txt", ["--format", "nutch-seeds"]))
            for name, fmt in outputs if kind == "changed csv" else outputs[:1]:  # every column, exactly, in CSV
                a, b = tmp_path / f"pandas-{name}", tmp_path / f"dask-{name}"
                capsys.readouterr()
                assert main(["schedule", *map(str, paths), "--budget", "3", "--out", str(a), *fmt]) == 0, kind
                said = capsys.readouterr().out.splitlines()[:-2]  # all but the file written and the time
                assert (
                    main(["schedule", *map(str, paths), "--budget", "3", "--out", str(b), *fmt, *dask_flags(client)])
                    == 0
                ), kind
                assert capsys.readouterr().out.splitlines()[:-2] == said, kind
                assert a.read_bytes() == b.read_bytes(), (kind, name)
            got = pd.read_csv(tmp_path / "dask-s.csv")
            assert sorted(got["url"]) == ["https://a.example/", "https://b.example/x?q=1", "https://c.example/"]
            if "liar" in kind:
                assert "Last-Modified ignored on 1 page(s)" in "\n".join(said)
                assert "last_modified_unreliable 6" in "\n".join(said)


def test_library_input_validation(log_csv):
    log = read_log(log_csv)
    table = allocate_crawls(page_table(log), 3.0)
    with pytest.raises(TypeError, match="`table` must be a pandas DataFrame"):
        crawl_schedule(table.to_dict(), log.history)
    with pytest.raises(ValueError, match=r"`table` lacks the column\(s\) \['crawl_interval_h'\]"):
        crawl_schedule(page_table(log), log.history)
    with pytest.raises(TypeError, match="`history` must be a CrawlHistory"):
        crawl_schedule(table, None)
    with pytest.raises(ValueError, match="`history` has 3 pages but `table` has 2 rows"):
        crawl_schedule(table.iloc[:2], log.history)
    with pytest.raises(ValueError, match="same pages in the same order"):
        crawl_schedule(table.iloc[::-1].reset_index(drop=True), log.history)
    with pytest.raises(ValueError, match="`max_interval_h` must be finite"):
        crawl_schedule(table, log.history, max_interval_h=np.inf)
    no_time = table.copy()
    no_time["last_visit"] = pd.NaT
    with pytest.raises(ValueError, match="row 0 .* has no last visit time"):
        crawl_schedule(no_time, log.history)
    negative = table.copy()
    negative.loc[2, "crawl_interval_h"] = -1.0
    with pytest.raises(ValueError, match="'crawl_interval_h' must be >= 0; got -1.0 at row 2"):
        crawl_schedule(negative, log.history)
    with pytest.raises(ValueError, match=r"`interval` must be >= 0 and finite; got nan at index 1"):
        change_probability(log.history, [1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match=r"`interval` must be a number or have shape \(3,\)"):
        change_probability(log.history, [1.0, 2.0])
    with pytest.raises(ValueError, match="needs the crawl intervals"):
        change_probability(CrawlHistory([1, 0], crawl_rate=1.0), 1.0)
    with pytest.raises(TypeError, match="`log` must be a CrawlLog"):
        schedule_pages(log.history)


def test_columns_flag_maps_the_log(tmp_path, capsys):
    frame = _log_frame().rename(columns={"page": "url", "fetch_time": "ts"})
    log = tmp_path / "mine.csv"
    frame.to_csv(log, index=False)
    out = tmp_path / "s.csv"
    assert main(["schedule", str(log), "--budget", "3", "--out", str(out), "--columns", "page=url,fetch_time=ts"]) == 0
    assert pd.read_csv(out)["url"].tolist() == ["https://a.example/", "https://b.example/x?q=1", "https://c.example/"]
    assert main(["schedule", str(log), "--out", str(out), "--columns", "page"]) == 2
    assert "--columns takes ROLE=COLUMN" in capsys.readouterr().err


def test_a_folder_of_common_crawl_shards_is_a_log(tmp_path, capsys):
    # a folder stands for every file under it, and cdx-NNNNN.gz shards are told by their first line
    from changerate_bayes.datasets import write_cdxj_shards

    shards = write_cdxj_shards(tmp_path / "cc", 20, 3, 1)
    out, by_file = tmp_path / "folder.csv", tmp_path / "files.csv"
    assert main(["schedule", str(tmp_path / "cc"), "--budget", "5", "--out", str(out)]) == 0, capsys.readouterr().err
    assert main(["schedule", *map(str, shards), "--budget", "5", "--out", str(by_file)]) == 0
    assert out.read_bytes() == by_file.read_bytes() and len(pd.read_csv(out)) > 0
    # an output inside the input folder would be read as a log by the next run: refused by name
    assert main(["schedule", str(tmp_path / "cc"), "--out", str(tmp_path / "cc" / "next.csv")]) == 0
    assert main(["schedule", str(tmp_path / "cc"), "--out", str(tmp_path / "cc" / "next.csv")]) == 2
    assert "is the input" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.xdist_group("dask_cluster")
def test_a_cut_shard_on_dask_is_one_line(tmp_path, capfd):
    # a worker's failed read reaches the terminal as the command's one line, not as the worker's traceback
    from changerate_bayes.datasets import write_cdxj_shards

    shards = write_cdxj_shards(tmp_path / "cc", 400, 2, 1, n_shards=1)
    data = shards[0].read_bytes()
    shards[0].write_bytes(data[: len(data) // 2])
    out = tmp_path / "s.csv"
    assert main(["schedule", *map(str, shards), "--out", str(out), "--engine", "dask"]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cdx-00000.gz" in err[0] and "truncated" in err[0], err
    assert not out.exists()


def test_pages_left_out_of_the_schedule_are_said(tmp_path, log_csv, capsys):
    # a page seen once (a new URL) and a page whose every visit failed get no row: the command says so
    frame = pd.concat(
        [
            pd.read_csv(log_csv),
            pd.DataFrame({"page": ["https://new.example/"], "fetch_time": ["2024-01-05T00:00:00Z"], "changed": [0]}),
        ],
        ignore_index=True,
    )
    log = tmp_path / "with_new.csv"
    frame.to_csv(log, index=False)
    out = tmp_path / "s.csv"
    assert main(["schedule", str(log), "--budget", "3", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "note: 1 page(s) of the log are not in the schedule: 1 with a single usable visit" in said
    assert "wrote the schedule of 3 pages" in said
    assert "https://new.example/" not in pd.read_csv(out)["url"].tolist()
    assert main(["schedule", str(log_csv), "--budget", "3", "--out", str(out)]) == 0
    assert "not in the schedule" not in capsys.readouterr().out


def test_errors_name_the_schedule_commands_flags(tmp_path, log_csv, capsys):
    # the log's format is --log-format here (--format is the output's); a URL Nutch cannot read is the log's page
    from changerate_bayes.cli import schedule
    from changerate_bayes.cli._common import cli_message

    # the Dask engine's message for logs of two formats, as the command prints it
    said = cli_message(
        "a.csv: the files have different formats ['csv', 'parquet'] (only CDX and WARC mix); pass `format`",
        schedule.FLAGS,
    )
    assert said.endswith("pass --log-format")
    frame = _log_frame()
    frame.loc[frame["page"] == "https://c.example/", "page"] = "https://c.example/\tx"
    tab = tmp_path / "tab.csv"
    frame.to_csv(tab, index=False)
    assert main(["schedule", str(tab), "--out", str(tmp_path / "seeds.txt"), "--format", "nutch-seeds"]) == 2
    err = capsys.readouterr().err
    assert "--format nutch-seeds: the log's page 'https://c.example/\\tx' cannot be a Nutch seed" in err, err
    assert "row 2" not in err


def test_a_next_fetch_beyond_what_times_hold_is_refused(tmp_path, log_csv, capsys):
    # int64 nanoseconds end on 2262-04-11: a revisit limit that would put a next fetch past it is named
    out = tmp_path / "s.csv"
    assert main(["schedule", str(log_csv), "--budget", "1e-6", "--max-interval-h", "1e7", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--max-interval-h" in err and "2262-04-11" in err, err
    assert not out.exists()
    late = tmp_path / "late.csv"
    late.write_text("page,fetch_time,changed\na,2261-12-01T00:00:00Z,0\na,2261-12-31T00:00:00Z,0\n")
    assert main(["schedule", str(late), "--budget", "0.001", "--max-interval-h", "5000", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "page 'a'" in err and "2262-04-11" in err and "Traceback" not in err, err
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.xdist_group("dask_cluster")
def test_page_key_surt_names_common_crawl_pages_by_their_key(tmp_path, capsys):
    from changerate_bayes.datasets import surt, write_cdxj_shards

    shards = [str(s) for s in write_cdxj_shards(tmp_path / "cc", 20, 3, 1, n_shards=1)]
    by_url, by_surt, on_dask = tmp_path / "url.csv", tmp_path / "surt.csv", tmp_path / "dask.csv"
    assert main(["schedule", *shards, "--budget", "5", "--out", str(by_url)]) == 0
    assert main(["schedule", *shards, "--budget", "5", "--page-key", "surt", "--out", str(by_surt)]) == 0
    import socket

    taken = socket.socket()  # Dask's default dashboard port held (as another user's cluster holds it)
    try:
        taken.bind(("0.0.0.0", 8787))
        taken.listen()
    except OSError:
        pass  # already held
    capsys.readouterr()
    try:
        assert (
            main(
                ["schedule", *shards, "--budget", "5", "--page-key", "surt", "--engine", "dask", "--out", str(on_dask)]
            )
            == 0
        )
    finally:
        taken.close()
    said = capsys.readouterr().out
    assert "8787" not in said and "unclosed" not in said, said  # Dask's own warnings are not the log's notes
    u, s = pd.read_csv(by_url), pd.read_csv(by_surt)
    assert sorted(s["url"]) == sorted(u["url"].map(surt)) and not set(s["url"]) & set(u["url"])
    pd.testing.assert_frame_equal(
        s.assign(url=0).sort_values("p_changed").reset_index(drop=True),
        u.assign(url=0).sort_values("p_changed").reset_index(drop=True),
    )
    assert on_dask.read_bytes() == by_surt.read_bytes()
