"""The shipped Open Terms Archive crawl observations through read_ota."""

import numpy as np
import pandas as pd
import pytest

from changerate_bayes.datasets import dataset_path
from changerate_bayes.io import read_log, read_ota


@pytest.fixture(scope="module")
def raw():
    return pd.read_csv(dataset_path("ota_crawls_dating"))


@pytest.mark.parametrize("which", ["filtered", "raw"])
def test_counts_equal_the_file(raw, which):
    log = read_ota(changed=which)
    h = log.history
    col = f"changed_{which}"
    df = raw.assign(t=pd.to_datetime(raw.fetch_time, utc=True)).sort_values(["page", "t"], kind="stable")
    later = df[df.duplicated("page")]  # every visit but each page's first (the reference copy)
    expect = later.groupby("page", sort=False)[col].sum()
    n_changes = np.add.reduceat(h.flat_changed.astype(int), h.offsets[:-1])
    got = pd.Series(n_changes, index=h.page_ids)
    assert got.sort_index().tolist() == expect.sort_index().tolist()
    assert h.lengths.sum() == len(raw) - raw.page.nunique()
    assert log.audit.rows_read == len(raw) and log.audit.dropped_total == 0
    first = df.groupby("page").t.min()
    assert pd.to_datetime(log.first_visit, utc=True).tolist() == first.reindex(h.page_ids).tolist()


def test_auto_format_detects_ota():
    log = read_log(dataset_path("ota_crawls_dating"))
    assert log.audit.change_source == "changed"
    with pytest.raises(ValueError, match="`changed` must be one of"):
        read_ota(changed="html")
