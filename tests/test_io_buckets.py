"""Logs reduced one bucket of pages at a time, against the change rules read directly.

The readers scatter a log's rows into buckets by page and apply the rules bucket by
bucket; ``estimate_log`` also estimates bucket by bucket, spilling rows to disk beyond
its memory budget. Whatever the buckets, chunks and spills, every page's history, the
audit and the per-page table must be what the whole log gives.
"""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changerate_bayes import estimate_log, estimate_pages
from changerate_bayes.io import DROP_REASONS, CrawlLogError, _buckets, read_csv, read_log, read_parquet

OTA = Path(__file__).parents[1] / "changerate_bayes" / "datasets" / "data" / "opentermsarchive"


# ----------------------------------------------------------------------------- the reference
def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value).strip() in ("", "-")


def _reference(df):
    """The rules of ``changerate_bayes.io._semantics`` read directly, one page at a time.

    ``df``: columns page, fetch_time (ISO strings), status (str, "" = missing), digest
    (str). Returns the history per page (in order of first appearance), each page's
    first and last usable visit, and the audit counts.
    """
    t = pd.to_datetime(df["fetch_time"], utc=True)
    dropped = dict.fromkeys(DROP_REASONS, 0)
    out_of_order = single = none_usable = 0
    pages, changes, intervals, firsts, lasts = [], [], [], [], []
    visits_kept = references = 0
    for page in pd.unique(df["page"]):
        idx = np.flatnonzero((df["page"] == page).to_numpy())
        times = [t.iloc[i] for i in idx]
        out_of_order += sum(b < a for a, b in zip(times, times[1:]))
        kept = []
        for i in idx:
            status = df["status"].iloc[i]
            status = float("nan") if _missing(status) else float(status)
            nm = status == 304
            if math.isnan(status) and not nm:
                dropped["missing_status"] += 1
            elif status >= 400 and not nm:
                dropped["failed_status"] += 1
            elif _missing(df["digest"].iloc[i]) and not nm:
                dropped["missing_digest"] += 1
            else:
                kept.append((t.iloc[i], i, nm, str(df["digest"].iloc[i]).strip()))
        kept.sort(key=lambda r: (r[0], r[1]))
        usable, previous_time = [], None
        for r in kept:
            if r[0] == previous_time:
                dropped["duplicate"] += 1
                continue
            previous_time = r[0]
            usable.append(r)
        seq, current = [], None
        for time, _, nm, digest in usable:
            if nm and current is None:
                dropped["not_modified_before_reference"] += 1
                continue
            effective = current if nm else digest
            seq.append((time, nm, effective))
            current = effective
        if not seq:
            none_usable += 1
            continue
        references += 1
        if len(seq) == 1:
            single += 1
            continue
        pages.append(page)
        changes += [0 if nm else int(e != e0) for (_, _, e0), (_, nm, e) in zip(seq, seq[1:])]
        intervals += [(b[0] - a[0]).total_seconds() / 3600.0 for a, b in zip(seq, seq[1:])]
        visits_kept += len(seq) - 1
        firsts.append(seq[0][0])
        lasts.append(seq[-1][0])
    audit = {
        "rows_read": len(df),
        "pages": int(df["page"].nunique()),
        "pages_kept": len(pages),
        "visits_kept": visits_kept,
        "reference_visits": references,
        "dropped": dropped,
        "out_of_order": out_of_order,
        "single_visit_pages": single,
        "pages_without_usable_visit": none_usable,
    }
    return pages, changes, intervals, firsts, lasts, audit


def _random_log(rng, n, n_pages, hours):
    return pd.DataFrame(
        {
            "page": rng.choice([f"p{i}" for i in range(n_pages)], n),
            "fetch_time": (
                pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(rng.integers(0, hours, n), "h")
            ).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "status": rng.choice(["200", "200", "200", "304", "404", "500", ""], n),
            "digest": rng.choice(["a", "b", "a ", "-", ""], n, p=[0.45, 0.3, 0.1, 0.05, 0.1]),
        }
    )


def _check_against_reference(log, df):
    pages, changes, intervals, firsts, lasts, audit = _reference(df)
    assert log.history.page_ids.tolist() == pages
    assert log.history.flat_changed.tolist() == changes
    assert log.history.flat_intervals.tolist() == intervals  # exact: whole seconds / 3600
    assert pd.to_datetime(log.first_visit, utc=True).tolist() == firsts
    assert pd.to_datetime(log.last_visit, utc=True).tolist() == lasts
    got = log.audit.as_dict()
    for key, value in audit.items():
        assert got[key] == value, key
    assert got["rows_read"] == got["visits_kept"] + got["reference_visits"] + got["dropped_total"]


