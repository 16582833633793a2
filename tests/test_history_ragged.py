"""Ragged crawl histories (pages with different numbers of crawls) and from_times edge cases."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changerate_bayes import CrawlHistory, StatisticalWarning


def _pages(draw_lengths, rng):
    changed = [rng.integers(0, 2, n).astype(np.int8) for n in draw_lengths]
    tau = [rng.exponential(1.0, n) + 1e-3 for n in draw_lengths]
    return changed, tau


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 7), min_size=1, max_size=6), st.integers(0, 2**31))
def test_segments_equal_per_page_histories(lengths, seed):
    changed, tau = _pages(lengths, np.random.default_rng(seed))
    h = CrawlHistory.from_segments(np.concatenate(changed), np.concatenate(tau), lengths=lengths)
    assert h.n_pages == len(lengths)
    assert h.lengths.tolist() == lengths
    assert h.n_visits == sum(lengths) and h.n_crawls == max(lengths)
    assert h.is_ragged == (len(set(lengths)) > 1)
    c2, t2, mask = h.padded()
    assert mask.sum(axis=1).tolist() == lengths
    for i, n in enumerate(lengths):
        page = h.page(i)
        np.testing.assert_array_equal(page.changed, changed[i])
        np.testing.assert_array_equal(page.intervals, tau[i])
        np.testing.assert_array_equal(c2[i, :n], changed[i])
        np.testing.assert_array_equal(t2[i, :n], tau[i])
        assert (c2[i, n:] == 0).all() and (t2[i, n:] == 0.0).all()
    np.testing.assert_array_equal(h.page_index(), np.repeat(np.arange(len(lengths)), lengths))


def test_equal_lengths_give_the_rectangular_history():
    h = CrawlHistory.from_segments([1, 0, 0, 1], [1.0, 2.0, 3.0, 4.0], lengths=[2, 2], crawl_rate=[1.0, 2.0])
    assert not h.is_ragged and h.shape == (2, 2)
    np.testing.assert_array_equal(h.changed, [[1, 0], [0, 1]])
    np.testing.assert_array_equal(h.intervals, [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(h.offsets, [0, 2, 4])


def test_rectangular_history_has_the_flat_view():
    h = CrawlHistory([[1, 0, 1], [0, 0, 1]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(h.flat_changed, [1, 0, 1, 0, 0, 1])
    np.testing.assert_array_equal(h.flat_intervals, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    np.testing.assert_array_equal(h.lengths, [3, 3])
    one = CrawlHistory([1, 0])
    np.testing.assert_array_equal(one.offsets, [0, 2])
    assert one.padded()[0].shape == (1, 2)


def test_ragged_history_refuses_the_rectangular_arrays():
    h = CrawlHistory.from_segments([1, 0, 1], [1.0, 1.0, 1.0], lengths=[1, 2])
    with pytest.raises(ValueError, match="ragged.*flat_changed"):
        h.changed  # noqa: B018 (the property raises)
    with pytest.raises(ValueError, match="ragged.*flat_intervals"):
        h.intervals  # noqa: B018 (the property raises)


def test_ragged_head_keeps_at_most_k_crawls_per_page():
    h = CrawlHistory.from_segments(
        [1, 0, 0, 1, 1, 0], [1.0, 2.0, 1.0, 0.5, 0.5, 3.0], lengths=[2, 4], crawl_rate=2.0, page_ids=["a", "b"]
    )
    head = h.head(3)
    assert head.lengths.tolist() == [2, 3]
    np.testing.assert_array_equal(head.flat_changed, [1, 0, 0, 1, 1])
    np.testing.assert_array_equal(head.flat_intervals, [1.0, 2.0, 1.0, 0.5, 0.5])
    assert head.page_ids.tolist() == ["a", "b"] and head.crawl_rate == 2.0


def test_page_labels_and_per_page_crawl_rate():
    h = CrawlHistory.from_segments([1, 0, 1], lengths=[1, 2], crawl_rate=[3.0, 4.0], page_ids=["u1", "u2"])
    assert h.page_ids.tolist() == ["u1", "u2"]
    assert h.page(1).crawl_rate == 4.0
    assert h.flat_intervals is None and h.padded()[1] is None


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (dict(changed=[1, 0, 2], lengths=[1, 2]), ValueError, "`changed` must be 0 or 1; got 2 at index 2"),
        (dict(changed=[[1, 0]], lengths=[2]), ValueError, "one-dimensional"),
        (
            dict(changed=[1, 0, 1], lengths=[1, 1]),
            ValueError,
            "sum to the number of crawls in `changed` \\(3\\); got 2",
        ),
        (dict(changed=[1, 0, 1], lengths=[3, 0]), ValueError, "`lengths` must be >= 1; got 0 at index 1"),
        (dict(changed=[1, 0, 1], lengths=[1.0, 2.0]), TypeError, "`lengths` must hold integers"),
        (dict(changed=[1, 0, 1], lengths=[]), ValueError, "non-empty"),
        (
            dict(changed=[1, 0, 1], intervals=[1.0, -1.0, 1.0], lengths=[1, 2]),
            ValueError,
            "`intervals` must be > 0; got -1.0 at index 1",
        ),
        (dict(changed=[1, 0, 1], intervals=[1.0, 1.0], lengths=[1, 2]), ValueError, "same shape"),
        (dict(changed=[1, 0, 1, 1], intervals=[1.0, 1.0], lengths=[2, 2]), ValueError, "same shape"),
        (dict(changed=[1, 0, 1], lengths=[1, 2], crawl_rate=[1.0, 2.0, 3.0]), ValueError, "`crawl_rate`"),
        (dict(changed=[1, 0, 1], lengths=[1, 2], page_ids=["a"]), ValueError, "`page_ids` must have shape \\(2,\\)"),
    ],
)
def test_from_segments_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        CrawlHistory.from_segments(**kwargs)


def test_page_index_checked():
    h = CrawlHistory.from_segments([1, 0, 1], lengths=[1, 2])
    with pytest.raises(ValueError, match="`i` must be in \\[-2, 1\\]; got 2"):
        h.page(2)
    with pytest.raises(TypeError, match="`i` must be an int"):
        h.page(1.0)
    assert h.page(-1).changed.tolist() == [0, 1]


def test_from_times_refuses_naive_and_aware_across_arguments():
    with pytest.raises(ValueError, match="`change_times` holds naive times .* `crawl_times` time-zone-aware"):
        CrawlHistory.from_times(["2024-01-01T00:30"], ["2024-01-01T00:00Z", "2024-01-01T01:00Z"])
    with pytest.raises(ValueError, match="`crawl_times` holds naive .* `start` time-zone-aware"):
        CrawlHistory.from_times([], ["2024-01-01T00:00", "2024-01-01T01:00"], start="2023-12-31T23:00Z")
    # the same instants, all aware, in different offsets: accepted
    h = CrawlHistory.from_times(["2024-01-01T02:30+02:00"], ["2024-01-01T00:00Z", "2024-01-01T01:00Z"])
    assert h.changed.tolist() == [1] and h.intervals.tolist() == [1.0]


def test_from_times_warns_on_epoch_floats_without_start():
    t0 = 1.7e9
    with pytest.warns(StatisticalWarning, match="count from an epoch need `start`"):
        CrawlHistory.from_times([t0 + 10], [t0, t0 + 3600, t0 + 7200])
    # with start, the intervals are the crawl gaps (seconds here) and nothing is said
    h = CrawlHistory.from_times([t0 + 10], [t0, t0 + 3600, t0 + 7200], start=t0 - 3600)
    assert h.intervals.tolist() == [3600.0, 3600.0, 3600.0] and h.changed.tolist() == [0, 1, 0]


def test_from_times_small_first_interval_does_not_warn(recwarn):
    CrawlHistory.from_times([0.4], [1.0, 2.0, 3.0])  # first interval equal to the others
    CrawlHistory.from_times([0.4], [999.0, 1000.0, 1001.0])  # 999x the median: below the threshold
    assert not [w for w in recwarn if issubclass(w.category, StatisticalWarning)]


def test_require_intervals_of_a_ragged_history_is_the_flat_array():
    h = CrawlHistory.from_segments([1, 0, 1], [1.0, 2.0, 3.0], lengths=[1, 2])
    np.testing.assert_array_equal(h.require_intervals(method="mle"), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="method 'mle' needs the crawl intervals"):
        CrawlHistory.from_segments([1, 0, 1], lengths=[1, 2]).require_intervals(method="mle")
