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
