"""The per-page table's posterior (mean and interval only) against the full summary."""

import numpy as np
import pytest

from changerate_bayes import BetaPrimePrior, CrawlHistory, GammaPrior, posterior_summary
from changerate_bayes.bayes._summary import posterior_mean_interval

# the tests that compile the grid posterior's and the summary's kernels run in one pytest-xdist
# worker, so that a fresh checkout compiles them once, not once in every worker at the same time
pytestmark = pytest.mark.xdist_group("grid_kernels")


@pytest.mark.parametrize(
    ("prior", "method"),
    [
        (None, "grid"),
        (GammaPrior(0.5, 2.0), "grid"),
        (BetaPrimePrior(0.2, 1.5), "grid"),
        (None, "conjugate"),
        (BetaPrimePrior(0.2, 1.5), "conjugate"),
    ],
)
def test_mean_and_interval_equal_the_full_summary_bit_for_bit(prior, method):
    rng = np.random.default_rng(2)
    lengths = rng.integers(1, 60, 300)
    tau = rng.exponential(5.0, lengths.sum()) * np.exp(rng.normal(0, 1.5, lengths.sum()))
    rate = np.repeat(rng.lognormal(-3, 1.5, lengths.size), lengths)
    changed = (rng.random(lengths.sum()) < -np.expm1(-rate * tau)).astype(np.int8)
    h = CrawlHistory.from_segments(changed, tau, lengths=lengths, crawl_rate=1 / 5.0)
    full = posterior_summary(h, prior=prior, method=method, level=0.8)
    part = posterior_mean_interval(h, prior=prior, method=method, level=0.8)
    for name in ("mean", "lower", "upper"):
        np.testing.assert_array_equal(getattr(part, name), getattr(full, name), err_msg=name)
    assert part.sd is None
    assert (part.level, part.method, part.prior) == (full.level, full.method, full.prior)


def test_mean_interval_checks_its_arguments():
    h = CrawlHistory.from_segments([1, 0], [1.0, 2.0], lengths=[2], crawl_rate=0.5)
    with pytest.raises(TypeError, match="`history` must be a CrawlHistory; got list"):
        posterior_mean_interval([1, 0])
    with pytest.raises(ValueError, match="`level` must be in"):
        posterior_mean_interval(h, level=1.5)
