"""The change rate with the last-modification date, and the Monte Carlo study of the error it saves."""

import math

import numpy as np
import pytest

from changerate_bayes.estimators import last_modified_rate


def _reference(changed, tau, age):
    # one page, from the definition: X changes, exposure T (ages of changed crawls, intervals of the others)
    x = sum(changed)
    n = len(changed)
    t = sum(a if c else s for c, s, a in zip(changed, tau, age))
    mle = x / t if x else 0.0
    if x == 0:
        cgm = 0.0
    elif x == n:
        cgm = (x - 1) / t
    else:
        cgm = (x - 1 - x / (n * math.log(1 - x / n))) / t
    return mle, cgm


def test_equals_the_definition_page_by_page_on_a_ragged_history():
    rng = np.random.default_rng(1)
    lengths = np.array([1, 3, 7, 2, 5, 4])
    n = lengths.sum()
    changed = (rng.random(n) < 0.5).astype(int)
    changed[:1] = 1  # a one-crawl page that changed: X = N = 1, so (N - 1)/T = 0
    changed[1:4] = 1  # X = N
    changed[11:13] = 0  # X = 0
    tau = rng.uniform(0.5, 3.0, n)
    age = np.where(changed == 1, tau * rng.random(n), np.nan)  # ages of unchanged crawls are not read
    mle = last_modified_rate(changed, tau, age, lengths=lengths, method="mle")
    cgm = last_modified_rate(changed, tau, age, lengths=lengths)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    for i, (s, k) in enumerate(zip(starts, lengths)):
        ref = _reference(changed[s : s + k], tau[s : s + k], age[s : s + k])
        assert mle[i] == pytest.approx(ref[0], rel=1e-14) and cgm[i] == pytest.approx(ref[1], rel=1e-14, abs=0)
    assert cgm[0] == 0.0 and cgm[3] == 0.0


def test_bad_input_is_named():
    one = np.ones(3)
    with pytest.raises(ValueError, match=r"`intervals` must be finite and > 0; got 0.0 at index 1"):
        last_modified_rate([1, 0, 1], [1.0, 0.0, 1.0], one)
    with pytest.raises(ValueError, match=r"`ages` of changed crawls must lie in \[0, interval\]; got 2.0"):
        last_modified_rate([1, 0, 1], one, [0.5, 0.5, 2.0])
    with pytest.raises(ValueError, match=r"`changed` must hold 0/1 values"):
        last_modified_rate([2, 0, 1], one, one)
    with pytest.raises(ValueError, match=r"`lengths` must be >= 1 and sum to 3 crawls"):
        last_modified_rate([1, 0, 1], one, one, lengths=[1, 1])
    with pytest.raises(ValueError, match=r"`method` must be 'cgm' or 'mle'; got 'x'"):
        last_modified_rate([1, 0, 1], one, one, method="x")


@pytest.mark.parametrize("lam_c", [0.3, 2.0])
def test_simulated_crawls_match_the_poisson_model(lam_c):
    from changerate_bayes._rng import replication_generators
    from changerate_bayes.validation.last_modified import simulate

    reps, n = 4000, 20
    changed, age = simulate(lam_c, n, replication_generators(5, reps))
    assert ((age >= 0) & (age < 1)).all() and (age[changed == 0] == 0).all()
    # P(change in an interval) = 1 - exp(-λc); the exposure min(age, 1) has mean (1 - exp(-λc))/λc,
    # so the pooled X / T estimates λc without bias; tolerances are 4 Monte Carlo standard errors
    p = 1 - math.exp(-lam_c)
    share = changed.mean()
    assert abs(share - p) < 4 * math.sqrt(p * (1 - p) / changed.size)
    exposure = np.where(changed == 1, age, 1.0).sum(axis=1)
    mean_t = exposure.mean()
    assert abs(mean_t - n * p / lam_c) < 4 * exposure.std(ddof=1) / math.sqrt(reps)


