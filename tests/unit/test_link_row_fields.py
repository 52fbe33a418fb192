"""link_row builds LinkRow positionally (1000 links a tick): each value must land in its
own field, and each column worked out when read (a property) from its own counters.
Every input here is distinct, so a swap of two arguments or two names shows."""

from __future__ import annotations

from collectors.samples import HostSample, LinkSample
from collectors.vocabulary import Derived, Metric
from fabtop.core.rates import HostRates, LinkRates
from fabtop.core.state import HostState
from tui.rows.links import link_row


def test_each_value_lands_in_its_own_field() -> None:
    link = LinkSample(
        "mlx5_0/1",
        link_layer="Ethernet",
        state="up",
        rate_gbps=100.0,
        temperature_c=61.0,
        kind="roce",
        metrics={Metric.RX_DISCARDS: 10, Metric.RX_PAUSE: {3: 20}, Metric.ECN_MARKED: 30},
    )
    base = LinkSample(
        "mlx5_0/1", metrics={Metric.RX_DISCARDS: 4, Metric.RX_PAUSE: {3: 5}, Metric.ECN_MARKED: 6}
    )
    rates = LinkRates(
        {
            Derived.RX_BPS: 40e9,
            Derived.TX_BPS: 30e9,
            Derived.RDMA_SHARE: 0.9,
            Metric.RX_DISCARDS.per_s: 1.0,
            Metric.RX_OUT_OF_BUFFER.per_s: 2.0,  # loss adds discards and these
            Metric.RX_PAUSE.per_s: {3: 3.0, 4: 4.0},  # pauses add priorities
            Metric.RX_PAUSE_GLOBAL.per_s: 5.0,
            Metric.TX_PAUSE.per_s: {3: 7.0},
            Metric.ECN_MARKED.per_s: 11.0,
            Metric.CNP_SENT.per_s: 13.0,
            Derived.RX_PAUSE_TIME_RATIO: {3: 0.25, 4: 0.5},
            Derived.TX_PAUSE_TIME_RATIO: {3: 0.125},
        },
        gap=True,
    )
    hs = HostState("n1", "n1")
    hs.sample = HostSample("n1", 1, 0, 1.0, links={link.id: link})
    hs.rates = HostRates("n1", 1.0, False, {link.id: rates}, {})
    row = link_row(hs, link, False, base)
    want = {
        "host": "n1",
        "lid": "mlx5_0/1",
        "kind": "roce",
        "link_layer": "Ethernet",
        "state": "up",
        "speed_gbps": 100.0,
        "rx_bps": 40e9,
        "tx_bps": 30e9,
        "line_ratio": 0.4,
        "rdma_share": 0.9,
        "loss_per_s": 3.0,
        "pause_rx_per_s": 12.0,
        "pause_tx_per_s": 7.0,
        "pause_time_ratio": 0.5,
        "ecn_per_s": 11.0,
        "cnp_per_s": 13.0,
        "temperature_c": 61.0,
        "gap": True,
        "live": False,
        "d_loss": 6.0,
        "d_pause_rx": 15.0,
        "d_ecn": 24.0,
    }
    assert {f: getattr(row, f) for f in want} == want
