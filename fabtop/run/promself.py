"""fabtop's own series read back through PromQL (issue 31 item 2).

Where the Prometheus behind ``--from-prometheus`` holds ``fabtop_*`` series (shards
running ``fabtop export``, scraped with ``honor_labels``), each host's sample is built
from them instead of from node_exporter's: links with their normalized counters (named
as fabtop/run/export.py names them, mapped back through the same table), link states,
speeds, temperatures, PFC priorities, GPUs and inference servers. The sample is stamped
with the time Prometheus scraped the shard (``timestamp(fabtop_host_up)``), so counters
are the shard's at that instant and rates come from the normal rate engine over two
scrapes.

Findings are the shards' own (``fabtop_finding``; a 5 s scrape cannot rebuild the 100 ms
storm watchdog a shard saw), each marked with its shard. The reader adds its own only
where it is blind: a host its shard says is not reporting (``fabtop_host_up 0``), a
shard whose ``up`` is 0 (its hosts are down, never healthy), a host whose series stopped
coming (stale, as any silent host), and one info finding that says how this view
differs from the direct path (the resolution is the scrape interval).

On start, ``backfill`` fills the history from ``query_range`` over the span the
timeline shows, at most MAX_BACKFILL_POINTS steps (fewer for a fleet: a bounded number
of host-steps), through the same path.

The series become samples in fabtop/run/promself_series.py (pure: JSON in, samples
out); this module queries, keeps the shards and hosts, and feeds the state.
"""

from __future__ import annotations

import asyncio
import math
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from collectors.host_states import STALE_AFTER_INTERVALS
from collectors.numbers import json_loads
from collectors.text import clean
from fabtop.config import HostConfig
from fabtop.core.cpu import gc_paused
from fabtop.core.findings import Finding, port_ref
from fabtop.core.state import DOWN, FabricState
from fabtop.run.promself_info import bers
from fabtop.run.promself_series import (
    PRIORITIES,
    OwnAnswer,
    ShardFinding,
    add_known,
    of_host,
    read_own,
    read_range,
    sample_of,
    shard_of,
    stamp_of,
)
from fabtop.run.promsource import MAX_NAMED_DROPS, _number, display_url

if TYPE_CHECKING:
    from fabtop.run.promsource import PrometheusSource

# The scrape time of every host a shard exports: present means the source holds fabtop's
# own series; the value is when Prometheus scraped the shard (the sample's clock).
STAMPS_QUERY = "timestamp(fabtop_host_up)"
SERIES_QUERY = '{__name__=~"fabtop_.+"}'
# What the history records, for the backfill's range query: counters, states, speeds,
# GPUs and inference (no rate gauges, info, findings or evidence: a tenth of the points).
BACKFILL_QUERY = (
    '{__name__=~"fabtop_(host_up|link_up|link_speed_bytes_per_second|link_.+_total'
    '|gpu_.+|inference_.+)"}'
)
SHARDS_QUERY = "up"
# On start, the hosts every shard exported in the last hour: a shard already down when the
# reader starts leaves its hosts blind, never unseen.
KNOWN_QUERY = "last_over_time(fabtop_host_up[1h])"
# Shards that read their hosts themselves: an exporter fed from Prometheus says so with
# fabtop_source_up, and re-exporting its own series is no loop to refuse.
LOOP_QUERY = "count by (job, instance) (fabtop_host_up unless on (job, instance) fabtop_source_up)"
# The reader's own finding on how this view differs from the direct path.
READBACK_RULE = "prometheus_readback"
# The shards' findings about a host not reporting: the reader makes its own from
# fabtop_host_up and the shard's up (one finding per blind host, not two).
_BLIND_RULES = frozenset({"host_unreachable", "host_stale", "host_failing"})
# History filled on start: the span the timeline shows, in at most this many steps
# (an hour at 15 s), so a start over hundreds of hosts stays a few queries.
BACKFILL_S = 3600.0
MAX_BACKFILL_POINTS = 240
# A fleet gets fewer steps: at most this many host-steps in all (a host-step costs about
# 3 ms of CPU, JSON included: 256 hosts of 8 rails fill their hour in 16 steps, some 13 s
# (benchmarks/promself_readback.py), between which the dashboard draws; 7 hosts get all 240).
MAX_BACKFILL_HOST_STEPS = 4096
MIN_BACKFILL_POINTS = 12
_T = TypeVar("_T")


