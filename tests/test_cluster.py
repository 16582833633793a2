"""The Dask engine against the pandas engine, on a local cluster of two worker processes."""

import numpy as np
import pandas as pd
import pytest
from _helpers import assert_same_page_table, dask_flags, dask_frame_estimates, local_dask_client

from changerate_bayes import StatisticalWarning, estimate_pages
from changerate_bayes.crawllog import estimate
from changerate_bayes.estimators import METHODS
from changerate_bayes.io import read_csv

# one pytest-xdist worker for the whole group (see tests/conftest.py)
pytestmark = pytest.mark.xdist_group("dask_cluster")

# dask and distributed are imported by the tests that use them, not at collection: the
# other pytest-xdist worker, which runs none of these tests, does not pay their import.


@pytest.fixture(scope="module")
def client():
    with local_dask_client(processes=True) as c:
        yield c


def _synthetic_log(tmp_path, n=6000, pages=120, seed=3):
    rng = np.random.default_rng(seed)
    page = rng.integers(0, pages, n)
    start = pd.Timestamp("2024-01-01", tz="UTC")
    t = start + pd.to_timedelta(rng.integers(0, 90 * 24 * 60, n), "min")
    digest = (rng.random(n) < 0.2).cumsum() % 7
    status = rng.choice([200, 200, 200, 200, 304, 404, 503], n)
    df = pd.DataFrame(
        {
            "url": "p" + pd.Series(page).astype(str),
            "when": t.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "status": status,
            "sha": digest.astype(str),
        }
    )
    df.loc[rng.random(n) < 0.02, "sha"] = ""
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_dask_equals_pandas(tmp_path, client):
    import dask.dataframe as dd

    path = _synthetic_log(tmp_path)
    cols = {"page": "url", "fetch_time": "when", "digest": "sha"}
    log = read_csv(path, columns=cols, chunk_rows=4096)
    with pytest.warns(StatisticalWarning, match="'regular' assumes crawls on a fixed schedule"):
        expect = estimate_pages(log, methods=METHODS, budget=50.0)  # the synthetic crawls are Poisson, not regular
    ddf = dd.read_csv(path, dtype=str, keep_default_na=False, blocksize=40_000)
    assert ddf.npartitions > 1
    got = dask_frame_estimates(ddf, columns=cols, methods=METHODS, budget=50.0, npartitions=4, source=str(path))
    assert got.n_partitions == 4
    assert got.audit.rows_read == log.audit.rows_read
    assert got.audit.dropped == log.audit.dropped and got.audit.out_of_order == log.audit.out_of_order
    assert got.audit.visits_kept == log.audit.visits_kept and got.audit.pages_kept == log.audit.pages_kept
    assert_same_page_table(got.table, expect)


def test_dask_error_names_the_log_row(tmp_path, client):
    import dask.dataframe as dd

    from changerate_bayes.io import CrawlLogError

    df = pd.DataFrame(
        {
            "page": ["a", "b", "a", "b"],
            "fetch_time": ["2024-01-01T00:00Z", "2024-01-01T00:00Z", "2024-01-01T01:00Z", "later"],
            "digest": ["x", "y", "z", "w"],
        }
    )
    ddf = dd.from_pandas(df, npartitions=2)
    with pytest.raises(CrawlLogError, match=r"log: row 4, column 'fetch_time': unparsable time 'later'"):
        dask_frame_estimates(ddf, source="log")
    with pytest.raises(CrawlLogError, match="missing required column 'page'"):
        dask_frame_estimates(ddf.rename(columns={"page": "p"}), source="log")