@pytest.fixture
def buckets(monkeypatch):
    """Set the rows per bucket of the readers."""

    def set_rows(rows):
        monkeypatch.setattr(_buckets, "BUCKET_ROWS", rows)

    return set_rows


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 120),
    n_pages=st.integers(1, 9),
    hours=st.integers(2, 40),
    bucket_rows=st.integers(1, 60),
    chunk_rows=st.integers(7, 60),
)
def test_bucketed_reader_follows_the_rules(tmp_path_factory, buckets, seed, n, n_pages, hours, bucket_rows, chunk_rows):
    """Any split of the pages into buckets and of the rows into chunks: the rules' history and audit."""
    df = _random_log(np.random.default_rng(seed), n, n_pages, hours)
    path = tmp_path_factory.mktemp("log") / "log.csv"
    df.to_csv(path, index=False)
    buckets(bucket_rows)  # CSV: ~40 bytes a row estimated from the file size, so 1 to ~100 buckets
    if not _reference(df)[0]:
        with pytest.raises(CrawlLogError, match="no page has two usable visits"):
            read_csv(path, chunk_rows=chunk_rows)
        return
    _check_against_reference(read_csv(path, chunk_rows=chunk_rows), df)


def test_a_page_split_across_chunks_lands_in_one_bucket(tmp_path, buckets):
    """Rows of one page in many chunks, many buckets: the same log as one chunk and one bucket."""
    rng = np.random.default_rng(3)
    df = _random_log(rng, 2000, 30, 500)
    path = tmp_path / "log.csv.gz"
    df.to_csv(path, index=False)
    buckets(10**9)
    whole = read_csv(path, chunk_rows=10**6)
    buckets(100)
    split = read_csv(path, chunk_rows=37)
    assert whole.audit == split.audit and whole.audit.out_of_order > 0
    for name in ("page_ids", "flat_changed", "flat_intervals", "lengths", "crawl_rate"):
        np.testing.assert_array_equal(getattr(whole.history, name), getattr(split.history, name))
    np.testing.assert_array_equal(whole.first_visit, split.first_visit)
    np.testing.assert_array_equal(whole.last_visit, split.last_visit)
    _check_against_reference(split, df)


def test_page_buckets_spill_keeps_file_order(tmp_path):
    """Rows spilled to disk and rows held in memory come back per bucket in file order."""
    from changerate_bayes.io._semantics import VisitColumns

    rng = np.random.default_rng(0)
    n = 1000
    page = rng.integers(0, 50, n)
    time = np.arange(n, dtype=np.int64)
    parts = [
        VisitColumns(
            page[i : i + 64],
            time[i : i + 64],
            None,
            np.zeros(len(time[i : i + 64]), bool),
            None,
            None,
            None,
            None,
            np.zeros(len(time[i : i + 64]), bool),
        )
        for i in range(0, n, 64)
    ]
    with _buckets.PageBuckets(7, memory_bytes=3000, folder=tmp_path) as store:
        for p in parts:
            store.add(p)
        assert store.spilled_bytes > 0 and store.rows == n
        for b in range(7):
            v = store.bucket(b)
            expect = np.flatnonzero(page % 7 == b)
            np.testing.assert_array_equal(v.time, time[expect])
            np.testing.assert_array_equal(v.page, page[expect])
    assert list(tmp_path.iterdir()) == []  # the files are removed


def _tables_equal(a, b):
    assert list(a.columns) == list(b.columns)
    assert a["page"].tolist() == b["page"].tolist()
    for c in a.columns:
        if c != "page":
            np.testing.assert_array_equal(a[c].to_numpy(), b[c].to_numpy(), err_msg=c)