def test_quick_study_reports_every_scenario_with_standard_errors():
    from changerate_bayes.validation import last_modified as L
    from changerate_bayes.validation._preset import Preset

    lines = []
    result = L.run(Preset("quick"), seed=3, progress=lines.append)
    rows = result["last_modified"]["rows"]
    assert len(rows) == len(L.RATES) * len(L.CRAWLS) * len(L.ESTIMATORS) and len(lines) == 8
    for r in rows:
        assert r["bias_se"] > 0 and r["rmse_se"] > 0 and r["replications"] <= 2000
        if r["estimator"] == "lm_cgm":  # nearly unbiased: within 4 Monte Carlo standard errors (+1% for N = 10)
            assert abs(r["bias"]) < 4 * r["bias_se"] + 0.01
    ratios = {(r["rate_per_interval"], r["crawls"]): r["ratio"] for r in L.rmse_ratios(result)}
    assert ratios[(5.0, 50)] < 0.9  # where change/no-change saturates, the date saves error
    html = L.render(result)
    assert "lm_cgm" in html and "RMSE of Cho" in html


def _lm_log():
    import pandas as pd

    rows = [
        # a: dates inside the intervals of the changes the digests show
        ("a", "2024-01-01T00:00Z", "x", "2023-12-01T00:00Z"),
        ("a", "2024-01-02T00:00Z", "y", "2024-01-01T18:00Z"),  # changed, 6 h old
        ("a", "2024-01-03T00:00Z", "y", "2024-01-01T18:00Z"),  # unchanged
        ("a", "2024-01-04T00:00Z", "z", "2024-01-03T12:00Z"),  # changed, 12 h old
        # b: a server that always says "now" (seconds before the fetch)
        ("b", "2024-01-01T00:00Z", "x", "2023-12-31T23:59:30Z"),
        ("b", "2024-01-02T00:00Z", "x", "2024-01-01T23:59:40Z"),
        ("b", "2024-01-03T00:00Z", "y", "2024-01-02T23:59:50Z"),
        # c: a date that moves on every visit while the content stays the same
        ("c", "2024-01-01T00:00Z", "x", "2023-12-31T10:00Z"),
        ("c", "2024-01-02T00:00Z", "x", "2024-01-01T10:00Z"),
        ("c", "2024-01-03T00:00Z", "x", "2024-01-02T10:00Z"),
        ("c", "2024-01-04T00:00Z", "w", "2024-01-03T10:00Z"),
        # d: a change whose date lies before the previous visit (not dated): no lm_rate
        ("d", "2024-01-01T00:00Z", "x", "2023-12-01T00:00Z"),
        ("d", "2024-01-02T00:00Z", "y", "2023-12-01T00:00Z"),
        # e: a date at the fetch time is ignored (counted), as before
        ("e", "2024-01-01T00:00Z", "x", "2024-01-01T00:00Z"),
        ("e", "2024-01-02T00:00Z", "x", "2023-12-01T00:00Z"),
    ]
    return pd.DataFrame(rows, columns=["page", "fetch_time", "digest", "last_modified"])


def test_the_table_gets_the_estimator_with_the_date_and_liars_are_counted():
    import warnings

    from changerate_bayes import estimate_pages
    from changerate_bayes.io import read_frame

    log = read_frame(_lm_log())
    assert log.audit.last_modified_unreliable_pages == 2 and log.audit.last_modified_ignored == 1
    assert "Last-Modified ignored on 2 page(s)" in log.audit.format()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = estimate_pages(log).set_index("page")
    # a: X = 2 changes in N = 3 crawls, exposure T = 6 + 24 + 12 = 42 h; per day
    expect = (2 - 1 - 2 / (3 * math.log(1 - 2 / 3))) / 42 * 24
    assert t.loc["a", "lm_rate"] == pytest.approx(expect, rel=1e-13)
    assert np.isnan(t.loc[["b", "c", "d"], "lm_rate"]).all()
    assert t.loc["e", "lm_rate"] == 0.0  # no change seen: nothing to date


