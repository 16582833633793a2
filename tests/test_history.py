"""CrawlHistory: construction, validation and from_times against hand-worked cases."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from changerate_bayes import CrawlHistory


def test_one_page_shapes_and_dtypes():
    h = CrawlHistory([True, False, True], intervals=[0.5, 0.25, 2], crawl_rate=3)
    assert h.changed.dtype == np.int8 and h.changed.tolist() == [1, 0, 1]
    assert h.intervals.dtype == np.float64
    assert (h.n_crawls, h.n_pages, h.shape, len(h)) == (3, None, (3,), 3)
    assert h.crawl_rate == 3.0 and isinstance(h.crawl_rate, float)


def test_many_pages_with_per_page_crawl_rate():
    h = CrawlHistory(np.zeros((4, 7)), crawl_rate=[1, 2, 3, 4])
    assert (h.n_pages, h.n_crawls) == (4, 7)
    assert h.crawl_rate_column(method="lln").shape == (4, 1)
    page = h.page(2)
    assert page.crawl_rate == 3.0 and page.shape == (7,)


def test_arrays_are_read_only():
    h = CrawlHistory([1, 0], intervals=[1.0, 1.0])
    with pytest.raises(ValueError):
        h.changed[0] = 0
    with pytest.raises(ValueError):
        h.intervals[0] = 5.0


def test_head_keeps_first_crawls():
    h = CrawlHistory([[1, 0, 1], [0, 0, 1]], intervals=np.ones((2, 3)), crawl_rate=2.0)
    assert h.head(2).changed.tolist() == [[1, 0], [0, 0]]
    with pytest.raises(ValueError, match="`k` must be in"):
        h.head(4)


@pytest.mark.parametrize(
    ("kwargs", "exc", "message"),
    [
        (dict(changed=[0, 2, 1]), ValueError, r"`changed` must be 0 or 1; got 2 at index 1"),
        (dict(changed=[0.5]), ValueError, r"`changed` must be 0 or 1; got 0.5 at index 0"),
        (dict(changed=["a"]), TypeError, r"`changed` must hold 0/1 numbers"),
        (dict(changed=[]), ValueError, r"`changed` must hold at least one crawl"),
        (dict(changed=np.zeros((2, 0))), ValueError, r"at least one crawl"),
        (dict(changed=np.zeros((2, 2, 2))), ValueError, r"shape \(k,\) or \(n_pages, k\)"),
        (dict(changed=[1, 0], intervals=[1.0, 0.0]), ValueError, r"`intervals` must be > 0; got 0.0 at index 1"),
        (dict(changed=[1, 0], intervals=[1.0, np.nan]), ValueError, r"`intervals` must be finite; got nan at index 1"),
        (dict(changed=[1, 0], intervals=[np.inf, 1]), ValueError, r"`intervals` must be finite; got inf at index 0"),
        (dict(changed=[1, 0], intervals=[1.0]), ValueError, r"same shape as `changed` \(2,\); got \(1,\)"),
        (dict(changed=[1, 0], crawl_rate=0.0), ValueError, r"`crawl_rate` must be a finite number > 0; got 0.0"),
        (dict(changed=[1, 0], crawl_rate=-1), ValueError, r"`crawl_rate` must be a finite number > 0"),
        (
            dict(changed=[1, 0], crawl_rate=float("nan")),
            ValueError,
            r"`crawl_rate` must be a finite number > 0; got nan",
        ),
        (dict(changed=[1, 0], crawl_rate="3"), TypeError, r"`crawl_rate` must be numeric"),
        (dict(changed=[[1, 0]], crawl_rate=[1.0, 2.0]), ValueError, r"shape \(n_pages,\)"),
    ],
)
def test_bad_input_messages(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        CrawlHistory(**kwargs)


def test_missing_rate_and_intervals_name_the_method():
    h = CrawlHistory([1, 0])
    with pytest.raises(ValueError, match="method 'lln' needs the crawl rate"):
        h.crawl_rate_column(method="lln")
    with pytest.raises(ValueError, match="method 'mle' needs the crawl intervals"):
        h.require_intervals(method="mle")


def test_from_times_hand_worked():
    # changes at 0.5, 0.7 (both in (0, 1]), none in (1, 2], 2.5 in (2, 3], 3.0 in (2, 3]
    h = CrawlHistory.from_times([0.5, 0.7, 2.5, 3.0], [1.0, 2.0, 3.0, 4.5])
    assert h.changed.tolist() == [1, 0, 1, 0]
    assert h.intervals.tolist() == [1.0, 1.0, 1.0, 1.5]


def test_from_times_interval_is_left_open_right_closed():
    # a change exactly at a crawl time belongs to that crawl, not the next one
    h = CrawlHistory.from_times([1.0], [1.0, 2.0], start=0.0)
    assert h.changed.tolist() == [1, 0]
    # a change exactly at the start is before the reference copy
    h = CrawlHistory.from_times([0.0], [1.0], start=0.0)
    assert h.changed.tolist() == [0]


def test_from_times_validation():
    with pytest.raises(ValueError, match="strictly increasing and after `start`; row 1"):
        CrawlHistory.from_times([], [1.0, 1.0])
    with pytest.raises(ValueError, match="row 0 is 0.0"):
        CrawlHistory.from_times([], [0.0, 1.0], start=0.0)
    with pytest.raises(ValueError, match="`change_times` must be sorted ascending; row 2"):
        CrawlHistory.from_times([0.1, 0.5, 0.2], [1.0])
    with pytest.raises(ValueError, match="`crawl_times` must not be empty"):
        CrawlHistory.from_times([0.1], [])


@given(
    changes=st.lists(st.floats(0, 100, allow_nan=False), max_size=40),
    gaps=st.lists(st.floats(0.01, 10, allow_nan=False), min_size=1, max_size=40),
)
def test_from_times_matches_a_direct_count(changes, gaps):
    changes = np.sort(changes)
    crawls = np.cumsum(gaps)
    h = CrawlHistory.from_times(changes, crawls)
    edges = np.concatenate(([0.0], crawls))
    expected = [int(np.any((changes > a) & (changes <= b))) for a, b in zip(edges[:-1], edges[1:])]
    assert h.changed.tolist() == expected
    np.testing.assert_allclose(h.intervals, np.diff(edges))


def test_caller_arrays_stay_writable_and_history_is_a_copy():
    iv = np.array([1.0, 2.0, 3.0])
    p = np.array([1.0, 2.0])
    h = CrawlHistory([1, 0, 1], intervals=iv)
    iv[0] = 5.0  # the caller's array is not frozen
    assert h.intervals[0] == 1.0  # and the history kept its own copy
    hp = CrawlHistory(np.zeros((2, 3)), crawl_rate=p)
    p[0] = 9.0
    assert hp.crawl_rate[0] == 1.0


@pytest.mark.parametrize("attr", ["changed", "intervals", "crawl_rate"])
def test_attributes_cannot_be_replaced(attr):
    h = CrawlHistory([1, 0], intervals=[1.0, 1.0], crawl_rate=1.0)
    with pytest.raises(AttributeError):
        setattr(h, attr, None)


@pytest.mark.parametrize(
    ("kwargs", "exc", "message"),
    [
        (dict(changed=[[1, 0], [1]]), ValueError, r"`changed` must be a rectangular array"),
        (dict(changed=[1, 0], intervals=[[1.0, 2.0], [1.0]]), ValueError, r"`intervals` must be a rectangular"),
        (dict(changed=[1, 0], crawl_rate=[3.0, 4.0]), ValueError, r"must be a scalar for a one-page history"),
        (
            dict(changed=[1, 0], crawl_rate=10**400),
            ValueError,
            r"`crawl_rate` must be a finite number > 0; got an integer",
        ),
    ],
)
def test_more_bad_input_messages(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        CrawlHistory(**kwargs)


def test_from_times_with_datetimes_in_hours():
    crawls = np.array(
        ["2024-01-01T00:00", "2024-01-01T06:00", "2024-01-01T12:00", "2024-01-02T00:00"], dtype="datetime64[s]"
    )
    changes = np.array(["2024-01-01T03:00", "2024-01-01T20:00"], dtype="datetime64[s]")
    h = CrawlHistory.from_times(changes, crawls)  # first crawl = reference copy
    assert h.changed.tolist() == [1, 0, 1] and h.intervals.tolist() == [6.0, 6.0, 12.0]
    h = CrawlHistory.from_times(changes, crawls, start=np.datetime64("2023-12-31T23:00"))
    assert h.changed.tolist() == [0, 1, 0, 1] and h.intervals.tolist() == [1.0, 6.0, 6.0, 12.0]
    # ISO strings with offsets are exact instants
    h = CrawlHistory.from_times(["2024-01-01T04:00+01:00"], ["2024-01-01T00:00Z", "2024-01-01T06:00Z"])
    assert h.changed.tolist() == [1] and h.intervals.tolist() == [6.0]


def test_from_times_datetime_errors():
    with pytest.raises(TypeError, match="both be floats or both be datetimes"):
        CrawlHistory.from_times([0.5], np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[D]"))
    with pytest.raises(TypeError, match="`start` must be a number"):
        CrawlHistory.from_times([0.5], [1.0], start="a")
    with pytest.raises(TypeError, match="`start` must be a datetime"):
        CrawlHistory.from_times([], np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[D]"), start=0.0)
    with pytest.raises(ValueError, match="at least two datetimes"):
        CrawlHistory.from_times([], np.array(["2024-01-01"], dtype="datetime64[D]"))
    with pytest.raises(ValueError, match="`crawl_times` row 1: cannot parse"):
        CrawlHistory.from_times([], ["2024-01-01T00:00Z", "yesterday"])
