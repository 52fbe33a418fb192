"""Statistics of test results: nearest-rank percentiles, Jain's index, the impact factor."""

from __future__ import annotations

import math

import pytest

from fabtop.fabtest.stats import impact_factor, jain_index, nearest_rank, summarize


def test_nearest_rank_percentiles_of_known_samples() -> None:
    ordered = [float(x) for x in range(1, 101)]  # 1..100
    assert nearest_rank(ordered, 0.5) == 50.0
    assert nearest_rank(ordered, 0.99) == 99.0
    assert nearest_rank(ordered, 0.999) == 100.0  # ceil(99.9): the maximum
    assert nearest_rank(ordered, 1.0) == 100.0
    assert nearest_rank(ordered, 0.001) == 1.0
    assert nearest_rank([7.0], 0.5) == 7.0
    assert nearest_rank([], 0.5) is None
    with pytest.raises(ValueError):
        nearest_rank(ordered, 0.0)


def test_p999_of_10000_samples_leaves_ten_beyond_it() -> None:
    # 0.999 * 10000 is 9990.000000000002 in binary: the rank must still be 9990.
    samples = [float(i) for i in range(10_000, 0, -1)]  # unsorted on purpose
    s = summarize(samples)
    assert s.n == 10_000
    assert s.p999_us == 9990.0
    assert s.p99_us == 9900.0
    assert s.p50_us == 5000.0
    assert s.min_us == 1.0 and s.max_us == 10_000.0
    assert s.mean_us == pytest.approx(5000.5)


def test_a_tail_is_a_measured_sample_not_an_interpolation() -> None:
    samples = [2.0] * 990 + [50.0] * 10
    s = summarize(samples)
    assert s.p99_us == 2.0  # rank 990
    assert s.p999_us == 50.0  # rank 999
    assert s.p50_us == 2.0


def test_samples_that_are_not_numbers_are_counted_and_left_out() -> None:
    s = summarize([1.0, math.nan, 3.0, math.inf, 2.0])
    assert (s.n, s.dropped, s.p50_us, s.max_us) == (3, 2, 2.0, 3.0)
    empty = summarize([math.nan])
    assert (empty.n, empty.p50_us, empty.mean_us) == (0, None, None)


def test_jain_index() -> None:
    assert jain_index([10.0, 10.0, 10.0, 10.0]) == pytest.approx(1.0)
    assert jain_index([40.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)  # one got everything: 1/n
    assert jain_index([1.0, 2.0, 3.0]) == pytest.approx(36 / (3 * 14))
    # thresholds.py's example: one of 4 senders at 40 % of its fair share, the rest split.
    assert jain_index([0.4, 1.2, 1.2, 1.2]) == pytest.approx(0.893, abs=1e-3)
    assert jain_index([]) is None
    assert jain_index([0.0, 0.0]) is None


def test_impact_factor_is_loaded_over_isolated() -> None:
    assert impact_factor(6.0, 2.0) == 3.0
    assert impact_factor(None, 2.0) is None
    assert impact_factor(6.0, 0.0) is None
