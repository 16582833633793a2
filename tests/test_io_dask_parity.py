"""The Dask engine against the pandas engine on every reader case, bad input included.

Each log is read by the pandas engine (``read_frame`` of the whole table, then
``estimate_pages``) and by the Dask engine (``crawllog.estimate(..., engine="dask")``) over several partitions (the
synchronous scheduler: the same code a cluster runs, in this process). Both give the
same table, or the same error class and message.
"""

import warnings

import pandas as pd
import pytest
from _helpers import assert_same_page_table, daily_log, dask_frame_estimates

from changerate_bayes import StatisticalWarning, estimate_pages
from changerate_bayes.io import read_frame

H = "page,fetch_time,digest\n"


def _rows(page, times, digests, tz="Z"):
    return "".join(f"{page},2024-01-{d:02d}T{h:02d}:00{tz},{x}\n" for (d, h), x in zip(times, digests, strict=True))


_T = [(1, 0), (1, 6), (2, 0), (2, 12), (3, 0), (4, 0)]
_PAGES = [f"p{i}" for i in range(4)]


def _three_of_each(header, visits):
    """A log of three pages of each kind (names ``kind0`` to ``kind2``) visited at midnight UTC of
    2024-01-01 to 2024-01-05: ``visits(day)`` gives the rows ``(kind, field, ...)`` of that day."""
    return header + "".join(
        f"{kind}{i},2024-01-0{d}T00:00:00Z,{','.join(map(str, fields))}\n"
        for i in range(3)
        for d in range(1, 6)
        for kind, *fields in visits(d)
    )


_MANY = H + "".join(_rows(f"p{i}", _T, "xxyyzz"[i % 3 :] + "abcdef"[: i % 3]) for i in range(8))

