"""The clock-skew finding: beyond ``clock_skew_s`` either way, never from slow tools alone."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fabtop.core.findings import Finding
from fabtop.core.thresholds import DEFAULT_THRESHOLDS
from tests.unit.rules_support import Fabric, by_rule
from tests.unit.test_clock_skew import DAY, SkewedFabric, slow_every_third


def skew_findings(
    skew: float, delay: Callable[[int, str], float] = slow_every_third
) -> list[Finding]:
    """The clock-skew findings after 5 ticks of node1 (on time) and node2 (``skew`` off)."""
    fab = SkewedFabric({"node2": skew}, delay)
    fab.port("node1")
    fab.port("node2")
    return by_rule(fab.run(5), "clock_skew")


@pytest.mark.parametrize(
    ("skew", "way", "span"),
    [
        (120.0, "ahead of", "2.0 min"),
        (-120.0, "behind", "2.0 min"),
        (DAY, "ahead of", "24.0 h"),
        (-3 * DAY, "behind", "3.0 days"),
    ],
)
def test_a_skewed_clock_is_named_with_its_offset(skew: float, way: str, span: str) -> None:
    found = skew_findings(skew)
    assert len(found) == 1
    f = found[0]
    assert f.host == "node2" and f.severity == "warning"
    assert f"{span} {way}" in f.summary
    offset = f.number("offset_s")
    assert offset is not None and offset == pytest.approx(skew, abs=0.1)


def test_a_second_off_is_not_skew() -> None:
    assert not skew_findings(1.0)


def test_tools_at_their_timeout_on_every_tick_are_not_skew() -> None:
    # every frame waits 3 s (2 s timeout, killed 1 s later) before it ships
    assert not skew_findings(0.0, lambda seq, host: 3.0)
    assert DEFAULT_THRESHOLDS["clock_skew_s"] > 3.0


def test_no_arrival_times_no_finding() -> None:
    # replays and test fabrics without arrival times: nothing is measured, nothing said
    fab = Fabric()
    fab.port("node1")
    assert not by_rule(fab.run(3), "clock_skew")


def test_the_finding_clears_when_the_clock_is_set_right() -> None:
    fab = SkewedFabric({"node2": 120.0})
    fab.port("node1")
    fab.port("node2")
    assert by_rule(fab.run(3), "clock_skew")
    fab.skew["node2"] = 0.0  # stepped right: the rate engine sees the step
    assert not by_rule(fab.run(2), "clock_skew")
