"""What a Thunderbolt link can do, and when it runs below it (fabtop/core/thunderbolt.py)."""

from __future__ import annotations

import pytest

from collectors.samples import ThunderboltInfo, ThunderboltPeer
from fabtop.core.thunderbolt import below_capability, capability, speed_text


def _peer(gbps: tuple[float, float], lanes: tuple[int, int]) -> ThunderboltPeer:
    return ThunderboltPeer("0-1", "thunderbolt0", None, "far", gbps[0], gbps[1], *lanes)


@pytest.mark.parametrize(
    ("generation", "gbps", "lanes", "why"),
    [
        (4, (20.0, 20.0), (2, 2), None),  # TB4 / USB4 at full width
        (4, (40.0, 40.0), (2, 2), None),  # a USB4 v2 (TB5) link
        (4, (40.0, 40.0), (3, 1), None),  # USB4 v2 asymmetric: 4 lanes in all, by design
        (4, (20.0, 20.0), (1, 1), "1 lane(s) where 2 are possible"),
        (4, (10.0, 10.0), (2, 2), "10 Gb/s per lane where 20 is possible"),
        (
            3,
            (10.0, 10.0),
            (1, 1),
            "1 lane(s) where 2 are possible; 10 Gb/s per lane where 20 is possible",
        ),
        (None, (10.0, 10.0), (1, 1), None),  # generation unknown: nothing claimed
        (2, (10.0, 10.0), (1, 1), None),  # before Thunderbolt 3: no floor known
    ],
)
def test_below_what_the_generation_can_do(
    generation: int | None, gbps: tuple[float, float], lanes: tuple[int, int], why: str | None
) -> None:
    tb = ThunderboltInfo("sysfs", "x", generation)
    assert below_capability(tb, _peer(gbps, lanes)) == why


def test_the_receptacle_wins_over_the_generation_where_a_source_gives_it() -> None:
    p = _peer((20.0, 20.0), (2, 2))
    p.max_gbps_per_lane, p.max_lanes = 40.0, 2
    tb = ThunderboltInfo("system_profiler", "x", 4)
    cap = capability(tb, p)
    assert cap is not None and cap[:2] == (40.0, 2) and "receptacle" in cap[2]
    assert below_capability(tb, p) == "20 Gb/s per lane where 40 is possible"


def test_speed_text_spells_out_lanes_times_lane_speed() -> None:
    assert speed_text(40.0, 2) == "2 \u00d7 40 = 80 Gb/s"
    assert speed_text(None, 2) == "2 \u00d7 ? Gb/s"
    assert speed_text(None, None) == "speed unknown"
