"""A CSV log whose reading stops at a bad value leaves no file open."""

import gc
import warnings

import pytest

from changerate_bayes.io import CrawlLogError, read_log


def test_a_bad_value_closes_the_csv_file(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,soon,y\n", encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with pytest.raises(CrawlLogError, match="line 3, column 'fetch_time'"):
            read_log(path)
        gc.collect()  # an unclosed file warns when it is collected
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
