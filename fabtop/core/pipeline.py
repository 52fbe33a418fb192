"""The one path a frame takes into the core: assemble -> rates -> placement -> history.

The live fabric state, focus mode and the test fabrics all run frames (or hand-built
samples) through a :class:`Pipeline`, so each of them reads exactly what the others do.
Rates divide by remote time; the history records each frame where it sits on the
operator's time axis (:mod:`fabtop.core.clock`), so one host's clock cannot move the
others out of the window.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from collectors.assemble import assemble
from collectors.darwin import DARWIN_SLOW_KINDS
from collectors.frames import Frame, Section
from collectors.layout import Shapes
from collectors.optics_sections import OPTICS_KINDS
from collectors.samples import HostSample
from collectors.version_sections import VERSION_KINDS
from fabtop.core.clock import Clocks
from fabtop.core.history import History
from fabtop.core.rates import HostRates, RateEngine

# Sections the probe sends only on slow ticks (once a minute): the latest of each is
# carried into the frames between, so driver, firmware and QoS never blink out.
SLOW_KINDS = frozenset(
    {
        "ethtool_i",
        "mlnx_qos",
        "dcb_pfc",
        "dcb_apptrust",
        "dcb_app",
        "dcb_ets",
        "dcb_buffer",
        "gpu_amd",
        "cputhrottle",
        "sysnet_slow",
        "sysib_slow",
        *VERSION_KINDS,  # software versions (issue 15)
        "firewall",
        "systb_slow",  # Thunderbolt bus (issue 14)
        "ip_addr",  # netdev addresses
        *OPTICS_KINDS,  # the cable's own health (issue 33), on optics rounds
    }
)
# macOS probe's slow sections (collectors/darwin.py), carried alike.
SLOW_KINDS = SLOW_KINDS | DARWIN_SLOW_KINDS


class Names:
    """Each name the samples bring (a link's id, netdev, state...) as one object of its
    text, tick after tick and across hosts, forgotten once no sample brought it for a
    whole round of the hosts.

    The views and the rates look every link up by host and id each tick, and compare its
    names. A frame laid out anew (the sh probe's, a recording's) brought new strings of
    the same text every tick, and each lookup hashed and compared them again, each string
    its own memory: a quarter of a 1000-link refresh (issue 32). Not ``sys.intern``: an
    interned string lives for good on 3.12 before cpython#123065 and on free-threaded
    builds, and a week of pod veths (or a hostile node) would pile up there; here at most
    two rounds' names are held.
    """

    def __init__(self) -> None:
        self._now: dict[str, str] = {}  # brought in this round
        self._before: dict[str, str] = {}  # in the round before
        self._samples = 0  # samples in this round

    def one(self, name: str) -> str:
        """The object of ``name``'s text (``name`` itself the first time)."""
        got = self._now.get(name)
        if got is None:
            got = self._now[name] = self._before.get(name, name)
        return got

    def sample_done(self, hosts: int) -> None:
        """One more sample of a fabric of ``hosts``: after as many, a round is over."""
        self._samples += 1
        if self._samples >= hosts:
            self._before, self._now, self._samples = self._now, {}, 0

    def __len__(self) -> int:
        return len(self._now.keys() | self._before.keys())


class Pipeline:
    """Frames of many hosts in, typed samples with their rates out, history kept."""

    def __init__(
        self, history: History | None = None, thresholds: Mapping[str, float] | None = None
    ) -> None:
        self.engine = RateEngine(thresholds)
        self.history = history if history is not None else History()
        self.clocks = Clocks()
        self._slow: dict[str, dict[tuple[str, str | None], Section]] = {}
        # The slow sections carried into a host's frames, one tuple until one of them comes
        # again (Frame.carried).
        self._tails: dict[str, tuple[Section, ...]] = {}
        self._latest: dict[str, HostSample] = {}
        self.names = Names()
        self._shapes: Shapes = {}  # what assemble keeps of each host of this stream

    def apply_frame(
        self, host: str, frame: Frame, arrived_unix: float | None = None
    ) -> tuple[HostSample, HostRates]:
        """Assemble ``frame`` (slow sections carried) and run it through rates and history.

        ``arrived_unix``: the operator's wall clock when the frame arrived; None (replays,
        tests) means no clock estimate from this frame.
        """
        sample = assemble(host, self.with_slow_sections(host, frame), self._shapes)
        prev = self._latest.get(host)
        if prev is not None and prev.inference and not sample.inference:
            # /metrics is polled on its own cadence: keep the last reading on frames without it.
            sample.inference = prev.inference
        return sample, self.apply_sample(sample, arrived_unix)

    def apply_sample(self, sample: HostSample, arrived_unix: float | None = None) -> HostRates:
        """Rates and history for an already assembled sample (test fabrics start here)."""
        host = sample.host
        sample.share_names(self.names.one)  # before the rates: their keys are the ids
        self._latest[host] = sample
        self.names.sample_done(len(self._latest))
        rates = self.engine.update(sample)
        t = self.clocks.place(
            host,
            sample.clock_ns / 1e9,
            arrived_unix,
            stepped=rates.clock_stepped,
            restarted=rates.restarted,
            interval_s=rates.interval_s,
        )
        rates.placed_s = t
        rates.clock_offset_s = self.clocks.offset(host)
        # Said on the host like any warning (FabricState keeps each line once).
        sample.warnings.extend(rates.glitches)
        self.history.record(t, sample, rates)
        return rates

    def forget(self, hosts: Collection[str]) -> None:
        """Drop all that is kept of ``hosts`` (removed for good: a Prometheus instance gone)."""
        for host in hosts:
            self._slow.pop(host, None)
            self._tails.pop(host, None)
            self._latest.pop(host, None)
            self._shapes.pop(host, None)
            self.engine.forget(host)
            self.clocks.forget(host)
        self.history.forget(hosts)

    def with_slow_sections(self, host: str, frame: Frame) -> Frame:
        """``frame`` with the latest slow sections it lacks, every slow section last.

        The slow ones go in the order they were first seen, whether this frame brought them
        or they were carried: a slow tick's frame is then laid out as the frames between,
        and assembles with the host's kept shape (collectors/assemble.py).
        """
        kept = self._slow.setdefault(host, {})
        came: dict[tuple[str, str | None], list[Section]] = {}
        others: list[Section] = []
        for sec in frame.sections:
            if sec.kind in SLOW_KINDS:
                if sec.read_ns is None:
                    # read in this frame's tick: carried, it keeps that time (the rates of
                    # slow counters run between two reads' times: fabtop/core/rates.py)
                    sec = replace(sec, read_ns=frame.clock_ns)
                key = (sec.kind, sec.subject)
                kept[key] = sec
                came.setdefault(key, []).append(sec)
            else:
                others.append(sec)
        if came:
            # A slow tick brings every section of each of its kinds: one of those kinds it
            # no longer brings (a netdev gone: its ethtool -i, dcb, mlnx_qos) is forgotten,
            # not carried into every frame for good (a week of pod veths).
            kinds = {kind for kind, _ in came}
            for key in [k for k in kept if k[0] in kinds and k not in came]:
                del kept[key]
        if not kept:
            return frame
        tail = self._tails.get(host) if not came else None
        if tail is None:
            if any(len(secs) > 1 for secs in came.values()):  # one kind and subject twice
                self._tails.pop(host, None)
                for key, sec in kept.items():
                    others.extend(came.get(key, (sec,)))
                return Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, others)
            tail = self._tails[host] = tuple(kept.values())
        others.extend(tail)
        return Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, others, carried=tail)
