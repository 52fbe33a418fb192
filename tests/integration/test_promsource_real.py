"""``--from-prometheus`` against a real Prometheus scraping exporters served from the test.

Four exporters on loopback, as a node would run them: node_exporter-like targets on
``localhost`` (ethtool counters and a tenant's ``+Inf`` textfile sample) and a
dcgm-exporter-like one beside it, which make one host; two node_exporter-like targets on
``127.0.0.1`` with counters of their own, which must stay two hosts. Prometheus scrapes
them each second; the waits below are for its scrapes, never for simulated time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fabtop.config import Config
from fabtop.run.compose import fabric_state
from fabtop.run.demo import ManualClock
from fabtop.run.promsource import PrometheusSource
from tests.integration.httpd import QuietHandler, serve
from tests.testbed.prometheus import prometheus, query, wait_for

# What each exporter serves, by name; the ports are the kernel's.
PAGES = {
    "node": (  # node_exporter: ethtool counters, and a tenant textfile's +Inf sample
        "# TYPE node_ethtool_received_bytes_phy untyped\n"
        'node_ethtool_received_bytes_phy{device="eth0"} 1000\n'
        'node_ethtool_received_prio3_pause{device="eth0"} 12\n'
        'node_ethtool_x{device="eth0"} +Inf\n'
        'node_ethtool_received_packets_phy{device="eth0"} NaN\n'
    ),
    "dcgm": (  # dcgm-exporter on the same machine
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1"} 71\n'
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-1"} 350.5\n'
    ),
    "c": 'node_ethtool_received_bytes_phy{device="eth0"} 1000\n',  # two node_exporters
    "d": 'node_ethtool_received_bytes_phy{device="eth0"} 9000\n',  # on one machine
}


@dataclass
class Prom:
    url: str
    ports: dict[str, int]
    stop: dict[str, Callable[[], None]]


def _handler(page: str) -> type[QuietHandler]:
    class Page(QuietHandler):
        def do_GET(self) -> None:
            self.reply(page.encode())

    return Page


@pytest.fixture
def prom(tmp_path: Path) -> Iterator[Prom]:
    with contextlib.ExitStack() as stack:
        ports: dict[str, int] = {}
        stop: dict[str, Callable[[], None]] = {}
        for name, page in PAGES.items():
            exporter = contextlib.ExitStack()
            ports[name] = exporter.enter_context(serve(_handler(page)))
            stop[name] = exporter.close
            stack.callback(exporter.close)
        targets = {
            "node": [
                f"localhost:{ports['node']}",
                f"127.0.0.1:{ports['c']}",
                f"127.0.0.1:{ports['d']}",
            ],
            "dcgm": [f"localhost:{ports['dcgm']}"],
        }
        url = stack.enter_context(prometheus(tmp_path, targets))
        wait_for(
            "every series scraped",
            lambda: (
                len(query(url, "node_ethtool_x")) == 1
                and len(query(url, "DCGM_FI_DEV_GPU_TEMP")) == 1
            ),
        )
        yield Prom(url, ports, stop)


async def test_a_real_prometheus_with_an_inf_sample_and_exporters_sharing_machines(
    prom: Prom,
) -> None:
    clock = ManualClock()
    src = PrometheusSource(prom.url, interval=1.0, clock=clock, forget_after=30.0)
    src.state = st = fabric_state(Config(hosts=[], interval=1.0), clock=clock)
    assert await src.poll_once() == 3
    # Answered: no "did not answer", whatever +Inf and NaN it held.
    assert src.error is None and st.sources[src.name].up
    assert not [f for f in st.findings if f.rule.startswith("source_")]
    c, d = f"127.0.0.1:{prom.ports['c']}", f"127.0.0.1:{prom.ports['d']}"
    assert sorted(st.hosts) == sorted(["localhost", c, d])
    # node_exporter and dcgm-exporter of one machine: one host, both families on it
    node = st.hosts["localhost"]
    assert node.sample is not None
    (eth0,) = [ln for ln in node.sample.links.values() if ln.netdev == "eth0"]
    assert eth0.counters["ethtool"] == {"rx_bytes_phy": 1000, "rx_prio3_pause": 12}
    assert node.sample.gpus[0].temperature_c == 71
    assert "localhost: node_ethtool_x{device=eth0}: +Inf dropped" in node.warnings
    assert "localhost: node_ethtool_received_packets_phy{device=eth0}: NaN dropped" in (
        node.warnings
    )
    # two node_exporters of one machine: two hosts, each with its own counter
    for host, value in ((c, 1000), (d, 9000)):
        hs = st.hosts[host]
        assert hs.sample is not None
        (link,) = hs.sample.links.values()
        assert link.counters["ethtool"] == {"rx_bytes_phy": value}

    # One exporter goes: Prometheus marks its series stale; its host is forgotten later.
    prom.stop["d"]()
    wait_for(
        "d's series gone",
        lambda: all(
            r["metric"]["instance"] != d for r in query(prom.url, "node_ethtool_received_bytes_phy")
        ),
    )
    clock.t += 10
    await src.poll_once()
    assert d in st.hosts  # kept for forget_after: it may come back
    clock.t += 25
    await src.poll_once()
    # d forgotten, c is the one exporter of its family on 127.0.0.1: the machine again
    assert sorted(st.hosts) == ["127.0.0.1", "localhost"]
    assert not [f for f in st.findings if f.host in (c, d)]
    assert sorted(h.name for h in src.config.hosts) == ["127.0.0.1", "localhost"]
    hs = st.hosts["127.0.0.1"]
    assert hs.sample is not None
    (link,) = hs.sample.links.values()
    assert link.counters["ethtool"] == {"rx_bytes_phy": 1000}