def test_warc_last_modified_headers_and_etag_columns(tmp_path):
    import base64
    import hashlib
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from changerate_bayes import estimate_pages
    from changerate_bayes.io import read_csv, read_warc

    frame = _lm_log()
    path = tmp_path / "crawl.warc.gz"
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for page, fetch, digest, modified in frame.itertuples(index=False):
            stamp = pd_time(modified).strftime("%a, %d %b %Y %H:%M:%S GMT")
            http = StatusAndHeaders("200 OK", [("Last-Modified", stamp), ("ETag", f'"{digest}"')], protocol="HTTP/1.1")
            body = digest.encode()
            rec = writer.create_warc_record(
                f"http://{page}/",
                "response",
                payload=BytesIO(body),
                http_headers=http,
                warc_headers_dict={
                    "WARC-Date": pd_time(fetch).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "WARC-Payload-Digest": "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode(),
                },
            )
            writer.write_record(rec)
    w = read_warc(path)
    csv = tmp_path / "log.csv"
    frame.rename(columns={"digest": "etag"}).to_csv(csv, index=False)  # ETags decide where there is no digest
    c = read_csv(csv)
    assert c.audit.change_source == "digest"
    assert w.audit.last_modified_unreliable_pages == c.audit.last_modified_unreliable_pages == 2
    np.testing.assert_array_equal(w.history.flat_changed, c.history.flat_changed)
    np.testing.assert_array_equal(w.last_modified_age, c.last_modified_age)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = estimate_pages(w), estimate_pages(c)
    np.testing.assert_allclose(a["lm_rate"].to_numpy(), b["lm_rate"].to_numpy(), rtol=1e-14)


def pd_time(text):
    import pandas as pd

    return pd.Timestamp(text)


def _liars(rows, usable=None):
    """last_modified_liars of one page per entry of ``rows``: lists of (fetch, last_modified) in seconds."""
    from changerate_bayes.io._semantics import _NAT, last_modified_liars

    page = np.concatenate([np.full(len(r), i) for i, r in enumerate(rows)]).astype(np.int64)
    t = np.concatenate([[f for f, _ in r] for r in rows]).astype(np.int64) * 10**9
    lm = np.array([_NAT if m is None else m * 10**9 for r in rows for _, m in r], dtype=np.int64)
    ok = np.ones(page.size, bool) if usable is None else np.asarray(usable, bool)
    return last_modified_liars(page, t, lm, ok, len(rows)).tolist()


DAY = 86_400


