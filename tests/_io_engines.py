"""One CSV log read by every engine: pandas (frame, files) and Dask (dataframe, files), compared.

The pandas engine reads the log as a frame (``read_frame``) and as a file
(``read_log``); the Dask engine as a dataframe of several partitions
(``estimate(..., engine="dask")`` of a Dask DataFrame) and as two files with the rows dealt alternately, so that
every page's rows are shuffled between tasks (``estimate(..., engine="dask")`` of the files). All four give
the same table and audit, or the same error class and message.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import local_dask_client

from changerate_bayes import StatisticalWarning, estimate_pages
from changerate_bayes.io import read_frame, read_log

METHODS = ("lln", "mle")


@pytest.fixture(scope="module", name="client")
def dask_client_fixture():
    """The fixture ``client``: a distributed.Client on a local cluster of two one-thread workers
    (threads), one per test module that imports ``dask_client_fixture``."""
    with local_dask_client(processes=False) as c:
        yield c


def _outcome(fn):
    try:
        return fn()
    except ValueError as exc:
        return exc


def _table(log):
    return estimate_pages(log, methods=METHODS), log.audit


def engines(tmp_path, text, *, columns=None, change_from="auto", client=None):
    """{engine name: (table, audit) or the ValueError raised} for the CSV log ``text``."""
    import dask
    import dask.dataframe as dd
    from _helpers import dask_frame_estimates

    from changerate_bayes.crawllog import estimate

    path = tmp_path / "log.csv"
    path.write_text(text, encoding="utf-8")
    header, *rows = text.splitlines(keepends=True)
    halves = [tmp_path / "log-0.csv", tmp_path / "log-1.csv"]
    for half, part in zip(halves, (rows[0::2], rows[1::2])):
        half.write_text(header + "".join(part), encoding="utf-8")
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)  # lln on schedules that are not Poisson
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        out["frame"] = _outcome(
            lambda: _table(read_frame(frame, columns=columns, change_from=change_from, source="log"))
        )
        out["file"] = _outcome(lambda: _table(read_log(path, columns=columns, change_from=change_from)))
        ddf = dd.read_csv(path, dtype=str, keep_default_na=False, blocksize=max(64, len(text) // 3))
        with dask.config.set({"scheduler": "synchronous", "dataframe.shuffle.method": "tasks"}):
            res = _outcome(
                lambda: dask_frame_estimates(
                    ddf, columns=columns, change_from=change_from, methods=METHODS, npartitions=3, source="log"
                )
            )
        out["dask_frame"] = res if isinstance(res, Exception) else (res.table, res.audit)
        if client is not None:
            pandas_halves = _outcome(lambda: _table(read_log(halves, columns=columns, change_from=change_from)))
            res = _outcome(
                lambda: estimate(
                    halves, engine="dask", columns=columns, change_from=change_from, methods=METHODS, client=client
                )
            )
            out["files"] = pandas_halves
            out["dask_files"] = res if isinstance(res, Exception) else (res.table, res.audit)
    return out


def assert_same(expect, got):
    """Two engines' outcomes agree: the same error, or the same table (to 1e-12) and audit counts."""
    if isinstance(expect, Exception):
        assert type(got) is type(expect), got
        assert str(got) == str(expect)
        return
    assert not isinstance(got, Exception), got
    (table, audit), (want, want_audit) = got, expect
    assert audit.dropped == want_audit.dropped
    assert audit.visits_kept == want_audit.visits_kept
    assert audit.last_modified_unreliable_pages == want_audit.last_modified_unreliable_pages
    assert audit.change_source == want_audit.change_source
    assert table["page"].tolist() == want["page"].tolist()
    for c in ("n_crawls", "n_changes", "first_visit", "last_visit", "rate_bound"):
        assert table[c].tolist() == want[c].tolist(), c
    num = [c for c in want.columns if c not in ("page", "first_visit", "last_visit", "rate_method", "rate_bound")]
    np.testing.assert_allclose(table[num].to_numpy(float), want[num].to_numpy(float), rtol=1e-12, atol=0)


def assert_engines_agree(outcomes):
    """The Dask dataframe engine as pandas' ``read_frame``; the Dask files engine as pandas reading the
    same two files; pandas reading the file as reading the frame (the same class of error: a file's
    message names the file and its line)."""
    assert_same(outcomes["frame"], outcomes["dask_frame"])
    if isinstance(outcomes["frame"], Exception):  # the file engine names the file and its line instead
        assert type(outcomes["file"]) is type(outcomes["frame"]), outcomes["file"]
    else:
        assert_same(outcomes["frame"], outcomes["file"])
    if "dask_files" in outcomes:
        assert_same(outcomes["files"], outcomes["dask_files"])
