"""A small hand-fed fabric for the UI tests: deterministic, no wall clock, no transports.

Samples go through the real rate engine and history (as FabricState.apply_frame does
after assembling a frame), so the screens read exactly what they read live.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from collectors.samples import HostSample, LinkSample
from fabtop.config import HostConfig
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState

if TYPE_CHECKING:
    from tui.app import FabtopApp

T0 = 1_700_000_000.0  # remote unix time of the first frame


@dataclass
class FakeClock:
    """The local monotonic clock, moved by hand."""

    t: float = 1000.0

    def __call__(self) -> float:
        return self.t


def _bytes(tick: int, gbps: float, wobble: float) -> int:
    # cumulative: every tick adds gbps (+ a small repeating wobble) worth of bytes
    return int(sum(gbps + wobble * (k % 5) for k in range(tick)) * 1e9 / 8)


def _roce(
    lid: str,
    tick: int,
    rx_gbps: float,
    tx_gbps: float,
    wobble: float,
    *,
    pause_p3: int = 0,
    paused_us_p3: int = 0,
    loss: int = 0,
) -> LinkSample:
    """A RoCE port: rx wobbling by ``wobble``, a steady tx, ``pause_p3`` pause frames/s
    received on priority 3, paused ``paused_us_p3`` microseconds of every second (mlx5's
    pause duration counter), ``loss`` drops/s.
    """
    rx = _bytes(tick, rx_gbps, wobble)
    tx = _bytes(tick, tx_gbps, 0.0)
    pause, paused_us = tick * pause_p3, tick * paused_us_p3
    counters = {
        "ethtool": {
            "rx_bytes_phy": rx,
            "tx_bytes_phy": tx,
            "rx_prio3_pause": pause,
            "tx_prio3_pause": 0,
            "rx_prio3_pause_duration": paused_us,
            "tx_prio3_pause_duration": 0,
            "rx_discards_phy": tick * loss,
            "rx_pause_ctrl_phy": 0,
        },
        "ib_hw": {"np_ecn_marked_roce_packets": tick * 40, "np_cnp_sent": tick * 20},
    }
    metrics = {
        "rx_bytes": rx,
        "tx_bytes": tx,
        "rdma_rx_bytes": int(rx * 0.9),
        "rdma_tx_bytes": int(tx * 0.9),
        "rx_pause": {3: pause},
        "tx_pause": {3: 0},
        "rx_pause_us": {3: paused_us},
        "tx_pause_us": {3: 0},
        "rx_discards": tick * loss,
        "ecn_marked": tick * 40,
        "cnp_sent": tick * 20,
    }
    return LinkSample(
        id=lid,
        netdev=lid,
        rdma_device="mlx5_0",
        port=1,
        link_layer="Ethernet",
        state="up",
        rate_gbps=400.0,
        mtu=4200,
        driver="mlx5_core",
        firmware="28.39.1002",
        temperature_c=61.0,
        physical=True,
        kind="roce",
        counters=counters,
        metrics=metrics,  # type: ignore[arg-type]
    )


def _lo(tick: int) -> LinkSample:
    return LinkSample(
        id="lo",
        netdev="lo",
        state="up",
        kind="virtual",
        counters={"netdev": {"rx_bytes": tick * 1000}},
        metrics={"rx_bytes": tick * 1000, "tx_bytes": tick * 1000},
    )


def sample(host: str, tick: int) -> HostSample:
    """Host ``host`` at tick ``tick``: node3's first port is in a PFC storm on priority 3.

    The switch pauses it 99.5 % of the time (90k pause frames/s) so its tx is flat
    (0.2 Gb/s, under the rules' 2 % of line rate) while rx still arrives, and it drops.
    """
    if host == "node3":
        port0 = _roce(
            "enp65s0f0np0", tick, 40.0, 0.2, 10.0, pause_p3=90_000, paused_us_p3=995_000, loss=12
        )
    else:
        port0 = _roce("enp65s0f0np0", tick, 120.0, 96.0, 10.0)
    links = {
        "enp65s0f0np0": port0,
        "enp65s0f1np1": _roce("enp65s0f1np1", tick, 30.0, 24.0, 0.0),
        "lo": _lo(tick),
    }
    return HostSample(
        host=host, seq=tick, clock_ns=int((T0 + tick) * 1e9), uptime_s=5000.0 + tick, links=links
    )


def feed(state: FabricState, host: str, s: HostSample, clock: FakeClock) -> None:
    """What apply_frame does after assembling: the pipeline's rates and history, the rules
    (the real ones, ``fabtop.core.rules``)."""
    del clock  # the state's own clock (the same FakeClock) stamps the arrival
    state.apply_sample(host, s)


def fabric(hosts: int = 3, ticks: int = 30) -> tuple[FabricState, FakeClock]:
    """``hosts`` hosts fed ``ticks`` one-second frames; the clock stands at the last one."""
    clock = FakeClock()
    names = [f"node{i + 1}" for i in range(hosts)]
    state = FabricState([HostConfig(name=n) for n in names], rules=make_evaluator(), clock=clock)
    for tick in range(1, ticks + 1):
        clock.t += 1.0
        for n in names:
            feed(state, n, sample(n, tick), clock)
    return state, clock


def dashboard(
    hosts: int = 3, ticks: int = 20, interval: float = 1.0
) -> tuple[FabtopApp, FabricState, FakeClock]:
    """The dashboard over :func:`fabric` (no session: the test feeds the state)."""
    from tui.app import FabtopApp
    from tui.context import ViewContext

    state, clock = fabric(hosts, ticks)
    return FabtopApp(ViewContext(state, interval=interval, clock=clock)), state, clock


def words(text: str) -> str:
    """``text`` with every run of whitespace as one space (wrapped lines compare whole)."""
    return " ".join(text.split())
