"""Library refusals and the documented treatment of masked entries."""

import numpy as np
import pytest

from changerate_bayes import DynamicRateFilter


def test_dynamic_filter_ignores_changed_of_masked_pages():
    mask = np.array([True, True, False])
    a = DynamicRateFilter(n_pages=3, sigma=0.1)
    b = DynamicRateFilter(n_pages=3, sigma=0.1)
    a.update([1, 0, np.nan], [1.0, 2.0, np.nan], mask=mask)
    b.update([1, 0, 2], [1.0, 2.0, -5.0], mask=mask)
    ref = DynamicRateFilter(n_pages=3, sigma=0.1)
    ref.update([1, 0, 0], [1.0, 2.0, 1.0], mask=mask)
    np.testing.assert_array_equal(a.rate, ref.rate)
    np.testing.assert_array_equal(b.rate, ref.rate)
    assert a.n_updates.tolist() == [1, 1, 0]


def test_dynamic_filter_still_checks_crawled_pages():
    f = DynamicRateFilter(n_pages=2, sigma=0.1)
    with pytest.raises(ValueError, match="`changed` must be 0 or 1"):
        f.update([2, 0], [1.0, 1.0], mask=np.array([True, False]))
    with pytest.raises(ValueError, match="`mask` must have shape"):
        f.update([1, 0], [1.0, 1.0], mask=np.array([True]))


def _changes():
    import pandas as pd

    return pd.DataFrame({"page": ["a", "a"], "timestamp": ["2024-01-02T00:00Z", "2024-01-05T00:00Z"]})


@pytest.mark.parametrize("window", [(0.0, 10.0), ("2024-01-01T00:00Z", 5.0)])
def test_replay_numeric_window_with_datetime_changes_is_named(window):
    from changerate_bayes.replay import replay_policies

    with pytest.raises(ValueError, match=r"window of page 'a' is a number .* the times are datetimes"):
        replay_policies(_changes(), window=window, budget=2.0, policies=["uniform"], n_boot=0)


def test_replay_unparsable_window_message_names_page():
    from changerate_bayes.replay import replay_policies

    with pytest.raises(ValueError, match=r"^start of the window of page 'a' is not a parsable time"):
        replay_policies(_changes(), window=("soon", "2024-01-10T00:00Z"), budget=2.0, policies=["uniform"], n_boot=0)
