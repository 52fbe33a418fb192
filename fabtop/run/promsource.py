"""``--from-prometheus URL``: watch hundreds of nodes through Prometheus instead of SSH.

Each interval, instant queries to ``URL/api/v1/query`` fetch node_exporter's
InfiniBand, ethtool and netdev series and dcgm-exporter's GPU series. The values of one
host (see below) are written back into a probe frame (the sysfs lines and ``ethtool -S``
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
- node_exporter ``collector/netdev_linux.go`` and ``netclass_linux.go``:
  ``node_network_*{device}``, which every stock node_exporter has (promnet.py: the
  fallback, and the sections said missing for what the exporters lack).

A host is a machine, as the ``instance`` label names it: the targets (``instance`` and
``job``) of one host name merge into one host while they export different families
(node_exporter :9100 with ``node_*``, dcgm-exporter :9400 with ``DCGM_*``: ``node7``);
two targets of one host name exporting the same family are two sources of the same
counters and stay apart as ``node7:9100`` and ``node7:9101`` (merged, their counters
would alternate in one series: rates many times too high, and resets). A target absent
from every answer for FORGET_AFTER_S (or FORGET_AFTER_POLLS polls, the longer) is
forgotten, and with it any host it alone fed: its findings and history go. At most
MAX_HOSTS targets (so hosts) are held; past that the longest unseen go first.

Prometheus's answers are remote data: every value and timestamp goes through
collectors/numbers.py. A bad sample (``+Inf``, ``NaN``, a timestamp that is not a
number, a counter beyond 64 bits) costs that sample, named in a warning on its host; a
result of an odd shape costs that result, counted in a warning on the source.

The source says how its own polls fare into the state (``FabricState.source_status``):
a Prometheus that does not answer is a critical finding and ``fabtop_source_up 0``,
never an empty fabric that looks healthy; an answer used less what it could not use is
a warning finding on the source (``FabricState.source_warning``).
"""

from __future__ import annotations

import asyncio
import functools
import re
import statistics
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from collectors.frames import Frame, Section
from collectors.guard import Guard, failure_line
from collectors.numbers import U64_MAX, finite, json_loads, parse_float
from collectors.text import clean
from fabtop.config import Config, ConfigError, HostConfig
from fabtop.core.cpu import gc_paused
from fabtop.core.state import FabricState, SourceState
from fabtop.run import promnet
from fabtop.run.promnet import NET

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

# The families queried, by metric-name prefix: also what tells two exporters apart.
IB, ETHTOOL, DCGM = "node_infiniband_", "node_ethtool_", "DCGM_FI_DEV_"
FAMILIES = (IB, ETHTOOL, DCGM, NET)
# node_network_* (the fallback of a stock node_exporter): only the names promnet reads.
QUERIES = (*(f'{{__name__=~"{family}.+"}}' for family in FAMILIES[:3]), promnet.QUERY)

# How long a target absent from every answer is kept (its host stale meanwhile) before
# it is forgotten with its host's findings and history: a node_exporter restart, a few
# missed scrapes or a Prometheus outage (a poll that fails forgets nothing) keep a host;
# pods rescheduled under new addresses do not pile up (issue 27: 1452 hosts after 30 s
# of churn). In polls too, so a slow interval is not outlived by one missed answer.
FORGET_AFTER_S = 300.0
FORGET_AFTER_POLLS = 10
# The most hosts one source holds, counted in targets (each feeds one host): a poll that
# brings more forgets the longest unseen first and says so in the source's finding.
MAX_HOSTS = 4096
# Bad samples named one by one per host and answer; the rest in one count.
MAX_NAMED_DROPS = 5
# Samples one target may bring per answer: a node of 16 NICs of 1000 ethtool statistics
# each, its ports and GPUs, several times over (the SSH probe's frame cap is 16 MiB).
MAX_SAMPLES_PER_TARGET = 50_000
# A sample timestamp is unix seconds: past 2**34 (the year 2514) it is no time at all.
MAX_UNIX_S = 2.0**34
_METRIC = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]{0,199}")
_PORT = re.compile(r"[0-9]{1,5}")
# Labels that tell one series of a family from another on a host, as warnings show them.
_SHOWN_LABELS = ("device", "port", "gpu")

