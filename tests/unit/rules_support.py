"""A hand-fed fabric for the rule tests: ports whose counters grow at the rates a test sets.

Samples go through the core's Pipeline (rates and history), as ``FabricState.apply_frame``
does after assembling a frame, so the rules read exactly what they read live.

A port's counters read at slow cadence (the FEC's, on optics rounds) carry a read time, as
the probes' frames do. Grown at a rate (``Port.set``), they are read on every tick; set by
the test itself (``port.metrics[...] = n``, an optics round), they are read on the tick that
changed them and carried with that read time until the next change. A test that means
otherwise gives ``slow_read_ns`` in the port's fields.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from collectors.normalize import SLOW_METRICS
from collectors.samples import (
    GpuSample,
    HostSample,
    InferenceSample,
    LinkSample,
    MetricValue,
    PcieLink,
    QosConfig,
    SoftwareVersions,
)
from fabtop.core.findings import Finding
from fabtop.core.pipeline import Pipeline
from fabtop.core.rates import HostRates
from fabtop.core.rules import Evaluator

T0 = 1_700_000_000.0
GBPS = 1e9 / 8  # bytes per second in one Gb/s


@dataclass
class Host:
    """What the rules read of a host (the shape of fabtop.core.state.HostState)."""

    name: str
    status: str = "up"
    sample: HostSample | None = None
    rates: HostRates | None = None


class Fabric:
    """Hosts of hand-built ports; ``tick()`` advances remote time and runs the rules."""

    def __init__(self, thresholds: Mapping[str, float] | None = None) -> None:
        self.hosts: dict[str, Host] = {}
        self.pipeline = Pipeline(thresholds=thresholds)
        self.history = self.pipeline.history
        self.evaluator = Evaluator(thresholds)
        self.ports: dict[tuple[str, str], Port] = {}
        self.gpus: dict[str, list[GpuSample]] = {}
        self.inference: dict[str, list[InferenceSample]] = {}
        self.versions: dict[str, SoftwareVersions] = {}  # a host's software (issue 15)
        self.t = T0
        self.seq = 0
        self.findings: list[Finding] = []
        # per port: its slow metrics' values at their last read, and that read's time
        self._slow_reads: dict[tuple[str, str], tuple[tuple[object, ...], int]] = {}

    def port(self, host: str, netdev: str = "enp65s0f0np0", **kw: object) -> Port:
        """A RoCE port (mlx5, 100 Gb/s, PFC on prio 3 unless told otherwise)."""
        self.hosts.setdefault(host, Host(host))
        p = Port(netdev, **kw)  # type: ignore[arg-type]
        self.ports[(host, netdev)] = p
        return p

    def tick(self, dt: float = 1.0) -> list[Finding]:
        """Every port grows at its current rates for ``dt`` seconds; one frame per host."""
        self.seq += 1
        self.t += dt
        for p in self.ports.values():
            p.grow(dt)
        for name, h in self.hosts.items():
            clock_ns = round(self.remote_s(name) * 1e9)
            links = {nd: p.sample() for (host, nd), p in self.ports.items() if host == name}
            for nd, link in links.items():
                self._stamp_slow_read((name, nd), link, clock_ns)
            sample = HostSample(
                host=name,
                seq=self.seq,
                clock_ns=clock_ns,
                uptime_s=self.t - T0 + 1000.0,
                links=links,
                gpus=copy.deepcopy(self.gpus.get(name, [])),
                inference=copy.deepcopy(self.inference.get(name, [])),
                versions=self.versions.get(name),
            )
            h.rates = self.pipeline.apply_sample(sample, self.arrived_unix(name))
            h.sample = sample
        self.findings = self.evaluator(self)
        return self.findings

    def _stamp_slow_read(self, key: tuple[str, str], link: LinkSample, clock_ns: int) -> None:
        """The read time of ``link``'s slow metrics: now if they grow at a rate or this
        tick changed them, else the last read's (carried)."""
        values = tuple(link.metrics.get(m) for m in sorted(SLOW_METRICS))
        if link.slow_read_ns is not None or values == (None,) * len(values):
            return
        grown = any(m in self.ports[key].rates for m in SLOW_METRICS)
        last = self._slow_reads.get(key)
        if grown or last is None or last[0] != values:
            last = self._slow_reads[key] = (values, clock_ns)
        link.slow_read_ns = last[1]

    def remote_s(self, host: str) -> float:
        """The host's clock at this tick (a fabric with skewed clocks overrides it)."""
        return self.t

    def arrived_unix(self, host: str) -> float | None:
        """When this tick's frame of ``host`` arrived; None: no arrival times."""
        return None

    def run(self, ticks: int, dt: float = 1.0) -> list[Finding]:
        """``ticks`` ticks; the findings after the last."""
        for _ in range(ticks):
            self.tick(dt)
        return self.findings


