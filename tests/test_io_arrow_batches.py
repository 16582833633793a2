"""Parquet batches read from their Arrow buffers give the compact columns of the pandas path."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changerate_bayes.io._errors import CrawlLogError
from changerate_bayes.io._semantics import VisitColumns, compact_batch, compact_frame

FIELDS = VisitColumns.__dataclass_fields__


def _both(batch, inv=None, *, labels=(), first_line=1):
    inv = inv or {}
    names = {v: k for k, v in inv.items()}
    out = []
    for fast in (True, False):
        state, lab = {}, pd.Index(list(labels), dtype=object)
        if labels:
            state["label_codes"] = {x: i for i, x in enumerate(labels)}
        if fast:
            part, lab = compact_batch(
                batch, source="f.parquet", first_line=first_line, labels=lab, state=state, inv=inv, names=names
            )
        else:
            part, lab = compact_frame(
                batch.to_pandas().rename(columns=inv),
                source="f.parquet",
                first_line=first_line,
                line_word="row",
                labels=lab,
                state=state,
                names=names,
            )
        out.append((part, list(lab), state.get("kind")))
    return out


def _assert_same(a, b):
    (pa_, la, ka), (pb, lb, kb) = a, b
    assert la == lb and ka == kb
    for name in FIELDS:
        x, y = getattr(pa_, name), getattr(pb, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=name)
            assert x.dtype == y.dtype, name


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 300), st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_arrow_batches_equal_the_pandas_path(seed, n, aware, with_status, with_digest, null_digests):
    rng = np.random.default_rng(seed)
    pages = np.array([f"https://e.org/p{i}" for i in rng.integers(0, 12, n)])
    cols = {"url": pa.array(pages).dictionary_encode()}
    t = (1_700_000_000_000_000 + rng.integers(0, 10**12, n)).astype(np.int64)
    cols["ts"] = pa.array(t, type=pa.timestamp("us", tz="UTC" if aware else None))
    if with_status:
        status = rng.choice([200, 304, 404, 503, 301], n).astype(np.int16)
        mask = rng.random(n) < 0.1
        cols["status"] = pa.array(status, mask=mask)
    if with_digest:
        d = np.array([rng.choice(["abc", " abc", "-", "", "d1", "d2 ", "x"]) for _ in range(n)])
        mask = (rng.random(n) < 0.2) if null_digests else None
        cols["digest"] = pa.array(d, mask=mask).dictionary_encode()
    batch = pa.RecordBatch.from_pydict(cols)
    inv = {"url": "page", "ts": "fetch_time"}
    fast, slow = _both(batch, inv, labels=("https://e.org/p3",), first_line=7)
    _assert_same(fast, slow)


def test_labels_keep_the_order_of_first_appearance():
    batch = pa.RecordBatch.from_pydict(
        {
            "page": pa.DictionaryArray.from_arrays(pa.array([2, 0, 2, 1], type=pa.int32()), pa.array(["a", "b", "c"])),
            "fetch_time": pa.array(np.arange(4) * 10**9, type=pa.timestamp("ns", tz="UTC")),
        }
    )
    fast, slow = _both(batch)
    _assert_same(fast, slow)
    assert fast[1] == ["c", "a", "b"]
    np.testing.assert_array_equal(fast[0].page, [0, 1, 0, 2])


@pytest.mark.parametrize(
    ("column", "values", "match"),
    [
        ("page", pa.array(["a", "  ", "a"]).dictionary_encode(), "f.parquet: row 6, column 'page': missing page"),
        ("page", pa.array(["a", None, "a"]).dictionary_encode(), "f.parquet: row 6, column 'page': missing page"),
        ("fetch_time", pa.array([0, None, 0], type=pa.timestamp("s")), "row 6, column 'fetch_time': missing time"),
        ("fetch_time", pa.array([0, -(10**10), 0], type=pa.timestamp("s")), "row 6, column 'fetch_time': time"),
    ],
)
def test_bad_values_are_named_as_by_the_pandas_path(column, values, match):
    cols = {
        "page": pa.array(["a", "b", "a"]).dictionary_encode(),
        "fetch_time": pa.array([0, 10, 20], type=pa.timestamp("s")),
    }
    cols[column] = values
    batch = pa.RecordBatch.from_pydict(cols)
    with pytest.raises(CrawlLogError, match=match):
        compact_batch(batch, source="f.parquet", first_line=5, labels=pd.Index([], dtype=object), state={}, inv={})