# An answer with none of the families, from a source that never had any: said on the
# source, never an empty fabric that looks calm (issue 31: "hosts 0 up" and no word why).
NOTHING_READ = (
    "no node_exporter (node_network_*, node_infiniband_*, node_ethtool_*) or dcgm-exporter "
    "(DCGM_FI_DEV_*) series: are the exporters running on the nodes and scraped?"
)

_WORD = re.compile(r"(^|_)(received|transmitted)(_|$)")


@functools.lru_cache(maxsize=4096)  # the same few hundred names, every poll, every node
def ethtool_stat_name(metric: str) -> str:
    """The ``ethtool -S`` stat a ``node_ethtool_*`` metric came from (rx/tx words restored)."""
    name = metric.removeprefix("node_ethtool_")
    return _WORD.sub(
        lambda m: m.group(1) + ("rx" if m.group(2) == "received" else "tx") + m.group(3), name
    )


def _safe_host(host: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", host)[:64] or "unknown"


def split_instance(instance: str) -> tuple[str, str]:
    """``node7:9100`` -> (``node7``, ``9100``), ``[fe80::1]:9100`` -> (``fe80__1``, ``9100``).

    The host part becomes a safe name (at most 64 characters of ``[A-Za-z0-9_.-]``); the
    port is "" when there is none, or none of digits.
    """
    host, port = instance, ""
    if instance.startswith("["):
        inside, sep, rest = instance[1:].partition("]")
        if sep:
            host, port = inside, rest[1:] if rest.startswith(":") else ""
    elif instance.count(":") == 1:
        host, port = instance.split(":")
    return _safe_host(host), port if _PORT.fullmatch(port) else ""


def instance_host(instance: str) -> str:
    """``node7:9100`` -> ``node7`` (the host name fabtop shows for a target of its own)."""
    return split_instance(instance)[0]


@dataclass(slots=True)
class HostSeries:
    """What the queries returned for one target, grouped as the probe would print it."""

    t: float = 0.0
    ib: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    ethtool: dict[str, dict[str, float]] = field(default_factory=dict)
    gpus: dict[str, dict[str, float]] = field(default_factory=dict)
    net: dict[str, dict[str, float]] = field(default_factory=dict)  # node_network_*
    instance: str = ""  # its ``instance`` label ("": the key it is filed under)
    job: str = ""  # its ``job`` label
    families: set[str] = field(default_factory=set)  # exported, usable values or not
    dropped: list[str] = field(default_factory=list)  # one line per sample left out
    samples: int = 0  # samples filed

    def kinds(self) -> set[str]:
        """The families this target exports."""
        parts = ((IB, self.ib), (ETHTOOL, self.ethtool), (DCGM, self.gpus), (NET, self.net))
        return self.families | {family for family, part in parts if part}


def _number(raw: object) -> float | None:
    """A finite float from a sample's value or timestamp (Prometheus sends values as
    strings, "+Inf" and "NaN" included; a number is taken as JSON gave it)."""
    if isinstance(raw, str):
        return parse_float(raw)
    return finite(raw) if isinstance(raw, int | float) else None


def _shown(raw: object) -> str:
    if raw is None:
        return "a number out of range"  # json_loads made it None
    return clean(raw if isinstance(raw, str) else repr(raw), 40)


def _series(name: str, labels: Mapping[str, object]) -> str:
    """``node_ethtool_x{device=eth0}``: a series as a warning names it."""
    parts = [f"{k}={clean(v, 40)}" for k in _SHOWN_LABELS if isinstance(v := labels.get(k), str)]
    return name + ("{" + ",".join(parts) + "}" if parts else "")


def _digits(text: object, most: int) -> bool:
    return isinstance(text, str) and text.isascii() and text.isdigit() and len(text) <= most


def _place(
    hs: HostSeries, family: str, name: str, labels: Mapping[str, object], value: float
) -> str | None:
    """File one finite value where the probe would print it; why not, when it cannot be."""
    if family == IB:
        dev, port = labels.get("device"), labels.get("port", "1")
        if not (isinstance(dev, str) and _safe(dev) and _digits(port, 3)):
            return "dropped (no usable device and port labels)"
        metric = name.removeprefix(IB)
        scale = IB_COUNTERS[metric][1] if metric in IB_COUNTERS else 0
        if scale and not 0 <= value <= U64_MAX * scale:
            return "dropped (not a 64-bit counter)"
        hs.ib.setdefault((dev, str(port)), {})[metric] = value
    elif family == ETHTOOL:
        if name == "node_ethtool_info":
            return None  # driver and firmware labels, no counter
        dev = labels.get("device")
        if not (isinstance(dev, str) and _safe(dev)):
            return "dropped (no usable device label)"
        if not 0 <= value <= U64_MAX:  # every ethtool -S statistic is a u64
            return "dropped (not a 64-bit counter)"
        hs.ethtool.setdefault(dev, {})[ethtool_stat_name(name)] = value
    elif family == NET:
        dev = labels.get("device")
        if not (isinstance(dev, str) and _safe(dev)):
            return "dropped (no usable device label)"
        return promnet.place(hs.net, dev, name, labels, value)
    else:
        gpu = labels.get("gpu", "0")
        if not _digits(gpu, 4):
            return "dropped (no usable gpu label)"
        hs.gpus.setdefault(str(gpu), {})[name] = value
    return None


def _family(name: str) -> str | None:
    """The queried family of a metric name (None: not one, or not a metric name)."""
    if _METRIC.fullmatch(name) is None:
        return None
    return next((f for f in FAMILIES if name.startswith(f)), None)


def group_series(
    results: Sequence[object],
    unplaced: list[str] | None = None,
    spread: float = 60.0,
) -> dict[str, HostSeries]:
    """Instant-vector results (``data.result``) grouped per target (``instance``, ``job``).

    Every value and timestamp is checked here: a bad sample costs that sample, named in
    its target's ``dropped``; a result that names no target of a queried family costs
    that result, counted in a line added to ``unplaced``. ``spread``: how far from the
    answer's middle timestamp a sample may be (the queries of one poll are evaluated
    within its time); one further off would hold its host's clock there.
    """
    hosts: dict[str, HostSeries] = {}
    families: dict[str, str | None] = {}
    odd: Counter[str] = Counter()
    read: list[tuple[HostSeries, str, str, Mapping[str, object], float, object]] = []
    for r in results:
        if not isinstance(r, dict) or not isinstance(labels := r.get("metric"), dict):
            odd["not an object with a metric"] += 1
            continue
        name = labels.get("__name__")
        family = families.get(name) if isinstance(name, str) else None
        if family is None and isinstance(name, str) and name not in families:
            family = families[name] = _family(name)  # a few hundred names, many times each
        if family is None or not isinstance(name, str):
            odd["without a metric name of the queried families"] += 1
            continue
        instance, job = labels.get("instance"), labels.get("job", "")
        if not (isinstance(instance, str) and instance and isinstance(job, str)):
            odd["without an instance label"] += 1
            continue
        key = f"{job}/{instance}" if job else instance
        hs = hosts.get(key)
        if hs is None:
            hs = hosts[key] = HostSeries(instance=instance, job=job)
        hs.families.add(family)
        value = r.get("value")
        if not (isinstance(value, list) and len(value) == 2):
            hs.dropped.append(f"{_series(name, labels)}: dropped (its value is not [time, value])")
            continue
        ts = _number(value[0])
        if ts is None or not 0 < ts < MAX_UNIX_S:
            hs.dropped.append(f"{_series(name, labels)}: timestamp {_shown(value[0])} dropped")
            continue
        read.append((hs, family, name, labels, ts, value[1]))
    middle = statistics.median_low([x[4] for x in read]) if read else 0.0
    for hs, family, name, labels, ts, raw in read:
        v = _number(raw)
        if hs.samples >= MAX_SAMPLES_PER_TARGET:
            why = f"dropped (past the {MAX_SAMPLES_PER_TARGET} samples of one target)"
        elif abs(ts - middle) > spread:
            why = f"timestamp {ts:.0f} dropped (the answer's is {middle:.0f})"
        elif v is None:
            why = f"{_shown(raw)} dropped"
        elif (refused := _place(hs, family, name, labels, v)) is not None:
            why = f"{_shown(raw)} {refused}"
        else:
            hs.t = max(hs.t, ts)
            hs.samples += 1
            continue
        hs.dropped.append(f"{_series(name, labels)}: {why}")
    if unplaced is not None:
        unplaced += [f"{n} result{'s' if n > 1 else ''} {why} left out" for why, n in odd.items()]
    return hosts


@functools.lru_cache(maxsize=4096)  # the same device names, every poll
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
        if rate is not None and rate > 0:
            ib_lines.append(f"{base}/rate {rate * 8 / 1e9:g} Gb/sec")
        for metric, (counter, scale) in IB_COUNTERS.items():
            v = vals.get(metric)
            if v is not None:
                ib_lines.append(f"{base}/counters/{counter} {int(v) // scale}")
    if ib_lines:
        sections.append(Section("sysib", None, read, "ok", None, "\n".join(ib_lines)))
    # node_exporter's ethtool collector only covers devices with a driver behind them, so
    # each is a physical netdev: the probe marks those with a `<if>/device -` line.
    net_lines = promnet.sysnet_lines(series.net, (d for d in series.ethtool if _safe(d)))
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
    sections += promnet.missing(
        series.net, bool(series.ethtool), bool(series.ib), bool(series.gpus), read
    )
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


def fetch_query(base_url: str, query: str, timeout: float, at: float | None = None) -> list[Any]:
    """One instant query's ``data.result`` (its elements unchecked: group_series checks
    each); raises OSError on transport errors, ValueError on an answer that is not an
    instant vector (not JSON, an error status, another shape). ``at``: unix seconds of a
    past instant (the query API's ``time=``), else now."""
    args = {"query": query} | ({} if at is None else {"time": f"{at:.3f}"})
    url = base_url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode(args)
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return query_result(resp.read(64 * 1024 * 1024), base_url)


def query_result(body: bytes, base_url: str) -> list[Any]:
    """An instant query's answer as its ``data.result``; raises ValueError naming the source
    (fetch_query says which answers)."""
    with gc_paused():  # 256 hosts' own series: 56 MB, 1.2 s of CPU with the GC on, 0.6 off
        doc = json_loads(body.decode())
    if not isinstance(doc, dict):
        raise ValueError(f"{base_url}: the answer is not a JSON object")
    if doc.get("status") != "success":
        raise ValueError(f"{base_url}: query failed: {doc.get('error', doc.get('status'))}")
    data = doc.get("data")
    kind = data.get("resultType") if isinstance(data, dict) else None
    result = data.get("result") if isinstance(data, dict) else None
    if kind != "vector" or not isinstance(result, list):
        raise ValueError(f"{base_url}: expected an instant vector, got {kind}")
    return result


@dataclass(slots=True)
class _Target:
    """A target (``instance``, ``job``) the source has seen, and the host it feeds."""

    hostname: str  # instance_host(instance): the targets it may merge with
    port: str
    job: str
    families: set[str]
    seen: float  # the source's clock when an answer last had it
    name: str = ""  # the host it feeds (decided for all targets of its host name at once)


class PrometheusSource:
    """A Session stand-in: ``run()`` polls Prometheus and applies one frame per host.

    ``forget_after``: seconds a target may be absent from the answers before it is
    forgotten (default: FORGET_AFTER_S or FORGET_AFTER_POLLS intervals, the longer);
    ``clock``: the one that measures it (monotonic); ``max_hosts``: how many targets
    (so hosts) it holds, MAX_HOSTS.
    """

    def __init__(
        self,
        url: str,
        interval: float = 5.0,
        fetch: Callable[..., list[Any]] = fetch_query,
        forget_after: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_hosts: int = MAX_HOSTS,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"--from-prometheus {url!r}: want an http(s):// URL")
        self.url = url
        self.name = f"Prometheus at {display_url(url)}"
        self.interval = interval
        self.fetch = fetch
        self.forget_after = (
            forget_after
            if forget_after is not None
            else max(FORGET_AFTER_S, FORGET_AFTER_POLLS * interval)
        )
        self.clock = clock
        self.max_hosts = max_hosts
        self._state: FabricState | None = None
        self.on_change: Callable[[], None] | None = None
        self.error: str | None = None
        self._seq = 0
        self._stopping = False
        self._last_t: dict[str, float] = {}  # per host: the newest sample time applied
        self._targets: dict[str, _Target] = {}
        self._by_hostname: dict[str, set[str]] = {}  # host name -> its targets' keys
        # Hosts are the targets Prometheus answers with; they come and go with them.
        self.config = Config(hosts=[], interval=interval, source=url)
        # Imported here: promself reads this module's number checks (one place for them),
        # so importing it at the top would be a cycle.
        from fabtop.run.promself import OwnSeries

        # fabtop's own series, where the source holds them (shards running fabtop export)
        self.own = OwnSeries(self)

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

    @property
    def timeout(self) -> float:
        """Seconds one query may take."""
        return self.interval * 2

    async def poll_once(self, at: float | None = None) -> int:
        """One round of queries; return how many hosts got a new frame. ``at``: a past
        instant (unix seconds) to read instead of now."""
        when = () if at is None else (at,)
        try:
            own = await self.own.poll_once(at)
            if own is not None:  # fabtop's own series are there: read them, not node_*
                return own
            results: list[Any] = []
            for q in QUERIES:
                results += await asyncio.to_thread(self.fetch, self.url, q, self.timeout, *when)
        except (OSError, ValueError) as e:
            # The server's error text is remote text: failure_line cleans and bounds it.
            self._failed(failure_line(display_url(self.url), e))
            return 0
        self._answered()
        unplaced: list[str] = []
        # The queries run one after another, each within its timeout. Off the event loop:
        # thousands of nodes are hundreds of thousands of samples to check.
        spread = 60.0 + len(QUERIES) * self.timeout
        grouped = await asyncio.to_thread(group_series, results, unplaced, spread)
        return self.apply(grouped, unplaced)

    def _answered(self) -> None:
        self.error = None
        if self.state is not None:
            self.state.source_status(self.name, None, check=self._check())

    def _failed(self, line: str) -> None:
        self.error = line
        if self.state is not None:
            shown = display_url(self.url)
            # The line starts with the URL the finding already names.
            self.state.source_status(
                self.name, line.removeprefix(f"{shown}: "), check=self._check()
            )
            if self.on_change is not None:
                self.on_change()

    def _check(self) -> str:
        return f"curl -s '{display_url(self.url)}/api/v1/query?query=up'"

    def apply(self, grouped: Mapping[str, HostSeries], notes: Sequence[str] = ()) -> int:
        """Feed one frame per host whose samples moved since the last poll.

        ``grouped``: group_series's targets (a key without ``instance`` is the instance);
        ``notes``: what the answer held that could not be used (the source's warning).
        Targets not seen for ``forget_after`` are forgotten, and hosts no target feeds
        any more removed from the state.
        """
        st = self.state
        if st is None:
            return 0
        st.evaluate_per_frame = False  # rules once per poll, not once per host
        now = self.clock()
        notes = list(notes)
        changed: set[str] = set()  # host names whose targets changed
        for key, series in grouped.items():
            kinds = series.kinds()
            tg = self._targets.get(key)
            if tg is None:
                hostname, port = split_instance(series.instance or key)
                tg = self._targets[key] = _Target(hostname, port, series.job, kinds, now)
                self._by_hostname.setdefault(hostname, set()).add(key)
                changed.add(hostname)
            elif not kinds <= tg.families:
                tg.families |= kinds
                changed.add(tg.hostname)
            tg.seen = now
        for key in self._expired(now, set(grouped), notes):
            tg = self._targets.pop(key)
            self._by_hostname[tg.hostname].discard(key)
            changed.add(tg.hostname)
        split: dict[str, str] = {}
        for hostname in changed:
            split.update(self._name(hostname))
        self._sync_hosts(st)
        for name, line in split.items():
            st.warn(name, line)
        n = self._feed(st, grouped)
        if not self._targets:
            notes.append(NOTHING_READ)
        st.source_warning(self.name, "; ".join(notes) or None)
        if n or changed:
            st.evaluate()
        if self.on_change is not None:
            self.on_change()
        return n

    def _expired(self, now: float, seen: set[str], notes: list[str]) -> list[str]:
        """Targets to forget: unseen for ``forget_after``, then the longest unseen past
        ``max_hosts`` targets (of equals, the ones new in this answer)."""
        gone = [k for k, tg in self._targets.items() if now - tg.seen > self.forget_after]
        over = len(self._targets) - len(gone) - self.max_hosts
        if over > 0:
            kept = set(gone)
            new = {k for k in seen if k in self._targets and self._targets[k].name == ""}
            rest = sorted(
                (self._targets[k].seen, k not in new, k) for k in self._targets if k not in kept
            )
            gone += [k for _, _, k in rest[:over]]
            notes.append(
                f"{len(self._targets) - len(kept)} targets, more than the "
                f"{self.max_hosts} a source holds: the {over} seen longest ago "
                "left out"
            )
        return gone

    def _name(self, hostname: str) -> dict[str, str]:
        """Name the hosts of ``hostname``'s targets: one host while their families differ,
        one each (``host:port``) when two export the same family. The lines that say why."""
        keys = sorted(self._by_hostname.get(hostname, ()))
        if not keys:
            self._by_hostname.pop(hostname, None)
            return {}
        targets = [self._targets[k] for k in keys]
        counts = Counter(f for tg in targets for f in tg.families)
        shared = sorted(f for f, c in counts.items() if c > 1)
        if not shared:
            for tg in targets:
                tg.name = hostname
            return {}
        taken: set[str] = set()
        for tg in targets:
            name = f"{hostname}:{tg.port}" if tg.port else hostname
            if name in taken and tg.job:
                name = f"{name}@{_safe_host(tg.job)}"
            base, i = name, 2
            while name in taken:
                name, i = f"{base}@{i}", i + 1
            taken.add(name)
            tg.name = name
        why = " and ".join(f"{f}*" for f in shared)
        return {
            n: f"{n}: shown apart from the other targets of {hostname} (more than one "
            f"exports {why})"
            for n in taken
        }

    def _sync_hosts(self, st: FabricState) -> None:
        """The state's hosts (and this source's config) are the targets' names."""
        names = {tg.name for tg in self._targets.values()}
        held = {hc.name for hc in self.config.hosts}
        gone = held - names
        if gone:
            st.remove_hosts(gone)
            for name in gone:
                self._last_t.pop(name, None)
        kept = [hc for hc in self.config.hosts if hc.name not in gone]
        for name in sorted(names - held):
            hc = HostConfig(name=name)
            kept.append(hc)
            st.add_host(hc, target=f"prometheus:{name}")
        self.config.hosts[:] = kept

    def _feed(self, st: FabricState, grouped: Mapping[str, HostSeries]) -> int:
        """One frame per host with a newer sample, and its dropped samples said."""
        parts: dict[str, list[HostSeries]] = {}
        for key, series in grouped.items():
            tg = self._targets.get(key)
            if tg is not None:
                parts.setdefault(tg.name, []).append(series)
        n = 0
        for host, of in sorted(parts.items()):
            series = of[0] if len(of) == 1 else _merged(of)
            dropped = series.dropped
            for line in dropped[:MAX_NAMED_DROPS]:
                st.warn(host, f"{host}: {line}")
            if (more := len(dropped) - MAX_NAMED_DROPS) > 0:
                st.warn(host, f"{host}: {more} more sample{'s' if more > 1 else ''} dropped")
            if series.t <= self._last_t.get(host, 0.0):
                continue  # Prometheus has no newer scrape of this node yet
            self._last_t[host] = series.t
            self._seq += 1
            st.apply_frame(host, render_host(series, self._seq))
            n += 1
        return n

    async def run(self) -> None:
        """Poll until stopped; a round that fails in any way is an error line, not the end."""
        guard = Guard(f"{self.url}: poll failed")
        while not self._stopping:
            with guard:  # a bug: said as the source's error, and the next poll tried
                await self.poll_once()
            if guard.error is not None:
                self._failed(guard.error)
            await asyncio.sleep(self.interval)

    async def stop(self) -> None:
        """Stop polling."""
        self._stopping = True


def _merged(parts: list[HostSeries]) -> HostSeries:
    """The series of one host's targets in one (their families differ: nothing overlaps)."""
    out = HostSeries()
    for p in parts:
        out.t = max(out.t, p.t)
        out.ib.update(p.ib)
        out.ethtool.update(p.ethtool)
        out.gpus.update(p.gpus)
        out.net.update(p.net)
        out.dropped += p.dropped
    return out
