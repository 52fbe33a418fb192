"""Histogram quantiles: the core's copy of Prometheus' ``histogram_quantile`` interpolation."""

from __future__ import annotations

import math

import pytest

from fabtop.core.quantile import histogram_quantile


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
