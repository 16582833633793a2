"""Which column decides a change, and which visits count: hand-derived histories on every engine.

- Last-Modified dates that say "changed" where the digest shows the same content make
  the page unreliable whatever decides changes ("auto" or ``change_from="last_modified"``);
- a ``changed`` column mapped in ``columns`` decides (and is checked) beside a digest;
- a ``changed`` left empty on a page's first visit (the reference copy) loses no visit;
- a log with Last-Modified dates and no usable row has nothing to estimate (a clean error).
"""

import numpy as np
import pandas as pd
import pytest
from _io_engines import assert_engines_agree, dask_client_fixture, engines  # noqa: F401 (the fixture `client`)

from changerate_bayes.io import CrawlLogError, read_csv, read_frame, read_parquet

# one pytest-xdist worker for the Dask tests (see tests/conftest.py)
pytestmark = pytest.mark.xdist_group("dask_cluster")


def _day(d, h=0):
    return f"2024-01-{d:02d}T{h:02d}:00:00Z"


# page "stale": the same content (digest x) on 10 daily visits, while each Last-Modified falls 12 h
# before its visit (after the previous one): the dates say "changed" 9 times, the digest never.
# page "honest": content changes at visits 3 and 6, and its dates say so (between visits 2-3 and 5-6).
# page "once": one wrong date among visits whose dates otherwise agree (1 of 1 saying "changed": too
# little to condemn it).
def _stale_log():
    rows = ["page,fetch_time,digest,last_modified"]
    for d in range(1, 11):
        rows.append(f"stale,{_day(d)},x,{_day(d - 1, 12) if d > 1 else '2023-12-01T00:00:00Z'}")
        digest = "a" if d < 3 else "b" if d < 6 else "c"
        lm = "2023-12-01T00:00:00Z" if d < 3 else _day(2, 12) if d < 6 else _day(5, 12)
        rows.append(f"honest,{_day(d)},{digest},{lm}")
        rows.append(f"once,{_day(d)},z,{_day(4, 12) if d >= 5 else '2023-12-01T00:00:00Z'}")
    return "\n".join(rows) + "\n"


def test_dates_that_contradict_the_digest_are_set_aside_under_last_modified_as_under_auto():
    frame = pd.read_csv(pd.io.common.StringIO(_stale_log()), dtype=str)
    auto = read_frame(frame)
    by_dates = read_frame(frame, change_from="last_modified")
    for log in (auto, by_dates):
        h = log.history
        assert h.page_ids.tolist() == ["stale", "honest", "once"]
        changed = np.split(h.flat_changed, np.cumsum(h.lengths)[:-1])
        assert changed[0].tolist() == [0] * 9  # decided by the digest: the same content throughout
        assert changed[1].tolist() == [0, 1, 0, 0, 1, 0, 0, 0, 0]
        assert log.last_modified_unreliable.tolist() == [True, False, False]
        assert log.audit.last_modified_unreliable_pages == 1
    # "once": the digest decides under auto (no change), its dates under last_modified (one change,
    # at visit 5, which the dates date to day 4 12:00)
    assert np.split(auto.history.flat_changed, 3)[2].sum() == 0
    assert np.split(by_dates.history.flat_changed, 3)[2].tolist() == [0, 0, 0, 1, 0, 0, 0, 0, 0]
    assert by_dates.audit.last_modified_fallback == "digest"


def test_dates_that_contradict_the_digest_on_every_engine(tmp_path, client):
    out = engines(tmp_path, _stale_log(), change_from="last_modified", client=client)
    table, _ = out["frame"]
    assert table["n_changes"].tolist() == [0, 2, 1]
    assert_engines_agree(out)


_FLAGGED = (
    "page,fetch_time,digest,flag\n"
    "a,2024-01-01T00:00:00Z,x,0\na,2024-01-02T00:00:00Z,y,0\na,2024-01-03T00:00:00Z,y,1\n"
    "a,2024-01-04T00:00:00Z,z,1\nb,2024-01-01T00:00:00Z,x,0\nb,2024-01-03T00:00:00Z,x,1\n"
)


