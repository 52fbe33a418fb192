"""Clock offsets: a robust per-host estimate, and one skewed host never blanks the others."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fabtop.core.clock import OFFSET_WINDOW, Clocks
from tests.unit.rules_support import Fabric, by_rule
from tui.widgets.timeline_series import track_series

DAY = 86_400.0
FAST = 0.05  # a tick whose tools answer at once: stamp to arrival


def slow_every_third(seq: int, host: str) -> float:
    """Stamp-to-arrival delay: every third tick a tool runs into its 2 s timeout."""
    del host
    return 2.0 if seq % 3 == 0 else FAST


class SkewedFabric(Fabric):
    """The rules' test fabric with real clocks: each host's clock off by ``skew[host]``.

    Frames are stamped with the host's clock at the start of a tick and arrive ``delay``
    seconds later on the operator's clock, which is the fabric's time ``t``.
    """

    def __init__(
        self,
        skew: dict[str, float],
        delay: Callable[[int, str], float] = slow_every_third,
    ) -> None:
        super().__init__()
        self.skew = skew
        self.delay = delay

    def remote_s(self, host: str) -> float:
        return self.t + self.skew.get(host, 0.0)

    def arrived_unix(self, host: str) -> float | None:
        return self.t + self.delay(self.seq, host)


def feed(clocks: Clocks, offset: float, n: int, delay: Callable[[int, str], float]) -> float:
    """``n`` frames at 1 Hz of a host whose clock is ``offset`` ahead; the last placed time."""
    t = 0.0
    for seq in range(1, n + 1):
        true = 1_750_000_000.0 + seq
        t = clocks.place("h", true + offset, true + delay(seq, "h"))
    return t


def test_tools_that_run_into_their_timeout_do_not_move_the_estimate() -> None:
    clocks = Clocks()
    feed(clocks, 0.0, 30, slow_every_third)
    assert clocks.offset("h") == pytest.approx(-FAST)
    # and a host within a second of the operator keeps its own timestamps
    assert feed(clocks, 0.0, 1, slow_every_third) == 1_750_000_001.0


def test_first_frame_slow_then_fast() -> None:
    clocks = Clocks()
    feed(clocks, 120.0, 1, lambda seq, h: 2.0)
    assert clocks.offset("h") == pytest.approx(118.0)
    feed(clocks, 120.0, 3, slow_every_third)
    assert clocks.offset("h") == pytest.approx(120.0 - FAST)


def test_a_clock_a_day_ahead_measures_a_day() -> None:
    clocks = Clocks()
    last = feed(clocks, DAY, 10, slow_every_third)
    assert clocks.offset("h") == pytest.approx(DAY - FAST)
    # placed where the operator's clock saw it (a fast frame's arrival), not a day ahead
    assert last == pytest.approx(1_750_000_010.0 + FAST)


def test_a_corrected_clock_is_followed() -> None:
    clocks = Clocks()
    feed(clocks, 120.0, 10, slow_every_third)
    # NTP steps it right: the rate engine sees the step, the old measurements go
    clocks.place("h", 1_750_000_100.0, 1_750_000_100.0 + FAST, stepped=True)
    assert clocks.offset("h") == pytest.approx(-FAST)
    # a clock slewed right without a step is followed once the window has passed
    slewed = Clocks()
    feed(slewed, 120.0, 10, slow_every_third)
    feed(slewed, 0.0, OFFSET_WINDOW, slow_every_third)
    assert slewed.offset("h") == pytest.approx(-FAST)


def test_no_arrival_times_no_estimate() -> None:
    clocks = Clocks()
    assert clocks.place("h", 1000.0, None) == 1000.0
    assert clocks.offset("h") is None


def drops(fab: Fabric, span: float = 60.0) -> list[float]:
    """The timeline's drops panel: the bins with a value, as the timeline screen reads them."""
    _, series = track_series(fab.history, span)
    _, values = series["drops"]
    return [v for v in values if v is not None]


def test_a_host_a_day_ahead_does_not_empty_the_timeline_of_the_others() -> None:
    fab = SkewedFabric({"node2": DAY})
    fab.port("node1").set(rx_discards=5.0)
    fab.port("node2").set(rx_discards=0.0)
    fab.run(30)
    shown = drops(fab)
    assert shown and max(shown) == pytest.approx(5.0)  # node1's drops are on screen
    # both hosts' newest points sit at the operator's time, within a tick of each other
    ends = []
    for host in ("node1", "node2"):
        s = fab.history.get((host, "enp65s0f0np0", "rx_discards_per_s"))
        assert s is not None
        ends.append(s.points(1e-9)[0][-1])
    assert abs(ends[0] - ends[1]) < 1.0


@pytest.mark.parametrize("skew", [DAY, -DAY, 120.0])
def test_a_skewed_host_does_not_stop_the_others_findings(skew: float) -> None:
    fab = SkewedFabric({"node2": skew})
    fab.port("node1").traffic(40, rdma_share=0.0)  # NCCL fell back to TCP
    fab.port("node2").traffic(40)
    found = by_rule(fab.run(5), "rdma_fallback")
    assert [f.host for f in found] == ["node1"]
    # and its marker lands on the timeline's axis, not a day away
    since = found[0].since
    assert since is not None and abs(since - fab.t) < 10.0
