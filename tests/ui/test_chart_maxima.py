"""The series a view charts the maxima of keep them, in the tier that serves the view's
longest span; History keeps maxima nowhere else (memory: DESIGN.md §8)."""

from __future__ import annotations

from collectors.samples import HostSample, LinkSample
from fabtop.core.history import CHART_SPAN_S, History, keeps_max
from fabtop.core.rates import HostRates, LinkRates
from fabtop.run.demo import demo_state
from tui.screens import link_detail, timeline
from tui.widgets.timeline_series import TRACKS, combine_series

T0 = 1_700_000_000.0
SIX_H = 6 * 3600.0


def test_no_view_charts_a_span_longer_than_the_maxima_are_kept_for() -> None:
    assert max(link_detail.SPANS.values()) <= CHART_SPAN_S
    assert max(timeline.SPANS.values()) <= CHART_SPAN_S


def test_every_series_a_view_charts_the_maxima_of_keeps_them() -> None:
    state, _, _ = demo_state(20.0, history_s=20.0)
    keys = list(state.history.keys())
    # the link detail at 6h: pauses per priority, congestion and loss
    detail = [(label, name) for label, name, _ in (*link_detail.CONGESTION, *link_detail.LOSS)]
    for _, name in detail:
        assert keeps_max(("n1", "eth0", name)), name
    for _, name in link_detail.PAUSES:
        assert keeps_max(("n1", "eth0", name, "3")), name
    # the timeline's spiky tracks, on every series of the demo they sum or max
    for track in TRACKS:
        if track.name in ("pause", "ecn", "drops"):
            matched = [k for k in keys if track.match(k)]
            assert matched and all(keeps_max(k) for k in matched), track.name
    # and nothing else: traffic, gauges and tokens are charted as means
    assert not any(keeps_max(k) for k in keys if k[-1] in ("rx_bps", "temperature_c"))


def test_a_one_second_spike_shows_at_6h_on_the_detail_and_the_timeline() -> None:
    hist = History()
    ecn, pause = "ecn_marked_per_s", "rx_pause_per_s"
    for i in range(2000):  # past the raw ring (15 min): 6h reads the 10-s tier
        spike = 100.0 if i == 1000 else 0.0
        link = LinkSample("eth0", netdev="eth0")
        sample = HostSample("n1", i, int((T0 + i) * 1e9), 100.0 + i, links={"eth0": link})
        rates = LinkRates(rates={ecn: spike, pause: {3: spike}})
        hist.record(T0 + i, sample, HostRates("n1", 1.0, False, {"eth0": rates}, {}))
    now = T0 + 1999
    for key in (("n1", "eth0", ecn), ("n1", "eth0", pause, "3")):
        s = hist.get(key)
        assert s is not None
        times, means = s.points(SIX_H, now=now)
        assert times[1] - times[0] == 10.0  # the 10-s tier
        assert max(v or 0.0 for v in means) == 10.0  # a mean hides it
        assert max(v or 0.0 for v in s.points(SIX_H, now=now, stat="max")[1]) == 100.0
    _, summed = combine_series(hist, [("n1", "eth0", ecn)], "sum", SIX_H, now, 10.0)
    assert max(v or 0.0 for v in summed) == 100.0  # the timeline at 6h keeps the spike
