"""The Dask engine against the pandas engine, on a local cluster of two worker processes."""

import numpy as np
import pandas as pd
import pytest

from changerate_bayes import StatisticalWarning, estimate_pages
from changerate_bayes.io import read_csv

# one pytest-xdist worker for the whole group (see tests/conftest.py)
pytestmark = pytest.mark.xdist_group("dask_cluster")

# dask and distributed are imported by the tests that use them, not at collection: the
# other pytest-xdist worker, which runs none of these tests, does not pay their import.


@pytest.fixture(scope="module")
def client():
    import distributed

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _synthetic_log(tmp_path, n=6000, pages=120, seed=3):
    rng = np.random.default_rng(seed)
    page = rng.integers(0, pages, n)
    start = pd.Timestamp("2024-01-01", tz="UTC")
    t = start + pd.to_timedelta(rng.integers(0, 90 * 24 * 60, n), "min")
    digest = (rng.random(n) < 0.2).cumsum() % 7
    status = rng.choice([200, 200, 200, 200, 304, 404, 503], n)
    df = pd.DataFrame({"url": "p" + pd.Series(page).astype(str), "when": t.strftime("%Y-%m-%dT%H:%M:%SZ"),
                       "status": status, "sha": digest.astype(str)})
    df.loc[rng.random(n) < 0.02, "sha"] = ""
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_dask_equals_pandas(tmp_path, client):
    import dask.dataframe as dd

    from changerate_bayes.cluster import estimate_pages_dask

    path = _synthetic_log(tmp_path)
    cols = {"page": "url", "fetch_time": "when", "digest": "sha"}
    log = read_csv(path, columns=cols, chunk_rows=4096)
    with pytest.warns(StatisticalWarning, match="'regular' assumes crawls on a fixed schedule"):
        expect = estimate_pages(log, budget=50.0)  # the synthetic crawls are Poisson, not regular
    ddf = dd.read_csv(path, dtype=str, keep_default_na=False, blocksize=40_000)
    assert ddf.npartitions > 1
    got = estimate_pages_dask(ddf, columns=cols, budget=50.0, npartitions=4, source=str(path))
    assert got.n_partitions == 4
    assert got.audit.rows_read == log.audit.rows_read
    assert got.audit.dropped == log.audit.dropped and got.audit.out_of_order == log.audit.out_of_order
    assert got.audit.visits_kept == log.audit.visits_kept and got.audit.pages_kept == log.audit.pages_kept
    t = got.table
    assert t["page"].tolist() == expect["page"].tolist()
    for c in ("n_crawls", "n_changes", "first_visit", "last_visit"):
        assert t[c].tolist() == expect[c].tolist(), c
    num = [c for c in expect.columns if c not in ("page", "first_visit", "last_visit")]
    np.testing.assert_allclose(t[num].to_numpy(float), expect[num].to_numpy(float), rtol=1e-12, atol=0)


def test_dask_error_names_the_log_row(tmp_path, client):
    import dask.dataframe as dd

    from changerate_bayes.cluster import estimate_pages_dask
    from changerate_bayes.io import CrawlLogError

    df = pd.DataFrame({"page": ["a", "b", "a", "b"], "fetch_time": ["2024-01-01T00:00Z", "2024-01-01T00:00Z",
                                                                    "2024-01-01T01:00Z", "later"],
                       "digest": ["x", "y", "z", "w"]})
    ddf = dd.from_pandas(df, npartitions=2)
    with pytest.raises(CrawlLogError, match=r"log: row 4, column 'fetch_time': unparsable time 'later'"):
        estimate_pages_dask(ddf, source="log")
    with pytest.raises(CrawlLogError, match="missing required column 'page'"):
        estimate_pages_dask(ddf.rename(columns={"page": "p"}), source="log")


@pytest.mark.slow
def test_estimate_command_dask_engine_equals_pandas(tmp_path, client, capsys):
    from changerate_bayes.cli import main

    path = _synthetic_log(tmp_path, n=3000, pages=60, seed=9)
    text = path.read_text().replace("url,when,status,sha", "page,fetch_time,status,digest")
    path.write_text(text)
    a, b = tmp_path / "pandas.parquet", tmp_path / "dask.parquet"
    assert main(["estimate", str(path), "--methods", "lln", "mle", "--out", str(a)]) == 0
    pandas_audit = capsys.readouterr().out.split("wrote")[0]
    assert main(["estimate", str(path), "--methods", "lln", "mle", "--out", str(b), "--engine", "dask",
                 "--scheduler", client.scheduler.address]) == 0
    dask_audit = capsys.readouterr().out.split("wrote")[0]
    assert dask_audit == pandas_audit
    ta, tb = pd.read_parquet(a), pd.read_parquet(b)
    assert ta["page"].tolist() == tb["page"].tolist()
    num = [c for c in ta.columns if c not in ("page", "first_visit", "last_visit")]
    np.testing.assert_allclose(tb[num].to_numpy(float), ta[num].to_numpy(float), rtol=1e-12, atol=0)
