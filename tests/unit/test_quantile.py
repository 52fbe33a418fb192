"""Histogram quantiles: the core's copy of Prometheus' ``histogram_quantile`` interpolation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabtop.core.inference_rates import histogram_quantile


def test_histogram_quantile_matches_prometheus_interpolation() -> None:
    bounds = (0.1, 0.5, 1.0, math.inf)
    # 10 observations: 2 <= 0.1, 6 in (0.1, 0.5], 2 in (0.5, 1.0]
    counts = (2.0, 8.0, 10.0, 10.0)
    assert histogram_quantile(0.5, bounds, counts) == pytest.approx(0.1 + 0.4 * (5 - 2) / 6)
    assert histogram_quantile(0.1, bounds, counts) == pytest.approx(0.05)
    assert histogram_quantile(0.99, bounds, counts) == pytest.approx(0.5 + 0.5 * (9.9 - 8) / 2)
    # rank in the +Inf bucket: the highest finite bound
    assert histogram_quantile(0.99, bounds, (2.0, 8.0, 8.0, 10.0)) == 1.0
    assert histogram_quantile(0.5, bounds, (0.0, 0.0, 0.0, 0.0)) is None
    assert histogram_quantile(0.5, (0.1, 0.5), (1.0, 2.0)) is None  # no +Inf bucket
    assert histogram_quantile(1.5, bounds, counts) is None


NAN, INF = math.nan, math.inf


def test_a_falling_count_is_made_monotone_as_prometheus_does() -> None:
    # Buckets updated one by one can dip between two bounds; Prometheus takes the max so far.
    assert histogram_quantile(0.5, (0.1, 0.5, 1.0, INF), (1.0, 5.0, 3.0, 6.0)) == pytest.approx(
        histogram_quantile(0.5, (0.1, 0.5, 1.0, INF), (1.0, 5.0, 5.0, 6.0))
    )


@pytest.mark.parametrize(
    ("bounds", "counts"),
    [
        ((0.1, 0.5, 1.0, INF), (NAN, NAN, NAN, NAN)),  # raised StopIteration on every frame
        ((0.1, 0.5, 1.0, INF), (1.0, NAN, 3.0, 4.0)),
        ((0.1, 0.5, 1.0, INF), (1.0, 2.0, 3.0, INF)),
        ((0.1, 0.5, 1.0, INF), (1.0, 2.0, 3.0, -INF)),
        ((0.1, NAN, 1.0, INF), (1.0, 2.0, 3.0, 4.0)),
        ((0.1, -INF, 1.0, INF), (1.0, 2.0, 3.0, 4.0)),
        ((0.5, 0.1, 1.0, INF), (1.0, 2.0, 3.0, 4.0)),  # bounds out of order
        ((0.1, 0.1, 1.0, INF), (1.0, 2.0, 3.0, 4.0)),  # a bound twice
        ((0.1, 0.5, 1.0, INF), (-1.0, 2.0, 3.0, 4.0)),
    ],
)
def test_buckets_that_cannot_be_give_none(
    bounds: tuple[float, ...], counts: tuple[float, ...]
) -> None:
    for q in (0.0, 0.5, 0.99, 1.0):
        assert histogram_quantile(q, bounds, counts) is None
    assert histogram_quantile(NAN, (0.1, INF), (1.0, 2.0)) is None


@settings(max_examples=300, deadline=None)
@given(
    q=st.floats(allow_nan=True, allow_infinity=True),
    bounds=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=8),
    counts=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=8),
)
def test_quantile_never_raises_and_is_finite(
    q: float, bounds: list[float], counts: list[float]
) -> None:
    v = histogram_quantile(q, [*bounds, INF], [*counts, *counts[-1:]])
    assert v is None or math.isfinite(v)


@pytest.mark.parametrize(
    ("bounds", "counts"),
    [
        ([1.0385643364363083e154, INF], [1.730940560727181e154, 1.730940560727181e154]),  # found
        ([-1.7e308, 1.7e308, INF], [1.0, 3.0, 3.0]),  # the bucket's width is beyond a float
    ],
)
def test_huge_bounds_interpolate_without_overflow(bounds: list[float], counts: list[float]) -> None:
    v = histogram_quantile(0.5 if bounds[0] < 0 else 1.0, bounds, counts)
    assert v is not None and math.isfinite(v) and v <= bounds[-2]