@pytest.mark.slow
def test_estimate_command_dask_engine_equals_pandas(tmp_path, client, capsys):
    from changerate_bayes.cli import main

    path = _synthetic_log(tmp_path, n=3000, pages=60, seed=9)
    text = path.read_text().replace("url,when,status,sha", "page,fetch_time,status,digest")
    path.write_text(text)
    a, b = tmp_path / "pandas.parquet", tmp_path / "dask.parquet"
    assert main(["estimate", str(path), "--methods", "lln", "mle", "--out", str(a)]) == 0
    pandas_audit = capsys.readouterr().out.split("wrote")[0]
    assert main(["estimate", str(path), "--methods", "lln", "mle", "--out", str(b), *dask_flags(client)]) == 0
    dask_audit = capsys.readouterr().out.split("wrote")[0]
    assert dask_audit == pandas_audit
    ta, tb = pd.read_parquet(a), pd.read_parquet(b)
    assert ta["page"].tolist() == tb["page"].tolist()
    assert tb["rate_method"].tolist() == ta["rate_method"].tolist()
    assert tb["rate_bound"].tolist() == ta["rate_bound"].tolist()
    num = [c for c in ta.columns if c not in ("page", "first_visit", "last_visit", "rate_method", "rate_bound")]
    np.testing.assert_allclose(tb[num].to_numpy(float), ta[num].to_numpy(float), rtol=1e-12, atol=0)


def _two_point_logs(folder, n_files=6, pages=5, visits=30, seed=11):
    """Logs whose crawl intervals alternate 1 h and 47 h: every file's pages fail the Poisson-crawl and
    the regular-crawl checks."""
    rng = np.random.default_rng(seed)
    paths = []
    for f in range(n_files):
        rows = []
        for p in range(pages):
            t = pd.Timestamp("2024-01-01", tz="UTC") + pd.Timedelta(hours=int(rng.integers(0, 24)))
            for k in range(visits):
                t += pd.Timedelta(hours=1 if k % 2 else 47)
                rows.append((f"f{f}p{p}", t.strftime("%Y-%m-%dT%H:%M:%SZ"), int(rng.random() < 0.4)))
        path = folder / f"log{f}.csv"
        pd.DataFrame(rows, columns=["page", "fetch_time", "changed"]).to_csv(path, index=False)
        paths.append(path)
    return paths


def _kinds(messages):
    """Each note with its numbers (and the Dask engine's count of parts) blanked: which check said what."""
    import re

    return sorted(re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "#", m.split(" (this check ran on each")[0]) for m in messages)


@pytest.mark.slow
def test_notes_come_once_each_from_workers_with_several_threads(tmp_path):
    import warnings

    import distributed

    from changerate_bayes.io import read_log

    paths = _two_point_logs(tmp_path)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        expect = estimate_pages(read_log(paths), methods=METHODS)
    pandas_notes = [str(x.message) for x in w if x.category is StatisticalWarning]
    assert len(pandas_notes) == 2 and _kinds(pandas_notes) == _kinds(expect.attrs["warnings"])
    # threads of one process: the tasks' estimators warn at the same time
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=4, processes=False, dashboard_address=None) as cl,
        distributed.Client(cl) as c,
    ):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got = estimate(paths, engine="dask", methods=METHODS, client=c)
    dask_notes = [str(x.message) for x in w if x.category is StatisticalWarning]
    assert _kinds(dask_notes) == _kinds(got.table.attrs["warnings"]) == _kinds(pandas_notes)


def test_dask_engine_reads_one_file_with_the_change_rule_given(tmp_path, client):
    """One CSV file read as a Dask frame follows ``change_from`` as the pandas engine does: here
    the ``changed`` flags (every visit a change), not the digest (never a change)."""
    n = 40
    df = pd.DataFrame(
        {
            "page": ["a", "b"] * (n // 2),
            "fetch_time": pd.date_range("2024-01-01", periods=n, freq="6h", tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ"),
            "changed": 1,
            "digest": "same",
        }
    )
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    for rule, changes in (("changed", n // 2 - 1), ("digest", 0)):
        want = estimate(path, engine="pandas", change_from=rule).table
        got = estimate(path, engine="dask", change_from=rule, client=client).table
        assert want["n_changes"].tolist() == [changes, changes]
        assert got.sort_values("page")["n_changes"].tolist() == want.sort_values("page")["n_changes"].tolist()