@dataclass
class Port:
    """Cumulative counters of one port and the per-second rates they grow at."""

    netdev: str
    kind: str = "roce"
    driver: str | None = "mlx5_core"
    rdma_device: str | None = "mlx5_0"
    rate_gbps: float | None = 100.0
    mtu: int = 9000
    firmware: str | None = "22.39.2048"
    state: str = "up"
    pfc: tuple[int, ...] | None = (3,)
    trust: str | None = "dscp"
    qos_source: str = "mlnx_qos"
    pcie: PcieLink | None = None
    temperature_c: float | None = 55.0
    rates: dict[str, float | dict[int, float]] = field(default_factory=dict)
    metrics: dict[str, MetricValue] = field(default_factory=dict)
    # Any other LinkSample field, as the sample should carry it (link_layer, sm_lid, gids).
    fields: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Counters a healthy mlx5 RoCE port always reports, so "zero" is measured.
        zero: dict[str, float | dict[int, float]] = {
            "rx_bytes": 0.0,
            "tx_bytes": 0.0,
            "rdma_rx_bytes": 0.0,
            "rdma_tx_bytes": 0.0,
            "ecn_marked": 0.0,
            "cnp_sent": 0.0,
            "cnp_handled": 0.0,
            "link_down_events": 0.0,
            "out_of_sequence": 0.0,
            "packet_seq_err": 0.0,
            "module_high_temp_events": 0.0,
            "tx_pause_storm_warning_events": 0.0,
            "tx_pause_storm_error_events": 0.0,
        }
        prios = self.pfc or ()
        for name in ("rx_pause", "tx_pause", "rx_pause_us", "tx_pause_us"):
            zero[name] = dict.fromkeys(prios, 0.0)
        for name in ("rx_bytes_prio", "tx_bytes_prio", "rx_discards_prio"):
            zero[name] = dict.fromkeys(range(8), 0.0)
        for name, v in zero.items():
            self.rates.setdefault(name, v)
        for name, v in self.rates.items():
            self.metrics[name] = {p: 0 for p in v} if isinstance(v, dict) else 0

    def set(self, **rates: float | dict[int, float]) -> Port:
        """Set per-second rates (per-priority ones as ``{prio: rate}``, merged)."""
        for name, v in rates.items():
            cur = self.rates.get(name)
            if isinstance(v, dict) and isinstance(cur, dict):
                cur.update(v)
            else:
                self.rates[name] = v
            m = self.metrics.setdefault(name, {p: 0 for p in v} if isinstance(v, dict) else 0)
            if isinstance(v, dict) and isinstance(m, dict):
                for p in v:
                    m.setdefault(p, 0)
        return self

    def traffic(self, gbps: float, rdma_share: float = 0.97, prio: int = 3) -> Port:
        """Symmetric traffic of ``gbps`` each way, ``rdma_share`` of it RDMA on ``prio``."""
        b = gbps * GBPS
        return self.set(
            rx_bytes=b,
            tx_bytes=b,
            rdma_rx_bytes=b * rdma_share,
            rdma_tx_bytes=b * rdma_share,
            rx_bytes_prio={prio: b * rdma_share, 0: b * (1 - rdma_share)},
            tx_bytes_prio={prio: b * rdma_share, 0: b * (1 - rdma_share)},
        )

    def grow(self, dt: float) -> None:
        for name, r in self.rates.items():
            m = self.metrics[name]
            if isinstance(r, dict) and isinstance(m, dict):
                for p, v in r.items():
                    m[p] = m.get(p, 0) + round(v * dt)
            elif isinstance(r, float | int) and isinstance(m, int):
                self.metrics[name] = m + round(r * dt)

    def sample(self) -> LinkSample:
        qos = None
        if self.pfc is not None or self.trust is not None:
            qos = QosConfig(source=self.qos_source, trust=self.trust, pfc_enabled=self.pfc)
        link = LinkSample(
            id=self.netdev,
            netdev=self.netdev,
            rdma_device=self.rdma_device,
            port=1 if self.rdma_device else None,
            link_layer="Ethernet",
            state=self.state,
            rate_gbps=self.rate_gbps,
            mtu=self.mtu,
            driver=self.driver,
            firmware=self.firmware,
            pcie=self.pcie,
            temperature_c=self.temperature_c,
            physical=True,
            kind=self.kind,
            metrics=copy.deepcopy(self.metrics),
            qos=qos,
        )
        return dataclasses.replace(link, **self.fields) if self.fields else link


def by_rule(findings: list[Finding], rule: str) -> list[Finding]:
    """The findings of one rule."""
    return [f for f in findings if f.rule == rule]


def serious(findings: list[Finding]) -> list[Finding]:
    """Warnings and criticals."""
    return [f for f in findings if f.severity in ("warning", "critical")]