def shard_finding(f: ShardFinding, shard: str, st: FabricState) -> Finding:
    """A shard's finding as the reader shows it, marked with the shard that raised it: its
    host, port and priority from the series' labels, else found again in the subject
    (``node3/eth0/prio3``)."""
    parts = f.subject.split("/")
    host = f.host or (parts[0] if parts[0] in st.hosts else None)
    hs = st.hosts.get(host) if host is not None else None
    links = hs.sample.links if hs is not None and hs.sample is not None else {}
    link = links.get(f.link) if f.link else None
    for n in range(len(parts), 1, -1):  # the longest id first: mlx5_0/1
        if link is not None:
            break
        link = links.get("/".join(parts[1:n]))
    prio = f.priority
    last = parts[-1]
    if prio is None and last.startswith("prio"):
        prio = PRIORITIES.get(last[4:])
    said = [f"{k} {v}" for k, v in f.evidence.items() if v is not None][:4]
    return Finding(
        f.rule,
        f.severity,
        f.subject,
        f"{f.subject}: {f.rule}" + (f" ({', '.join(said)})" if said else "") + f" [shard {shard}]",
        evidence={**f.evidence, "shard": shard},
        next_step=f"raised by the shard {shard}: fabtop doctor where it runs has the whole story",
        host=host,
        since=f.since,
        port=port_ref(host, link) if host is not None and link is not None else None,
        priority=prio,
    )


class ShardRules:
    """The rules hook while fabtop's own series are read: the shards' findings, and the
    reader's own about what it cannot see (the state adds one per blind host)."""

    def __init__(self, before: object) -> None:
        self.thresholds = getattr(before, "thresholds", None)
        self.firewall_ports = getattr(before, "firewall_ports", ())
        self.found: list[Finding] = []

    def __call__(self, state: FabricState) -> list[Finding]:
        return list(self.found)


def _paused(f: Callable[..., _T], *args: Any) -> _T:
    """``f(*args)`` with the cyclic GC paused: for the backfill's millions of points
    (fabtop/core/cpu.py says why)."""
    with gc_paused():
        return f(*args)


def fetch_range(
    base_url: str, query: str, start: float, end: float, step: float, timeout: float
) -> list[Any]:
    """One range query's ``data.result`` (a matrix; elements checked by the reader)."""
    args = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
    url = base_url.rstrip("/") + "/api/v1/query_range?" + urllib.parse.urlencode(args)
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return range_result(resp.read(256 * 1024 * 1024), base_url)


def range_result(body: bytes, base_url: str) -> list[Any]:
    """A range query's answer as its ``data.result``; raises ValueError naming the source."""
    with gc_paused():  # an hour of 256 hosts: 3 M points, 100 MB (cpu.py says why)
        doc = json_loads(body.decode())
    if not isinstance(doc, dict) or doc.get("status") != "success":
        err = doc.get("error", doc.get("status")) if isinstance(doc, dict) else "not JSON"
        raise ValueError(f"{display_url(base_url)}: range query failed: {err}")
    data = doc.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("resultType") != "matrix"
        or not isinstance(result, list)
    ):
        raise ValueError(f"{display_url(base_url)}: expected a range vector")
    return result


def own_shards(source: PrometheusSource) -> list[str]:
    """The targets exporting fabtop's own series read from their hosts (what ``fabtop
    export --from-prometheus`` would feed back into the same Prometheus); raises what
    the fetch raises."""
    out = []
    for r in source.fetch(source.url, LOOP_QUERY, source.timeout):
        if isinstance(r, dict) and isinstance(m := r.get("metric"), dict):
            out.append(shard_of(m)[0])
    return sorted(out)


