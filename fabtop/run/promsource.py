"""``--from-prometheus URL``: watch hundreds of nodes through Prometheus instead of SSH.

Each interval, instant queries to ``URL/api/v1/query`` fetch node_exporter's
InfiniBand and ethtool series and dcgm-exporter's GPU series. The values of one
``instance`` are written back into a probe frame (the sysfs lines and ``ethtool -S``
text they came from, the ``nvidia-smi`` CSV fields they match), and that frame goes
through FabricState.apply_frame: the live code path, so rates, rules and screens need
nothing special. The frame's clock is the newest sample timestamp Prometheus returned.

Metric names come from the exporters' own source:
- node_exporter ``collector/infiniband_linux.go``: ``node_infiniband_<name>{device,port}``;
  procfs multiplies ``port_rcv_data``/``port_xmit_data`` by 4 (octets), so they are
  divided back here before the sysfs line is written.
- node_exporter ``collector/ethtool_linux.go``: ``node_ethtool_<stat>{device}`` where
  ``buildEthtoolFQName`` lower-cases the stat and rewrites ``rx``/``tx`` words to
  ``received``/``transmitted`` (``rx_prio3_pause`` -> ``node_ethtool_received_prio3_pause``).
- dcgm-exporter ``etc/default-counters.csv``: ``DCGM_FI_DEV_*{gpu,UUID,...}``.

The source says how its own polls fare into the state (``FabricState.source_status``):
a Prometheus that does not answer is a critical finding and ``fabtop_source_up 0``,
never an empty fabric that looks healthy.
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.parse
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from collectors.frames import Frame, Section
from collectors.guard import Guard, failure_line
from collectors.text import clean
from fabtop.config import Config, ConfigError, HostConfig
from fabtop.core.state import FabricState, SourceState

# node_infiniband_<name> -> sysfs counter file under ports/<n>/counters (infiniband_linux.go).
IB_COUNTERS: dict[str, tuple[str, int]] = {
    "port_data_received_bytes_total": ("port_rcv_data", 4),
    "port_data_transmitted_bytes_total": ("port_xmit_data", 4),
    "port_packets_received_total": ("port_rcv_packets", 1),
    "port_packets_transmitted_total": ("port_xmit_packets", 1),
    "port_transmit_wait_total": ("port_xmit_wait", 1),
    "port_discards_received_total": ("port_rcv_discards", 1),
    "port_discards_transmitted_total": ("port_xmit_discards", 1),
    "port_errors_received_total": ("port_rcv_errors", 1),
    "port_constraint_errors_received_total": ("port_rcv_constraint_errors", 1),
    "port_constraint_errors_transmitted_total": ("port_xmit_constraint_errors", 1),
    "link_downed_total": ("link_downed", 1),
    "link_error_recovery_total": ("link_error_recovery", 1),
}
IB_STATES = {1: "1: DOWN", 2: "2: INIT", 3: "3: ARMED", 4: "4: ACTIVE", 5: "5: ACTIVE_DEFER"}

# DCGM field -> nvidia-smi --query-gpu field the nvidia_smi parser reads (default-counters.csv).
DCGM_FIELDS: dict[str, str] = {
    "DCGM_FI_DEV_GPU_UTIL": "utilization.gpu",
    "DCGM_FI_DEV_FB_USED": "memory.used",
    "DCGM_FI_DEV_POWER_USAGE": "power.draw",
    "DCGM_FI_DEV_GPU_TEMP": "temperature.gpu",
    "DCGM_FI_DEV_MEMORY_TEMP": "temperature.memory",
    "DCGM_FI_DEV_SM_CLOCK": "clocks.sm",
    "DCGM_FI_DEV_MEM_CLOCK": "clocks.mem",
}

QUERIES = (
    '{__name__=~"node_infiniband_.+"}',
    '{__name__=~"node_ethtool_.+"}',
    '{__name__=~"DCGM_FI_DEV_.+"}',
)

_WORD = re.compile(r"(^|_)(received|transmitted)(_|$)")


def ethtool_stat_name(metric: str) -> str:
    """The ``ethtool -S`` stat a ``node_ethtool_*`` metric came from (rx/tx words restored)."""
    name = metric.removeprefix("node_ethtool_")
    return _WORD.sub(lambda m: m.group(1) + ("rx" if m.group(2) == "received" else "tx")
                     + m.group(3), name)


def instance_host(instance: str) -> str:
    """``node7:9100`` -> ``node7`` (the host name fabtop shows)."""
    host = instance.rsplit(":", 1)[0] if instance.count(":") == 1 else instance
    host = host.strip("[]")
    return re.sub(r"[^A-Za-z0-9_.-]", "_", host)[:64] or "unknown"


@dataclass(slots=True)
class HostSeries:
    """What the queries returned for one instance, grouped as the probe would print it."""

    t: float = 0.0
    ib: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    ethtool: dict[str, dict[str, float]] = field(default_factory=dict)
    gpus: dict[str, dict[str, float]] = field(default_factory=dict)


def group_series(results: list[dict[str, Any]]) -> dict[str, HostSeries]:
    """Instant-vector results (``data.result``) grouped per host."""
    hosts: dict[str, HostSeries] = defaultdict(HostSeries)
    for r in results:
        labels = r.get("metric", {})
        name = str(labels.get("__name__", ""))
        try:
            ts, raw = r["value"]
            value = float(raw)
        except (KeyError, TypeError, ValueError):
            continue
        if value != value:  # NaN: nothing to say
            continue
        hs = hosts[instance_host(str(labels.get("instance", "unknown")))]
        hs.t = max(hs.t, float(ts))
        if name.startswith("node_infiniband_"):
            key = (str(labels.get("device", "")), str(labels.get("port", "1")))
            hs.ib.setdefault(key, {})[name.removeprefix("node_infiniband_")] = value
        elif name.startswith("node_ethtool_") and labels.get("device"):
            if name != "node_ethtool_info":
                hs.ethtool.setdefault(str(labels["device"]), {})[ethtool_stat_name(name)] = value
        elif name.startswith("DCGM_FI_DEV_"):
            gpu = str(labels.get("gpu", "0"))
            hs.gpus.setdefault(gpu, {})[name] = value
    return dict(hosts)


def _safe(name: str) -> bool:
    return re.fullmatch(r"[A-Za-z0-9_.:@-]{1,64}", name) is not None


def render_host(series: HostSeries, seq: int) -> Frame:
    """The probe frame these series stand for (see docs/PROBE.md)."""
    clock_ns = int(series.t * 1e9)
    read = clock_ns
    sections: list[Section] = []
    ib_lines = []
    for (dev, port), vals in sorted(series.ib.items()):
        if not (_safe(dev) and port.isdigit()):
            continue
        base = f"{dev}/ports/{port}"
        ib_lines.append(f"{base}/link_layer InfiniBand")
        state = vals.get("state_id")
        if state is not None and int(state) in IB_STATES:
            ib_lines.append(f"{base}/state {IB_STATES[int(state)]}")
        rate = vals.get("rate_bytes_per_second")
        if rate:
            ib_lines.append(f"{base}/rate {rate * 8 / 1e9:g} Gb/sec")
        for metric, (counter, scale) in IB_COUNTERS.items():
            v = vals.get(metric)
            if v is not None:
                ib_lines.append(f"{base}/counters/{counter} {int(v) // scale}")
    if ib_lines:
        sections.append(Section("sysib", None, read, "ok", None, "\n".join(ib_lines)))
    # node_exporter's ethtool collector only covers devices with a driver behind them, so
    # each is a physical netdev: the probe marks those with a `<if>/device -` line.
    net_lines = [f"{dev}/device -" for dev in sorted(series.ethtool)
                 if _safe(dev)]
    if net_lines:
        sections.append(Section("sysnet", None, read, "ok", None, "\n".join(net_lines)))
    for dev, stats in sorted(series.ethtool.items()):
        if not _safe(dev):
            continue
        rows = (f"     {k}: {int(v)}" for k, v in sorted(stats.items()))
        body = "NIC statistics:\n" + "\n".join(rows)
        sections.append(Section("ethtool_S", dev, read, "ok", None, body))
    if series.gpus:
        fields = ["index", "uuid", *DCGM_FIELDS.values()]
        lines = ["# " + ",".join(fields)]
        for gpu, vals in sorted(series.gpus.items(), key=lambda kv: kv[0]):
            row = [gpu, f"GPU-prom-{gpu}"]
            for dcgm in DCGM_FIELDS:
                v = vals.get(dcgm)
                row.append("[N/A]" if v is None else f"{v:g}")
            lines.append(", ".join(row))
        sections.append(Section("gpu_nvidia", None, read, "ok", None, "\n".join(lines)))
    sections.append(Section("probe", None, None, "ok", None, "source prometheus"))
    return Frame(seq, clock_ns, series.t, series.t, sections)


def display_url(url: str) -> str:
    """``url`` as shown to people: no ``user:password@``, no query."""
    u = urllib.parse.urlsplit(url)
    host = u.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{u.port}" if u.port is not None else ""
    except ValueError:
        port = ""
    return clean(f"{u.scheme}://{host}{port}{u.path}".rstrip("/"), 200)


def fetch_query(base_url: str, query: str, timeout: float) -> list[dict[str, Any]]:
    """One instant query; raises OSError/ValueError on transport or API errors."""
    url = base_url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        doc = json.loads(resp.read(64 * 1024 * 1024))
    if doc.get("status") != "success":
        raise ValueError(f"{base_url}: query failed: {doc.get('error', doc.get('status'))}")
    data = doc.get("data", {})
    if data.get("resultType") != "vector":
        raise ValueError(f"{base_url}: expected an instant vector, got {data.get('resultType')}")
    result: list[dict[str, Any]] = data.get("result", [])
    return result


class PrometheusSource:
    """A Session stand-in: ``run()`` polls Prometheus and applies one frame per instance."""

    def __init__(self, url: str, interval: float = 5.0,
                 fetch: Callable[[str, str, float], list[dict[str, Any]]] = fetch_query) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"--from-prometheus {url!r}: want an http(s):// URL")
        self.url = url
        self.name = f"Prometheus at {display_url(url)}"
        self.interval = interval
        self.fetch = fetch
        self._state: FabricState | None = None
        self.on_change: Callable[[], None] | None = None
        self.error: str | None = None
        self._seq = 0
        self._stopping = False
        self._last_t: dict[str, float] = {}
        # Hosts are whatever instances Prometheus knows; the list grows as they appear.
        self.config = Config(hosts=[], interval=interval, source=url)

    @property
    def state(self) -> FabricState | None:
        """The state this source feeds (set by whoever runs it)."""
        return self._state

    @state.setter
    def state(self, state: FabricState | None) -> None:
        self._state = state
        if state is not None:  # known from the start: "waiting for its first answer"
            state.sources.setdefault(self.name, SourceState(self.name, check=self._check()))
            # Instant queries are stamped with their evaluation time, so every answered
            # poll is a frame per host: staleness is the poll's, whatever the scrape rate.
            state.interval = self.interval

    async def poll_once(self) -> int:
        """One round of queries; return how many hosts got a new frame."""
        try:
            results: list[dict[str, Any]] = []
            for q in QUERIES:
                results += await asyncio.to_thread(self.fetch, self.url, q, self.interval * 2)
        except (OSError, ValueError) as e:
            # The server's error text is remote text: failure_line cleans and bounds it.
            self._failed(failure_line(display_url(self.url), e))
            return 0
        self._answered()
        return self.apply(group_series(results))

    def _answered(self) -> None:
        self.error = None
        if self.state is not None:
            self.state.source_status(self.name, None, check=self._check())

    def _failed(self, line: str) -> None:
        self.error = line
        if self.state is not None:
            shown = display_url(self.url)
            # The line starts with the URL the finding already names.
            self.state.source_status(self.name, line.removeprefix(f"{shown}: "),
                                     check=self._check())
            if self.on_change is not None:
                self.on_change()

    def _check(self) -> str:
        return f"curl -s '{display_url(self.url)}/api/v1/query?query=up'"

    def apply(self, grouped: dict[str, HostSeries]) -> int:
        """Feed one frame per host whose samples moved since the last poll."""
        st = self.state
        if st is None:
            return 0
        st.evaluate_per_frame = False  # rules once per poll, not once per host
        n = 0
        for host, series in sorted(grouped.items()):
            if host not in st.hosts:
                hc = HostConfig(name=host)
                self.config.hosts.append(hc)
                st.add_host(hc, target=f"prometheus:{host}")
            if series.t <= self._last_t.get(host, 0.0):
                continue  # Prometheus has no newer scrape of this node yet
            self._last_t[host] = series.t
            self._seq += 1
            st.apply_frame(host, render_host(series, self._seq))
            n += 1
        if n:
            st.evaluate()
        if self.on_change is not None:
            self.on_change()
        return n

    async def run(self) -> None:
        """Poll until stopped; a round that fails in any way is an error line, not the end."""
        guard = Guard(f"{self.url}: poll failed")
        while not self._stopping:
            with guard:  # an answer of an odd shape (a list for an object, say)
                await self.poll_once()
            if guard.error is not None:
                self._failed(guard.error)
            await asyncio.sleep(self.interval)

    async def stop(self) -> None:
        """Stop polling."""
        self._stopping = True