@pytest.mark.parametrize(
    "visits, liar",
    [
        ([(k * DAY, k * DAY) for k in range(1, 3)], False),  # two "now" visits: thin evidence
        ([(k * DAY, k * DAY) for k in range(1, 4)], True),  # three: condemned
        ([(k * DAY, k * DAY + 5) for k in range(1, 4)], True),  # server clock 5 s ahead
        ([(k * DAY, k * DAY - 5) for k in range(1, 4)], True),  # 5 s behind
        ([(k * DAY, k * DAY - 60) for k in range(1, 4)], True),  # the tolerance is inclusive
        ([(k * DAY, k * DAY - 61) for k in range(1, 4)], False),  # a minute and a second: a date
        ([(k * DAY, k * DAY + 7 * DAY) for k in range(1, 4)], True),  # in the future on every visit
        ([(k * DAY, k * DAY) for k in range(1, 5)] + [(9 * DAY, DAY // 2)], True),  # 4 "now" + 1 honest
        ([(k * DAY, k * DAY) for k in range(1, 4)] + [(9 * DAY, DAY // 2)], False),  # 3 "now" + 1 honest: 3/4 < 4/5
        ([(k * DAY, k * DAY) for k in range(1, 3)] + [(9 * DAY, DAY // 2)], False),  # 2 "now" + 1 honest
        ([(k * DAY, k * DAY) for k in range(1, 4)] + [(9 * DAY, None)] * 3, True),  # visits without one don't count
    ],
)
def test_liar_rule_edge_cases(visits, liar):
    assert _liars([visits]) == [liar]


def test_liar_rule_counts_only_successful_visits():
    visits = [(k * DAY, k * DAY) for k in range(1, 5)]
    assert _liars([visits], usable=[True, True, False, False]) == [False]
    assert _liars([visits], usable=[True, True, True, False]) == [True]


def _lm_decides_log():
    rows = []
    for d in range(1, 6):
        t = f"2024-01-0{d}T00:00:00Z"
        rows.append(("liar", t, t))  # Last-Modified = fetch time
        rows.append(("skewed", t, f"2024-01-0{d}T00:00:07Z"))  # = fetch time, server clock 7 s ahead
        rows.append(("honest", t, "2023-12-01T00:00:00Z" if d < 3 else "2024-01-02T12:00:00Z"))
    rows.append(("pair", "2024-01-01T00:00:00Z", "2023-12-31T23:59:58Z"))  # 2 visits "now": kept
    rows.append(("pair", "2024-01-02T00:00:00Z", "2024-01-01T23:59:58Z"))
    return pd_frame(rows, ["page", "fetch_time", "last_modified"])


def pd_frame(rows, columns):
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


def test_where_last_modified_alone_decides_liars_are_dropped_with_their_reason():
    from changerate_bayes.io import read_frame

    frame = _lm_decides_log()
    log = read_frame(frame)
    a = log.audit
    assert a.change_source == "last_modified"
    assert a.last_modified_unreliable_pages == 2
    assert a.dropped_by("last_modified_unreliable") == 10  # every row of the two liars
    assert a.dropped_total == 10 and a.pages_without_usable_visit == 2
    assert a.rows_read == a.visits_kept + a.reference_visits + a.dropped_total
    assert "their 10 row(s) are dropped (last_modified_unreliable)" in a.format()
    assert log.history.page_ids.tolist() == ["honest", "pair"]
    assert log.last_modified_unreliable.tolist() == [False, False]
    # the kept pages are read exactly as without the liars: honest changed once (visit 3), pair once
    alone = read_frame(frame[~frame["page"].isin(["liar", "skewed"])])
    np.testing.assert_array_equal(log.history.flat_changed, alone.history.flat_changed)
    np.testing.assert_array_equal(log.history.flat_changed, [0, 1, 0, 0, 1])


def test_where_digests_decide_liars_are_kept_flagged_and_get_no_lm_rate(tmp_path):
    import warnings

    from changerate_bayes import estimate_pages
    from changerate_bayes.io import read_csv

    frame = _lm_decides_log()
    frame["digest"] = ["x" if i < 9 else "y" for i in range(len(frame))]  # every page changes once at most
    path = tmp_path / "log.csv"
    frame.to_csv(path, index=False)
    log = read_csv(path)
    assert log.audit.change_source == "digest"
    assert log.audit.dropped_by("last_modified_unreliable") == 0 and log.audit.dropped_total == 0
    assert log.audit.last_modified_unreliable_pages == 2
    assert log.history.page_ids.tolist() == ["liar", "skewed", "honest", "pair"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = estimate_pages(log).set_index("page")
    assert t["lm_unreliable"].tolist() == [True, True, False, False]
    assert np.isnan(t.loc[["liar", "skewed"], "lm_rate"]).all()
    assert t.loc[["liar", "skewed"], "n_changes"].tolist() == [1, 1]  # the digests decide, as for any page


@pytest.mark.parametrize("spare", ["digest", "etag", "changed"])
def test_asked_for_last_modified_the_liars_changes_come_from_the_other_column(spare):
    from changerate_bayes.io import read_frame

    frame = _lm_decides_log()
    # liar and skewed: content changes at visit 4 (a 304 at visit 3 carries the digest forward);
    # honest: its digests say "changed" every time, but its dates decide (changed once, visit 3)
    digest = {"liar": "aaXbb", "skewed": "ccXdd", "honest": "pqrst", "pair": "uv"}
    changed = {"liar": "00010", "skewed": "00010", "honest": "01111", "pair": "01"}  # the crawler's decisions
    k = frame.groupby("page").cumcount()
    letter = [digest[p][i] for p, i in zip(frame["page"], k)]
    not_modified = [x == "X" for x in letter]
    if spare == "changed":
        frame["changed"] = [int(changed[p][i]) for p, i in zip(frame["page"], k)]
    else:
        frame[spare] = ["" if x == "X" else x for x in letter]
    frame["not_modified"] = not_modified
    log = read_frame(frame, change_from="last_modified")
    a = log.audit
    assert a.change_source == "last_modified"
    assert a.last_modified_fallback == ("changed" if spare == "changed" else "digest")
    assert a.last_modified_unreliable_pages == 2 and a.dropped_total == 0
    assert f"decided by the {a.last_modified_fallback} column instead" in a.format()
    assert log.history.page_ids.tolist() == ["liar", "skewed", "honest", "pair"]
    assert log.last_modified_unreliable.tolist() == [True, True, False, False]
    # liar, skewed: visits 2..5 = unchanged, 304, changed, unchanged; honest: dates (visit 3); pair: dates
    np.testing.assert_array_equal(log.history.flat_changed, [0, 0, 1, 0] * 2 + [0, 1, 0, 0] + [1])


def test_warc_liars_are_judged_against_the_servers_own_date(tmp_path):
    """A server whose clock is 10 minutes behind and says Last-Modified = its own Date header is
    found through that header (by the crawler's clock its dates are 10 minutes old); an honest
    server with the same clock keeps its dates. A CDX index read with the WARC file (no headers
    there) does not change the verdicts."""
    from io import BytesIO

    import pandas as pd
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from changerate_bayes.io import read_log, read_warc

    http_date = "%a, %d %b %Y %H:%M:%S GMT"
    path = tmp_path / "crawl.warc.gz"
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for day in range(1, 6):
            fetch = pd.Timestamp(f"2024-01-0{day}T00:00:00Z")
            served = fetch - pd.Timedelta(minutes=10)  # the server's clock
            pages = (
                ("liar", served, b"same"),  # honest: changed 2 h before visit 4, by its own clock
                (
                    "honest",
                    served - pd.Timedelta(hours=2) if day > 3 else pd.Timestamp("2023-06-01T00:00Z"),
                    b"new" if day > 3 else b"old",
                ),
            )
            for page, modified, body in pages:
                http = StatusAndHeaders(
                    "200 OK",
                    [("Date", served.strftime(http_date)), ("Last-Modified", modified.strftime(http_date))],
                    protocol="HTTP/1.1",
                )
                writer.write_record(
                    writer.create_warc_record(
                        f"http://{page}/",
                        "response",
                        payload=BytesIO(body),
                        http_headers=http,
                        warc_headers_dict={"WARC-Date": fetch.strftime("%Y-%m-%dT%H:%M:%SZ")},
                    )
                )
    log = read_warc(path)
    assert log.audit.last_modified_unreliable_pages == 1
    assert log.history.page_ids.tolist() == ["http://liar/", "http://honest/"]
    assert log.last_modified_unreliable.tolist() == [True, False]
    assert np.isnan(log.last_modified_age[:4]).all()
    np.testing.assert_allclose(log.last_modified_age[4:], [0, 0, 2 + 10 / 60, 0])  # by the crawler's clock
    cdx = tmp_path / "more.cdx"
    cdx.write_text("".join(f"other 2024010{d}000000 http://other/ text/html 200 D{d // 3} 10\n" for d in range(1, 6)))
    both = read_log([path, cdx])
    assert both.history.page_ids.tolist() == ["http://liar/", "http://honest/", "http://other/"]
    assert both.last_modified_unreliable.tolist() == [True, False, False]
