"""``--from-prometheus`` over a stock node_exporter, as most users run it: Debian's
``prometheus-node-exporter`` with its default collectors (no ``--collector.ethtool``),
scraped by a real Prometheus and by a real VictoriaMetrics, read back through each.

node_exporter runs in a network namespace of its own, so the netdevs it exports are known
(``lo`` and one end of a veth pair); it listens on that veth, so both scrapers reach it
through the pair, and the bytes the test sends over it must show as throughput. One
namespace, exporter, Prometheus and VictoriaMetrics for the module; the waits are for
their scrapes (real time by nature), never for simulated time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import socket
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from fabtop.config import Config
from fabtop.core.coverage import calm_line, coverage
from fabtop.run.compose import fabric_state
from fabtop.run.demo import ManualClock
from fabtop.run.promsource import PrometheusSource
from tests.conftest import skip_or_fail
from tests.integration.sshd import free_port
from tests.testbed.prometheus import prometheus, query, wait_for
from tests.testbed.victoria import flushed, victoria

EXPORTER = "/usr/bin/prometheus-node-exporter"


@dataclass
class Bed:
    target: str  # the exporter's instance, ADDRESS:PORT
    host: str  # the host fabtop names for it
    veth: str  # the namespace's end of the pair: the netdev the host shows
    peer: str  # the pair's address in the namespace: where the bytes go
    urls: dict[str, str]  # scraper -> base URL

    def rx_bytes(self, scraper: str) -> float:
        """The veth's received bytes as the scraper has them now (-1: none yet)."""
        url = self.urls[scraper]
        if scraper == "victoria":
            flushed(url)
        got = query(url, f'node_network_receive_bytes_total{{device="{self.veth}"}}')
        return float(got[0]["value"][1]) if got else -1.0  # type: ignore[index]


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True, timeout=30)


@contextlib.contextmanager
def _namespace(tmp: Path) -> Iterator[tuple[str, str, str]]:
    """A namespace with a veth to the root one and node_exporter on it: (target, veth,
    its address)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        skip_or_fail("network namespaces need root and iproute2")
    if not os.access(EXPORTER, os.X_OK):
        skip_or_fail(f"{EXPORTER} missing (apt-get install prometheus-node-exporter)")
    tag = secrets.token_hex(3)
    ns, outer, inner = f"fabtne-{tag}", f"fne{tag}o", f"fne{tag}i"
    net = f"10.{200 + int(tag[:2], 16) % 50}.{int(tag[2:4], 16)}"
    port = free_port()
    with contextlib.ExitStack() as stack:
        _ip("netns", "add", ns)
        stack.callback(subprocess.run, ["ip", "netns", "del", ns], capture_output=True)
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns)
        stack.callback(subprocess.run, ["ip", "link", "del", outer], capture_output=True)
        _ip("addr", "add", f"{net}.1/30", "dev", outer)
        _ip("link", "set", outer, "up")
        for args in (("addr", "add", f"{net}.2/30", "dev", inner), ("link", "set", inner, "up")):
            _ip("netns", "exec", ns, "ip", *args)
        _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        textfiles = tmp / "textfile"
        textfiles.mkdir(parents=True)
        log = stack.enter_context((tmp / "node_exporter.log").open("wb"))
        argv = [EXPORTER, f"--web.listen-address={net}.2:{port}"]
        argv.append(f"--collector.textfile.directory={textfiles}")  # empty: none to read
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, *argv],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        stack.callback(proc.wait, 20)
        stack.callback(proc.terminate)
        yield f"{net}.2:{port}", inner, f"{net}.2"


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    tmp = tmp_path_factory.mktemp("promnet")
    with contextlib.ExitStack() as stack:
        target, veth, peer = stack.enter_context(_namespace(tmp / "ns"))
        jobs = {"node": [target]}
        vm = stack.enter_context(contextlib.ExitStack())  # closed after Prometheus
        # Both start at once: each waits a scrape or two for the exporter to be up.
        with ThreadPoolExecutor(1) as pool:
            vm_url = pool.submit(vm.enter_context, victoria(tmp / "victoria", jobs))
            prom_url = stack.enter_context(prometheus(tmp / "prometheus", jobs))
            urls = {"prometheus": prom_url, "victoria": vm_url.result()}
        yield Bed(target, target.rsplit(":", 1)[0], veth, peer, urls)


def _send(addr: str, n: int) -> None:
    """``n`` bytes of UDP to the namespace (nothing listens: the veth counts them all)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _ in range(n // 1000):
            s.sendto(b"x" * 1000, (addr, 9))


@pytest.mark.parametrize("scraper", ["prometheus", "victoria"])
async def test_a_stock_node_exporter_gives_the_host_its_netdevs_and_throughput(
    bed: Bed, scraper: str
) -> None:
    url = bed.urls[scraper]
    wait_for(f"{scraper} has the veth's counters", lambda: bed.rx_bytes(scraper) >= 0)
    clock = ManualClock()
    src = PrometheusSource(url, interval=1.0, clock=clock)
    src.state = st = fabric_state(Config(hosts=[], interval=1.0), clock=clock)
    # A store may answer the first query before every family of the first scrape is
    # searchable (VictoriaMetrics under load): wait for the source to read the host, as
    # the dashboard's next poll would.
    for _ in range(100):
        if scraper == "victoria":
            flushed(url)
        if await src.poll_once() == 1:
            break
        await asyncio.sleep(0.1)
    assert src.error is None and list(st.hosts) == [bed.host]
    hs = st.hosts[bed.host]
    assert hs.sample is not None
    # its netdevs, the loopback left out; a veth is virtual, as the probe shows it
    (link,) = hs.sample.links.values()
    assert (link.netdev, link.kind, link.state, link.mtu) == (bed.veth, "virtual", "up", 1500)
    counters = link.counters["netdev"]
    for name in ("rx_bytes", "tx_bytes", "rx_dropped", "tx_dropped", "rx_errors", "tx_errors"):
        assert name in counters
    # what a stock node_exporter lacks is said, with the switch that brings it
    gaps = coverage(st, clock(), 1.0).gaps
    assert f"GPUs not monitored on {bed.host} (GPU series need dcgm-exporter)" in gaps
    assert f"PFC/ECN counters not read on {bed.host} (node_exporter needs --collector.ethtool)" in (
        gaps
    )

    # bytes sent over the pair show as throughput once a scrape has them
    before = bed.rx_bytes(scraper)
    _send(bed.peer, 2_000_000)
    wait_for(f"{scraper} scraped the bytes", lambda: bed.rx_bytes(scraper) > before + 2e6)
    clock.t += 5
    # A poll whose answer is no newer than the last one's ("no newer scrape") feeds
    # nothing: with VictoriaMetrics that was 1 run in 2 under load, the bytes already
    # queryable. The dashboard's next poll feeds it; so does this loop.
    for _ in range(30):
        if (fed := await src.poll_once()) == 1:
            break
        await asyncio.sleep(0.1)
    assert fed == 1
    rates = hs.rates.links[link.id].rates if hs.rates is not None else {}
    assert rates["rx_bytes_per_s"] > 100_000
    assert rates["rx_discards_per_s"] == 0 and rates["rx_phy_errors_per_s"] == 0
    assert calm_line(coverage(st, clock(), 1.0)).startswith("no problems in what was seen; ")