@dataclass(slots=True)
class _Shard:
    job: str
    instance: str
    name: str  # its --shard name, else its target (job/instance)
    up: bool = True
    hosts: set[str] = field(default_factory=set)
    scraped: float = 0.0  # its newest scrape time seen
    every: float | None = None  # seconds between its scrapes (the resolution)


class OwnSeries:
    """The reading of fabtop's own series for a PrometheusSource (its dispatch)."""

    def __init__(
        self,
        source: PrometheusSource,
        fetch_range: Callable[[str, str, float, float, float, float], list[Any]] = fetch_range,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.src = source
        self.fetch_range = fetch_range
        self.wall = wall
        self.active = False  # the source held fabtop's own series once
        self.shards: dict[str, _Shard] = {}
        self._host_shard: dict[str, str] = {}
        self._seen: dict[str, float] = {}  # host -> the source's clock when last answered
        self._last_t: dict[str, float] = {}
        self._rules: ShardRules | None = None
        self._seq = 0
        self.backfilled: tuple[float, float] | None = None  # (span, step) filled on start
        # The span the history is filled for when the fabtop series are first seen (None:
        # none; a snapshot reads two instants and no more).
        self.backfill_s: float | None = BACKFILL_S
        self.history_error: str | None = None  # why the backfill failed

    def _fetch(self, query: str, at: float | None) -> list[Any]:
        src = self.src
        if at is None:
            return src.fetch(src.url, query, src.timeout)
        return src.fetch(src.url, query, src.timeout, at)

    async def poll_once(self, at: float | None = None) -> int | None:
        """One round; how many hosts got a new sample, or None where the source holds no
        fabtop series (the node_exporter path reads it). Raises what the fetch raises."""
        known: list[Any] = []
        if not self.active:
            known = await asyncio.to_thread(self._fetch, KNOWN_QUERY, at)
            if not any(of_host(r) for r in known):
                return None
        stamps = await asyncio.to_thread(self._fetch, STAMPS_QUERY, at)
        if not self.active and self.backfill_s and at is None:
            try:  # the timeline shows the last hour at once; live polls go on without it
                await self.backfill(self.backfill_s, hosts=sum(map(of_host, known)))
            except (OSError, ValueError) as e:
                self.history_error = clean(str(e), 200)  # said in the read-back note
        results = await asyncio.to_thread(self._fetch, SERIES_QUERY, at)
        ups = await asyncio.to_thread(self._fetch, SHARDS_QUERY, at)
        self.src._answered()
        answer = await asyncio.to_thread(read_own, results, stamps, at or self.wall())
        add_known(answer, known)
        return self.apply(answer, ups, at or self.wall())

    async def backfill(
        self, span: float = BACKFILL_S, end: float | None = None, hosts: int = 1
    ) -> int:
        """Fill the history from ``query_range`` over ``span`` seconds up to ``end``
        (default now) in at most MAX_BACKFILL_POINTS steps, fewer for many ``hosts``
        (MAX_BACKFILL_HOST_STEPS); the samples it fed."""
        end = end if end is not None else self.wall()
        points = max(
            MIN_BACKFILL_POINTS, min(MAX_BACKFILL_POINTS, MAX_BACKFILL_HOST_STEPS // max(1, hosts))
        )
        step = max(1.0, math.ceil(span / points))
        src = self.src
        matrix = await asyncio.to_thread(
            self.fetch_range, src.url, BACKFILL_QUERY, end - span, end, step, src.timeout * 4
        )
        self.backfilled = (span, step)
        n = 0
        for t, answer in await asyncio.to_thread(_paused, read_range, matrix):
            await asyncio.sleep(0)  # the loop draws between steps
            with gc_paused():  # a step's rates and history: as many objects again
                n += self.apply(answer, (), t, evaluate=False)
        for sh in self.shards.values():  # the steps are no scrape interval: measured live
            sh.every, sh.scraped = None, 0.0
        if self.src.state is not None:
            self.src.state.evaluate()
        return n

    def apply(
        self, answer: OwnAnswer, ups: Sequence[object], now: float, evaluate: bool = True
    ) -> int:
        """Feed one sample per host whose shard was scraped again; say who is blind."""
        st = self.src.state
        if st is None:
            return 0
        if not self.active:
            self.active = True
            self._rules = ShardRules(st.rules)
            st.rules = self._rules
        st.evaluate_per_frame = False
        mono = self.src.clock()
        self._note_shards(answer, ups)
        self._sync_hosts(st, answer, mono)
        n = 0
        for name, h in sorted(answer.hosts.items()):
            for line in h.dropped[:MAX_NAMED_DROPS]:
                st.warn(name, f"{name}: {line}")
            if (more := len(h.dropped) - MAX_NAMED_DROPS) > 0:
                st.warn(name, f"{name}: {more} more sample{'s' if more > 1 else ''} dropped")
            if h.known_only:
                continue  # its shard's up says whether it is blind
            if not h.up:
                shown = self.shards[h.shard].name if h.shard in self.shards else h.shard
                st.apply_status(name, DOWN, f"{name}: its shard {shown} gets no frames from it")
                continue
            sh = self.shards.get(h.shard)
            if sh is not None and sh.scraped and h.t > sh.scraped:
                every = h.t - sh.scraped
                sh.every = every if sh.every is None else min(sh.every, every)
            if sh is not None:
                sh.scraped = max(sh.scraped, h.t)
            if h.t <= self._last_t.get(name, 0.0):
                continue  # no newer scrape of its shard yet
            self._last_t[name] = h.t
            self._seq += 1
            st.apply_sample(name, sample_of(h, self._seq))
            hs = st.hosts[name]
            if answer.infos:  # the shard's coverage gaps and BERs: its word, none is none
                hs.said_gaps = tuple(h.info.gaps)
                hs.said_ber = bers(h.info)
            for url, said in h.latencies.items():  # from histograms the series lack
                rates = hs.rates.inference.get(url) if hs.rates is not None else None
                if rates is not None:
                    for rate, v in said.items():
                        rates[rate] = v if rates.get(rate) is None else rates[rate]
            n += 1
        for sh in self.shards.values():
            if not sh.up:
                for host in sorted(sh.hosts):
                    st.apply_status(host, DOWN, f"{host}: its shard {sh.name} is down (up 0)")
        # Staleness is the state's: no new scrape for STALE_AFTER_INTERVALS of the
        # slowest shard's scrape interval (a 15 s scrape polled every 5 s is not stale).
        every = max((sh.every for sh in self.shards.values() if sh.every), default=0.0)
        st.interval = max(self.src.interval, every)
        if self._rules is not None:
            self._rules.found = self._findings(st, answer, now)
        if evaluate:
            st.evaluate()
            if self.src.on_change is not None:
                self.src.on_change()
        return n

    def _note_shards(self, answer: OwnAnswer, ups: Sequence[object]) -> None:
        for key, (job, instance) in answer.shards.items():
            if key not in self.shards:
                self.shards[key] = _Shard(job, instance, key)
            if key in answer.names:
                self.shards[key].name = answer.names[key]
        by_target = {(sh.job, sh.instance): sh for sh in self.shards.values()}
        for r in ups:
            if not isinstance(r, dict) or not isinstance(labels := r.get("metric"), dict):
                continue
            _, job, instance = shard_of(labels)
            sh = by_target.get((job, instance))
            v = r.get("value")
            if sh is not None and isinstance(v, list) and len(v) == 2:
                sh.up = _number(v[1]) == 1

    def _sync_hosts(self, st: FabricState, answer: OwnAnswer, mono: float) -> None:
        """Hosts are those the shards export; one no shard exported for the source's
        ``forget_after`` (and whose shard is not down) is forgotten."""
        for name, h in sorted(answer.hosts.items()):  # a fleet in one order, run to run
            if name not in st.hosts:
                hc = HostConfig(name=name)
                self.src.config.hosts.append(hc)
                st.add_host(hc, target=f"prometheus:{h.shard}")
            old = self._host_shard.get(name)
            if old is not None and old != h.shard and old in self.shards:
                self.shards[old].hosts.discard(name)
            self._host_shard[name] = h.shard
            if h.shard in self.shards:
                self.shards[h.shard].hosts.add(name)
            self._seen[name] = mono
        gone = {
            n
            for n, seen in self._seen.items()
            if mono - seen > self.src.forget_after
            and self.shards.get(self._host_shard.get(n, ""), _Shard("", "", "")).up
        }
        if gone:
            st.remove_hosts(gone)
            self.src.config.hosts[:] = [hc for hc in self.src.config.hosts if hc.name not in gone]
            for n in gone:
                self._seen.pop(n, None)
                self._last_t.pop(n, None)
                shard = self._host_shard.pop(n, "")
                if shard in self.shards:
                    self.shards[shard].hosts.discard(n)

    def _findings(self, st: FabricState, answer: OwnAnswer, now: float) -> list[Finding]:
        out = [
            shard_finding(f, self.shards[f.shard].name if f.shard in self.shards else f.shard, st)
            for f in answer.findings
            if f.rule not in _BLIND_RULES
        ]
        for sh in sorted(self.shards.values(), key=lambda sh: sh.name):
            if sh.up:
                continue
            out.append(
                Finding(
                    "shard_down",
                    "critical",
                    sh.name,
                    f"shard {sh.name} is down (Prometheus' up is 0): its "
                    f"{len(sh.hosts)} hosts are blind",
                    evidence={"hosts": len(sh.hosts)},
                    next_step=f"curl -s 'http://{sh.instance}/metrics' | head",
                )
            )
        out.append(self._readback(now))
        return out

    def _readback(self, now: float) -> Finding:
        """What differs from the direct path, said where the findings are."""
        every = [sh.every for sh in self.shards.values() if sh.every]
        res = f"{max(every):g} s (the scrape interval)" if every else "one scrape (not yet known)"
        newest = max((sh.scraped for sh in self.shards.values()), default=0.0)
        age = now - newest if newest else None
        parts = [f"read back from {len(self.shards)} shard(s) through Prometheus: resolution {res}"]
        if age is not None:
            parts.append(f"newest scrape {age:.0f} s old")
        if every and age is not None and age > STALE_AFTER_INTERVALS * max(every):
            parts.append("stale")
        down = [n for n, sh in self.shards.items() if not sh.up]
        if down:
            parts.append(f"{len(down)} shard(s) down")
        if self.backfilled is not None:
            span, step = self.backfilled
            parts.append(f"history backfilled {span / 60:g} min at {step:g} s steps")
        elif self.history_error is not None:
            parts.append(f"no history backfilled: {self.history_error}")
        return Finding(
            READBACK_RULE,
            "info",
            display_url(self.src.url),
            "; ".join(parts),
            evidence={"resolution_s": max(every) if every else None, "age_s": age},
            next_step="fabtop export on each shard keeps the watchdog's 100 ms view; "
            "its findings are shown here as the shard raised them",
        )


async def read_at(source: PrometheusSource, state: FabricState, at: float | None = None) -> None:
    """Fill ``state`` for a snapshot or doctor: two instants of ``source``, so counters are
    those at ``at`` (default now) and rates span one scrape interval.

    With fabtop's own series, the earlier instant is just before the oldest scrape the
    later one holds (two consecutive scrapes of each shard); otherwise one ``--interval``
    earlier. A source that does not answer is said in the state, as when polled live.
    """
    source.own.backfill_s = None
    source.state = state
    end = at if at is not None else source.own.wall()
    try:
        stamps = await asyncio.to_thread(source.own._fetch, STAMPS_QUERY, end)
    except (OSError, ValueError):
        stamps = []  # said by the poll below, which meets the same error
    times = [t for r in stamps if of_host(r) and (t := stamp_of(r)) is not None]
    before = min(times) - 0.001 if times else end - source.interval
    await source.poll_once(at=before)
    await source.poll_once(at=end)