CASES = {
    # good logs
    "digest": _MANY,
    "status_304_404_301": daily_log(
        "page,fetch_time,status,digest\n",
        [(1, "200", "a"), (2, "304", ""), (3, "404", "b"), (4, "301", "r"), (5, "200", "c"), (6, "200", "c")],
        _PAGES,
    ),
    "not_modified_strings": daily_log(
        "page,fetch_time,status,digest,not_modified\n",
        [(1, 200, "a", "0"), (2, 200, "b", "False"), (3, 200, "b", "true"), (4, 200, "c", "1")]
        + [(5, 200, "d", "no"), (6, 200, "d", "")],
        _PAGES,
    ),
    "changed": daily_log("page,fetch_time,changed\n", [(1, 0), (2, 1), (3, ""), (4, 0), (5, 1)], _PAGES),
    "last_modified": daily_log(
        "page,fetch_time,last_modified\n",
        [(1, "2023-12-01T00:00Z"), (2, "2024-01-01T12:00Z"), (3, ""), (4, "2024-01-05T00:00Z")],
        _PAGES,
    ),
    # servers that report the fetch time as Last-Modified (at it, 5 s either side, in the future) beside
    # honest ones; a pair of "now" visits is too little evidence to condemn a page
    "last_modified_liars": _three_of_each(
        "page,fetch_time,last_modified\n",
        lambda d: (
            [
                ("now", f"2024-01-0{d}T00:00:00Z"),
                ("ahead", f"2024-01-0{d}T00:00:05Z"),
                ("behind", f"2024-01-0{d - 1}T23:59:55Z" if d > 1 else "2023-12-31T23:59:55Z"),
                ("future", f"2024-02-0{d}T00:00:00Z"),
                ("honest", "2023-12-01T00:00:00Z" if d < 3 else "2024-01-02T12:00:00Z"),
                ("oneHonest", "2023-12-01T00:00:00Z" if d == 3 else f"2024-01-0{d}T00:00:00Z"),
            ]
            + [("pair", "2023-12-31T23:59:59Z" if d == 1 else "2024-01-01T23:59:59Z")] * (d <= 2)
        ),
    ),
    "digest_with_last_modified_liars": _three_of_each(
        "page,fetch_time,digest,last_modified\n",
        lambda d: [
            ("now", "ab"[d > 3], f"2024-01-0{d}T00:00:00Z"),
            ("honest", "ab"[d > 3], "2023-12-01T00:00:00Z" if d < 4 else "2024-01-03T12:00:00Z"),
        ],
    ),
    # asked for last_modified: the digests decide for the pages whose server says "now"
    "last_modified_liars_with_digests": _three_of_each(
        "page,fetch_time,digest,status,last_modified\n",
        lambda d: [
            (p, x, 200 if x else 304, lm)
            for p, x, lm in [
                ("now", "aa-bb"[d - 1].strip("-"), f"2024-01-0{d}T00:00:00Z"),
                ("honest", "pqrst"[d - 1], "2023-12-01T00:00:00Z" if d < 3 else "2024-01-02T12:00:00Z"),
            ]
        ],
    ),
    "unsorted_and_duplicates": H
    + "".join(
        f"p{i},{t},{x}\n"
        for i in range(4)
        for t, x in [
            ("2024-01-03T00:00Z", "b"),
            ("2024-01-01T00:00Z", "a"),
            ("2024-01-03T00:00Z", "c"),
            ("2024-01-04T00:00Z", "c"),
            ("2024-01-02T00:00Z", "a"),
        ]
    ),
    "naive_times": H + "".join(_rows(f"p{i}", _T, "aabbcc", tz="") for i in range(4)),
    "date_only_times": H
    + "".join(f"p{i},2024-01-0{d},{x}\n" for i in range(4) for d, x in [(1, "a"), (2, "a"), (3, "b"), (5, "b")]),
    "byte_order_mark": "\ufeff" + _MANY,
    # bad logs
    "mixed_aware_naive_across_pages": H
    + _rows("a", _T, "aabbcc")
    + _rows("b", _T, "aabbcc", tz="")
    + _rows("c", _T, "aabbcc")
    + _rows("d", _T, "aabbcc", tz=""),
    "mixed_naive_first": H + _rows("a", _T, "aabbcc", tz="") + _rows("b", _T, "aabbcc") + _rows("c", _T, "aabbcc"),
    "naive_last_modified_aware_fetch": daily_log(
        "page,fetch_time,last_modified\n",
        lambda i: (
            [(1, "2023-12-01T00:00Z"), (2, "2024-01-01T12:00Z" if i < 3 else "2024-01-01T12:00")]
            + [(3, "2024-01-02T12:00Z")]
        ),
        _PAGES,
    ),
    "year_typo": _MANY.replace("2024-01-02T12:00Z,", "2924-01-02T12:00Z,", 1),
    "unparsable_time": _MANY.replace("p5,2024-01-03T00:00Z", "p5,soon", 1),
    "missing_page": _MANY.replace("p6,", ",", 1),
    "bad_not_modified": daily_log(
        "page,fetch_time,digest,not_modified\n",
        lambda i: [(1, "a", "0"), (2, "b", "maybe" if i == 2 else "0"), (3, "b", "1")],
        _PAGES,
    ),
    "bad_status": daily_log(
        "page,fetch_time,status,digest\n",
        lambda i: [(d, "OK" if (i, d) == (3, 2) else 200, d) for d in (1, 2, 3)],
        _PAGES,
    ),
    "changed_not_0_1": daily_log(
        "page,fetch_time,changed\n", lambda i: [(d, 2 if (i, d) == (1, 3) else 1) for d in (1, 2, 3)], _PAGES
    ),
    "single_visits_only": H + "".join(f"p{i},2024-01-01T00:00Z,a\n" for i in range(6)),
    "header_only": H,
    "column_with_two_roles": "page,fetch_time,digest\n" + _MANY.split("\n", 1)[1],
}
COLUMNS = {"column_with_two_roles": {"page": "digest"}}
CHANGE_FROM = {"last_modified_liars_with_digests": "last_modified"}
BAD = list(CASES)[list(CASES).index("mixed_aware_naive_across_pages") :]


def _pandas(path, columns, change_from="auto"):
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    try:
        log = read_frame(frame, columns=columns, change_from=change_from, source="log")
        return estimate_pages(log, methods=("lln", "mle")), log.audit
    except ValueError as exc:
        return exc


def _dask(path, columns, change_from="auto"):
    import dask
    import dask.dataframe as dd

    ddf = dd.read_csv(path, dtype=str, keep_default_na=False, blocksize=150)
    try:
        with dask.config.set(scheduler="synchronous"):
            res = dask_frame_estimates(
                ddf, columns=columns, change_from=change_from, methods=("lln", "mle"), npartitions=3, source="log"
            )
            return (res.table, res.audit), ddf.npartitions
    except ValueError as exc:
        return exc, ddf.npartitions


@pytest.mark.parametrize("case", list(CASES))
def test_dask_engine_equals_pandas(tmp_path, case):
    path = tmp_path / "log.csv"
    path.write_text(CASES[case], encoding="utf-8")
    columns = COLUMNS.get(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)  # lln on schedules that are not Poisson
        expect = _pandas(path, columns, CHANGE_FROM.get(case, "auto"))
        got, partitions = _dask(path, columns, CHANGE_FROM.get(case, "auto"))
    assert isinstance(expect, Exception) == (case in BAD), expect
    if len(CASES[case]) > 300:
        assert partitions > 1
    if isinstance(expect, Exception):
        assert type(got) is type(expect), (case, got)
        assert str(got) == str(expect)
        return
    assert not isinstance(got, Exception), (case, got)
    (got, got_audit), (expect, audit) = got, expect
    assert got_audit == audit  # every count, the Last-Modified liars and their dropped rows included
    assert_same_page_table(got, expect)
