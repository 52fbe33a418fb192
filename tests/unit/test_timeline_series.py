"""The timeline's bins kept between ticks equal the bins computed afresh from the history.

TrackBins reads only the points that came since its last call; a fresh TrackBins reads
every point of the span. They must agree after the raw ring came round (points trimmed),
a host that went silent and came back, a host forgotten and back with new series, and a
replay seek (a fresh, shorter history: no bin from the future may stay).
"""

from __future__ import annotations

import random

import pytest

from collectors.vocabulary import Derived, InferenceRate, Metric
from fabtop.core.history import History
from tui.widgets.timeline_series import TrackBins, width_for

T0 = 1_700_000_000.0
TIERS = ((1.0, 120), (10.0, 60), (60.0, 60))  # a raw ring of 2 min: it comes round
SPAN = 60.0
HOSTS = ("n1", "n2", "n3")
LINKS = ("eth0", "eth1")


def feed(hist: History, t: float, rng: random.Random, hosts: tuple[str, ...] = HOSTS) -> None:
    """One tick of every host: tokens, drops (summed), pause time (the worst)."""
    for host in hosts:
        hist.series((host, "http://x", InferenceRate.GENERATED_TOKENS_PER_S)).append(
            t, rng.uniform(0, 1000)
        )
        for link in LINKS:
            gap = rng.random() < 0.1  # a hole inside a bin: the other points' mean
            drops = None if gap else rng.choice([0.0, 0.0, rng.uniform(0, 50)])
            hist.series((host, link, Metric.RX_DISCARDS.per_s)).append(t, drops)
            ratio = None if gap else rng.random()
            hist.series((host, link, Derived.TX_PAUSE_TIME_RATIO, "")).append(t, ratio)


def same(kept: TrackBins, hist: History, span: float, width: float) -> None:
    now, got = kept.series(hist, span, width)
    fresh_now, want = TrackBins().series(hist, span, width)
    assert now == fresh_now
    assert now is not None
    assert got.keys() == want.keys()
    for name in want:
        times, values = got[name]
        assert times == want[name][0], name
        assert values == pytest.approx(want[name][1], nan_ok=True), name
        assert max(times) <= now  # nothing after the newest point


@pytest.mark.parametrize("width", [1.0, width_for(SPAN, 9)])
def test_kept_bins_equal_fresh_ones_after_the_ring_came_round(width: float) -> None:
    rng = random.Random(7)
    hist = History(tiers=TIERS)
    kept = TrackBins()
    for i in range(300):  # 300 s through a 120-slot ring
        feed(hist, T0 + i + 0.25, rng)
        kept.series(hist, SPAN, width)
        if i % 37 == 0:
            same(kept, hist, SPAN, width)
    same(kept, hist, SPAN, width)
    _, shown = kept.series(hist, SPAN, width)
    assert any(v for v in shown["drops"][1])


def test_a_host_silent_then_back_and_one_forgotten_then_back() -> None:
    rng = random.Random(11)
    hist = History(tiers=TIERS)
    kept = TrackBins()
    width = width_for(SPAN, 20)
    t = T0
    for i in range(200):
        t = T0 + i
        if 60 <= i < 90:
            hosts = ("n1", "n3")  # n2 silent for 30 s: its series stay, without points
        elif 120 <= i < 140:
            hosts = ("n1", "n2")
        else:
            hosts = HOSTS
        if i == 120:
            hist.forget(["n3"])  # removed, then back with new series at 140
        feed(hist, t, rng, hosts)
        kept.series(hist, SPAN, width)
        if i in (75, 95, 125, 145, 199):
            same(kept, hist, SPAN, width)


def test_a_replay_seek_back_keeps_no_bin_from_the_future() -> None:
    width = width_for(SPAN, 20)
    live = History(tiers=TIERS)
    rng = random.Random(3)
    kept = TrackBins()
    for i in range(200):  # the timeline open from the start
        feed(live, T0 + i, rng)
        kept.series(live, SPAN, width)
    # The replay re-feeds from the start into a fresh history, up to an earlier time
    # (other values here: what is shown must come from it alone).
    seeked = History(tiers=TIERS)
    rng = random.Random(4)
    for i in range(150):
        feed(seeked, T0 + i, rng)
    same(kept, seeked, SPAN, width)
    # and on from there, tick by tick
    for i in range(150, 170):
        feed(seeked, T0 + i, rng)
        kept.series(seeked, SPAN, width)
    same(kept, seeked, SPAN, width)


def test_a_link_forgotten_while_its_host_stays() -> None:
    rng = random.Random(9)
    hist = History(tiers=TIERS)
    kept = TrackBins()
    width = width_for(SPAN, 20)
    for i in range(100):
        feed(hist, T0 + i, rng)
        kept.series(hist, SPAN, width)
    # as History's prune forgets a link not reported for 15 min: its series go
    every = list(hist.keys())
    hist._drop([k for k in every if k[:2] == ("n2", "eth1")])
    same(kept, hist, SPAN, width)


def test_what_is_kept_stays_within_the_span() -> None:
    """Ticks on and on keep no more bins than the span shows (per host and cluster-wide)."""
    rng = random.Random(5)
    hist = History(tiers=TIERS)
    kept = TrackBins()
    width = width_for(SPAN, 20)
    for i in range(2000):
        feed(hist, T0 + i, rng)
        kept.series(hist, SPAN, width)
    shown = int(SPAN // width) + 2
    for track in kept._tracks.values():
        assert len(track.closed) <= shown
        assert all(len(h.closed) <= shown for h in track.hosts.values())


def test_since_says_when_the_ring_no_longer_holds_every_point_since() -> None:
    """A timeline hidden longer than the raw ring holds starts its hosts over when shown."""
    s = History(tiers=TIERS).series(("n1", "eth0", Metric.RX_DISCARDS.per_s))
    for i in range(100):
        s.append(T0 + i, float(i))
    got = s.since(T0 + 97)
    assert got == ([T0 + 98, T0 + 99], [98.0, 99.0])
    for i in range(100, 300):  # 200 s through a ring of 120 slots
        s.append(T0 + i, float(i))
    assert s.since(T0 + 99) is None  # 100 .. 179 are gone
    assert s.since(T0 + 297) == ([T0 + 298, T0 + 299], [298.0, 299.0])
