"""Log files on the Dask engine (``estimate(..., engine="dask")`` of several files) against the pandas engine, on every reader case.

Each case of ``test_io_dask_parity`` is written as two CSV files, once split by page
(the files partition the pages: one task reads and reduces each file) and once with
the rows dealt alternately (every page in both files: the rows are shuffled). The
pandas engine reads the same files (``read_log`` + ``estimate_pages``); both give the
same table (to 1e-12) and audit, or the same error class and message.
"""

import warnings

import pandas as pd
import pytest
from _helpers import assert_same_page_table, dask_files_estimates, local_dask_client
from test_io_dask_parity import BAD, CASES, COLUMNS

from changerate_bayes import StatisticalWarning, estimate_pages
from changerate_bayes.io import read_log

# one pytest-xdist worker for the Dask tests (see tests/conftest.py)
pytestmark = pytest.mark.xdist_group("dask_cluster")


@pytest.fixture(scope="module")
def client():
    with local_dask_client(processes=False) as c:
        yield c


def _split(tmp_path, text, how):
    """``text`` as two CSV files: rows by page (``how="pages"``) or dealt alternately ("rows")."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    header, *rows = text.lstrip("\ufeff").splitlines(keepends=True)
    if how == "pages":
        pages = list(dict.fromkeys(r.split(",", 1)[0] for r in rows))
        first = set(pages[: (len(pages) + 1) // 2])
        parts = [[r for r in rows if r.split(",", 1)[0] in first], [r for r in rows if r.split(",", 1)[0] not in first]]
    else:
        parts = [rows[0::2], rows[1::2]]
    paths = []
    for i, part in enumerate(parts):
        path = tmp_path / f"log-{i}.csv"
        path.write_text(bom + header + "".join(part), encoding="utf-8")
        paths.append(path)
    return paths


def _run(fn):
    try:
        return fn()
    except ValueError as exc:
        return exc


@pytest.mark.parametrize("how", ["pages", "rows"])
@pytest.mark.parametrize("case", list(CASES))
def test_files_on_dask_equal_pandas(tmp_path, client, case, how):
    files = _split(tmp_path, CASES[case], how)
    columns = COLUMNS.get(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)  # lln on schedules that are not Poisson
        log = _run(lambda: read_log(files, columns=columns))
        expect = log if isinstance(log, Exception) else _run(lambda: estimate_pages(log, methods=("lln", "mle")))
        got = _run(lambda: dask_files_estimates(files, columns=columns, methods=("lln", "mle"), client=client))
    assert isinstance(expect, Exception) == (case in BAD), expect
    if isinstance(expect, Exception):
        assert type(got) is type(expect), (case, got)
        assert str(got) == str(expect)
        return
    assert not isinstance(got, Exception), (case, got)
    pages = [set(pd.read_csv(f, dtype=str, keep_default_na=False, encoding="utf-8-sig")["page"]) for f in files]
    assert got.shuffled == bool(pages[0] & pages[1])  # rows move only when a page is in both files
    assert got.audit == log.audit
    assert_same_page_table(got.table, expect)


@pytest.mark.parametrize("how", ["pages", "rows"])
def test_files_with_different_columns_are_refused_as_pandas_refuses_them(tmp_path, client, how):
    # the second file has no last_modified column: pandas reads the files into one set of columns and
    # refuses them; each file read and reduced by its own task must be refused with the same message
    first = (
        "page,fetch_time,status,digest,last_modified\n"
        "a,2024-01-01T00:00:00Z,200,x,2023-12-01T00:00:00Z\n"
        "a,2024-01-02T00:00:00Z,200,y,2024-01-01T12:00:00Z\n"
        "a,2024-01-03T00:00:00Z,200,y,2024-01-01T12:00:00Z\n"
    )
    second = (
        "page,fetch_time,status,digest\n"
        "b,2024-01-01T00:00:00Z,200,x\nb,2024-01-02T00:00:00Z,200,x\nb,2024-01-03T00:00:00Z,200,z\n"
    )
    if how == "rows":  # page a in both files
        second = second.replace("b,", "a,").replace("2024-01-0", "2024-02-0")
    files = [tmp_path / "log-0.csv", tmp_path / "log-1.csv"]
    files[0].write_text(first)
    files[1].write_text(second)
    with pytest.raises(ValueError) as pandas_error:
        estimate_pages(read_log(files), methods=("mle",))
    with pytest.raises(ValueError) as dask_error:
        dask_files_estimates(files, methods=("mle",), client=client)
    assert "do not all have a 'last_modified' column" in str(pandas_error.value)
    assert type(dask_error.value) is type(pandas_error.value)
    assert str(dask_error.value) == str(pandas_error.value)