def test_a_mapped_changed_column_decides_beside_a_digest(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(_FLAGGED)
    log = read_csv(path, columns={"changed": "flag"})
    assert log.audit.change_source == "changed"
    assert log.history.flat_changed.tolist() == [0, 1, 1, 1]  # the flag's, not the digest's [1, 0, 1, 0]
    assert read_csv(path).history.flat_changed.tolist() == [1, 0, 1, 0]  # unmapped: the digest decides


def test_a_mapped_changed_column_is_checked_even_when_a_mapped_digest_decides(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(_FLAGGED.replace("a,2024-01-03T00:00:00Z,y,1", "a,2024-01-03T00:00:00Z,y,yes"))
    with pytest.raises(
        CrawlLogError,
        match=r"log\.csv: line 4, column 'flag': expected 0 or 1 \(or true/false\); "
        r"got 'yes'",
    ):
        read_csv(path, columns={"changed": "flag"})
    with pytest.raises(CrawlLogError, match=r"log\.csv: line 4, column 'flag': expected 0 or 1"):
        read_csv(path, columns={"changed": "flag", "digest": "digest"})
    frame = pd.read_csv(path, dtype=str)
    with pytest.raises(CrawlLogError, match=r"<dataframe>: row 3, column 'flag': expected 0 or 1"):
        read_frame(frame, columns={"changed": "flag"})


def test_a_mapped_changed_column_on_every_engine(tmp_path, client):
    out = engines(tmp_path, _FLAGGED, columns={"changed": "flag"}, client=client)
    assert out["frame"][0]["n_changes"].tolist() == [2, 1]
    assert_engines_agree(out)
    bad = _FLAGGED.replace("b,2024-01-03T00:00:00Z,x,1", "b,2024-01-03T00:00:00Z,x,no")
    out = engines(tmp_path, bad, columns={"changed": "flag"}, client=client)
    assert "row 6, column 'flag': expected 0 or 1 (or true/false); got 'no'" in str(out["frame"])
    assert_engines_agree(out)


# each page's first visit has no "changed"; rows out of time order: the earliest is the reference
_FIRST_EMPTY = (
    "page,fetch_time,changed\n"
    "a,2024-01-01T00:00:00Z,\na,2024-01-02T00:00:00Z,1\na,2024-01-03T00:00:00Z,0\n"
    "b,2024-01-03T00:00:00Z,1\nb,2024-01-01T00:00:00Z,\nb,2024-01-02T00:00:00Z,0\n"
    "c,2024-01-01T00:00:00Z,0\nc,2024-01-02T00:00:00Z,\nc,2024-01-03T00:00:00Z,1\n"
)


def test_an_empty_changed_on_the_first_visit_is_the_reference(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(_FIRST_EMPTY)
    log = read_csv(path)
    h = log.history
    assert h.lengths.tolist() == [2, 2, 1]  # c's empty "changed" is on a later visit: that visit is dropped
    assert h.flat_changed.tolist() == [1, 0, 0, 1, 1]
    assert h.flat_intervals.tolist() == [24.0, 24.0, 24.0, 24.0, 48.0]
    assert log.audit.dropped_by("missing_changed") == 1
    assert log.audit.reference_visits == 3


@pytest.mark.parametrize("arrow_type", ["bool_", "int8", "float64"])
def test_a_null_changed_on_the_first_visit_of_a_parquet_log(tmp_path, arrow_type):
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = pd.read_csv(pd.io.common.StringIO(_FIRST_EMPTY), dtype=str, keep_default_na=False)
    values = [None if v == "" else int(v) for v in frame["changed"]]
    if arrow_type == "bool_":
        values = [None if v is None else bool(v) for v in values]
    table = pa.table(
        {
            "page": frame["page"],
            "fetch_time": pd.to_datetime(frame["fetch_time"]),
            "changed": pa.array(values, type=getattr(pa, arrow_type)()),
        }
    )
    path = tmp_path / "log.parquet"
    pq.write_table(table, path)
    log = read_parquet(path)
    assert log.history.lengths.tolist() == [2, 2, 1]
    assert log.history.flat_changed.tolist() == [1, 0, 0, 1, 1]
    assert log.audit.dropped_by("missing_changed") == 1


def test_an_empty_changed_on_the_first_visit_on_every_engine(tmp_path, client):
    out = engines(tmp_path, _FIRST_EMPTY, client=client)
    assert out["frame"][0]["n_crawls"].tolist() == [2, 2, 1]
    assert_engines_agree(out)


_NOW = "page,fetch_time,last_modified\n" + "".join(f"{p},{_day(d)},{_day(d)}\n" for p in "ab" for d in (1, 2, 3, 4))
_ALL_404 = "page,fetch_time,status,last_modified\n" + "".join(
    f"{p},{_day(d)},404,2023-12-01T00:00:00Z\n" for p in "ab" for d in (1, 2, 3)
)


@pytest.mark.parametrize("text", [_NOW, _ALL_404], ids=["last_modified_is_fetch_time", "all_404"])
def test_no_usable_row_with_last_modified_is_nothing_to_estimate(tmp_path, text):
    path = tmp_path / "log.csv"
    path.write_text(text)
    with pytest.raises(CrawlLogError, match="no page has two usable visits, so there is nothing to estimate"):
        read_csv(path)
    with pytest.raises(CrawlLogError, match="no page has two usable visits, so there is nothing to estimate"):
        read_frame(pd.read_csv(path, dtype=str))
    if text is _ALL_404:  # the same log without its dates: the same error
        no_dates = pd.read_csv(path, dtype=str).drop(columns="last_modified").assign(changed="0")
        with pytest.raises(CrawlLogError, match="no page has two usable visits, so there is nothing to estimate"):
            read_frame(no_dates)


@pytest.mark.parametrize("text", [_NOW, _ALL_404], ids=["last_modified_is_fetch_time", "all_404"])
def test_no_usable_row_with_last_modified_on_every_engine(tmp_path, text, client):
    out = engines(tmp_path, text, client=client)
    assert "nothing to estimate" in str(out["frame"])
    assert_engines_agree(out)