@pytest.mark.slow
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), bucket_rows=st.integers(40, 200), spill=st.booleans())
def test_estimate_log_equals_estimate_pages_of_the_whole_log(tmp_path_factory, buckets, seed, bucket_rows, spill):
    df = _random_log(np.random.default_rng(seed), 400, 12, 300)
    folder = tmp_path_factory.mktemp("est")
    path = folder / "log.parquet"
    df.to_parquet(path, index=False)
    buckets(10**9)
    try:
        expect = estimate_pages(read_log(path), budget=10.0, methods=["naive", "mm"])
    except CrawlLogError:
        with pytest.raises(CrawlLogError, match="no page has two usable visits"):
            estimate_log(path, budget=10.0, bucket_rows=bucket_rows)
        return
    spill_dir = folder / "spill"
    spill_dir.mkdir()
    res = estimate_log(
        path,
        budget=10.0,
        methods=["naive", "mm"],
        bucket_rows=bucket_rows,
        memory_bytes=0 if spill else math.inf,
        folder=spill_dir,
        chunk_rows=53,
    )
    _tables_equal(expect, res.table)
    assert res.audit == read_log(path).audit
    assert res.n_buckets == math.ceil(400 / bucket_rows)
    assert (res.spilled_bytes > 0) == spill and list(spill_dir.iterdir()) == []


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::changerate_bayes._validation.StatisticalWarning")
def test_estimate_log_on_the_shipped_crawl_log(buckets):
    """Open Terms Archive's dating crawls (3·10^5 rows) in buckets, spilled: the whole log's table."""
    path = OTA / "crawls_dating.csv.gz"
    columns = {"changed": "changed_filtered"}
    buckets(10**9)
    log = read_log(path, format="csv", columns=columns, change_from="changed")
    expect = estimate_pages(log)
    res = estimate_log(
        path, format="csv", columns=columns, change_from="changed", bucket_rows=10_000, memory_bytes=2**20
    )
    assert res.n_buckets > 1 and res.spilled_bytes > 0
    _tables_equal(expect, res.table)
    assert res.audit == log.audit
    a = res.audit
    assert a.rows_read == a.visits_kept + a.reference_visits + a.dropped_total


def test_parquet_dictionary_columns_read_like_csv(tmp_path, buckets):
    """String page/digest columns read as dictionaries: blanks, '-' and spaces mean what they mean in CSV."""
    df = _random_log(np.random.default_rng(8), 300, 6, 100)
    df.loc[::7, "digest"] = " b"
    csv, pq = tmp_path / "log.csv", tmp_path / "log.parquet"
    df.to_csv(csv, index=False)
    df.astype({"status": "string"}).to_parquet(pq, index=False)
    buckets(50)
    a, b = read_csv(csv), read_parquet(pq)
    assert a.audit.as_dict() | {"sources": None} == b.audit.as_dict() | {"sources": None}
    np.testing.assert_array_equal(a.history.flat_changed, b.history.flat_changed)
    np.testing.assert_array_equal(a.history.page_ids, b.history.page_ids)
    _check_against_reference(b, df)


# ----------------------------------------------------------------------------- bad input
def test_estimate_log_names_file_line_and_column(tmp_path):
    text = "page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,2024-01-02T00:00Z,y\nb,yesterday,x\n"
    path = tmp_path / "log.csv"
    path.write_text(text)
    spill = tmp_path / "spill"
    spill.mkdir()
    with pytest.raises(CrawlLogError, match=r"log\.csv: line 4, column 'fetch_time': unparsable time 'yesterday'"):
        estimate_log(path, memory_bytes=0, folder=spill)
    assert list(spill.iterdir()) == []


def test_blank_page_in_a_parquet_dictionary_names_the_row(tmp_path):
    df = pd.DataFrame(
        {"page": ["a", "a", "  ", "a"], "fetch_time": ["2024-01-01T00:00Z"] * 4, "digest": ["x", "y", "x", "x"]}
    )
    path = tmp_path / "log.parquet"
    df.to_parquet(path, index=False)
    with pytest.raises(CrawlLogError, match=r"log\.parquet: row 3, column 'page': missing page"):
        estimate_log(path)


def test_estimate_log_refuses_bad_arguments(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,2024-01-02T00:00Z,y\n")
    with pytest.raises(ValueError, match="`bucket_rows` must be >= 1; got 0"):
        estimate_log(path, bucket_rows=0)
    with pytest.raises(ValueError, match="`methods` must be among"):
        estimate_log(path, methods=["nope"])
    with pytest.raises(ValueError, match="`memory_bytes` must be a number >= 0; got -1"):
        estimate_log(path, memory_bytes=-1)
    with pytest.raises(CrawlLogError, match="unknown format 'xml'"):
        estimate_log(path, format="xml")
