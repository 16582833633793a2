"""Change signals on the Dask engine: the same table, schedule and audit as the pandas engine."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _helpers import assert_same_page_table, local_dask_client
from test_crawllog_signals import _log, _quiet, _write_log

from changerate_bayes.crawllog import SCHEDULE_COLUMNS, SIGNAL_COLUMNS, estimate, schedule

pytestmark = pytest.mark.xdist_group("dask_cluster")


@pytest.fixture(scope="module")
def client():
    with local_dask_client(processes=False) as c:
        yield c


@pytest.fixture(autouse=True)
def _few_draws(monkeypatch):
    import changerate_bayes.crawllog.signal_log as sl

    monkeypatch.setattr(sl, "SIGNAL_DRAWS", {"draws": 60, "tune": 20, "chains": 1})


def _halves(tmp_path, path):
    """The log's rows dealt alternately into two files: every page's rows are shuffled between tasks."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    out = []
    for k in (0, 1):
        p = tmp_path / f"half{k}.csv"
        frame.iloc[k::2].to_csv(p, index=False)
        out.append(p)
    return out


def _same_signal_columns(got, expect):
    assert_same_page_table(got[expect.columns[: -len(SIGNAL_COLUMNS)]], expect[expect.columns[: -len(SIGNAL_COLUMNS)]])
    for c in ("n_signals", "signals_since_last_visit"):
        assert got[c].tolist() == expect[c].tolist()
    num = list(SIGNAL_COLUMNS[2:])
    np.testing.assert_allclose(got[num].to_numpy(float), expect[num].to_numpy(float), rtol=1e-9)


def test_dask_estimate_with_signals_equals_pandas(tmp_path, client):
    import dask.dataframe as dd

    v, s = _log()
    path = _write_log(tmp_path, v, s)
    expect = _quiet(estimate, path, engine="pandas", rng=7)
    halves = _halves(tmp_path, path)
    expect_halves = _quiet(estimate, halves, engine="pandas", rng=7)
    files = _quiet(estimate, halves, engine="dask", client=client, rng=7)  # shuffled between tasks
    _same_signal_columns(files.table, expect_halves.table)
    assert files.signal_audit == expect_halves.signal_audit
    one = _quiet(estimate, path, engine="dask", client=client, rng=7)  # one file, read in blocks
    _same_signal_columns(one.table, expect.table)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    ddf = dd.from_pandas(frame, npartitions=3)
    got = _quiet(estimate, ddf, engine="dask", client=client, rng=7)
    _same_signal_columns(got.table, expect.table)
    assert got.signal_audit.signals_kept == expect.signal_audit.signals_kept


def test_dask_schedule_with_signals_equals_pandas(tmp_path, client):
    v, s = _log()
    path = _write_log(tmp_path, v, s)
    halves = _halves(tmp_path, path)
    expect = _quiet(schedule, halves, engine="pandas", rng=5).schedule
    got = _quiet(schedule, halves, engine="dask", client=client, rng=5).schedule
    assert got["fetch_trigger"].tolist() == expect["fetch_trigger"].tolist()
    assert (got["next_fetch"] - expect["next_fetch"]).abs().max() <= pd.Timedelta(seconds=1)


def test_dask_without_signals_is_unchanged(tmp_path, client):
    v, s = _log()
    path = _write_log(tmp_path, v, s, keep_signals=False)
    res = _quiet(estimate, path, engine="dask", client=client)
    assert res.signal_audit is None and not set(SIGNAL_COLUMNS) & set(res.table.columns)
    sched = _quiet(schedule, path, engine="dask", client=client)
    assert list(sched.schedule.columns) == list(SCHEDULE_COLUMNS) and sched.signal_audit is None
