"""Run fabtop's Session/FabricState on a config and keep what a user would have seen, per tick."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from collectors.samples import RateValue
from fabtop.config import Config
from fabtop.core.state import FabricState, RuleHook
from fabtop.run.session import Session


@dataclass(slots=True)
class Tick:
    """One frame of one host as the dashboard showed it."""

    host: str
    mono: float  # local monotonic time the frame was applied
    clock_s: float  # the host's wall clock at the frame
    dt: float | None  # remote seconds the rates span (None: no rates this frame)
    rates: dict[str, dict[str, RateValue]]  # link id -> normalized rates
    states: dict[str, str | None]  # link id -> link state
    gap: dict[str, bool]
    saturated: dict[str, list[str]]
    warnings: list[str]
    spans: dict[str, float | None] = field(default_factory=dict)  # link id -> rates' span


@dataclass(slots=True)
class StatusEvent:
    """A host status change (up/stale/down/connecting) with its error line."""

    host: str
    mono: float
    status: str
    error: str | None


@dataclass
class Watch:
    """``async with Watch(config) as w``: the Session runs until the block ends."""

    config: Config
    rules: RuleHook | None = None
    ticks: list[Tick] = field(default_factory=list)
    events: list[StatusEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.state = FabricState(self.config.hosts, rules=self.rules)
        self.session = Session(self.config, self.state, on_change=self._changed)
        self._frames = {h: 0 for h in self.state.hosts}
        self._status: dict[str, tuple[str, str | None]] = {
            h: ("connecting", None) for h in self.state.hosts
        }
        self._task: asyncio.Task[None] | None = None

    def _changed(self) -> None:
        now = time.monotonic()
        for name, hs in self.state.hosts.items():
            if hs.frames != self._frames[name] and hs.sample is not None:
                self._frames[name] = hs.frames
                r = hs.rates
                links = r.links if r is not None else {}
                self.ticks.append(
                    Tick(
                        name,
                        now,
                        hs.sample.clock_ns / 1e9,
                        r.interval_s if r else None,
                        {lid: dict(lr.rates) for lid, lr in links.items()},
                        {lid: ln.state for lid, ln in hs.sample.links.items()},
                        {lid: lr.gap for lid, lr in links.items()},
                        {lid: list(ln.saturated) for lid, ln in hs.sample.links.items()},
                        list(hs.sample.warnings),
                        {lid: lr.span_s for lid, lr in links.items()},
                    )
                )
            st = (hs.status, hs.error)
            if st != self._status[name]:
                self._status[name] = st
                self.events.append(StatusEvent(name, now, hs.status, hs.error))

    async def __aenter__(self) -> Watch:
        self._task = asyncio.create_task(self.session.run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.session.stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    def of(self, host: str, since: float = 0.0) -> list[Tick]:
        """Ticks of one host applied at or after ``since`` (monotonic)."""
        return [t for t in self.ticks if t.host == host and t.mono >= since]

    async def until(self, pred: Callable[[], Any], timeout: float, what: str) -> float:
        """Wait until ``pred()`` is true; return the monotonic time it became so."""
        deadline = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > deadline:
                raise AssertionError(f"after {timeout:g} s: {what}; events: {self.events[-6:]}")
            await asyncio.sleep(0.02)
        return time.monotonic()

    async def frames(self, host: str, n: int, timeout: float = 20.0) -> None:
        """Wait for ``n`` more frames of ``host``."""
        start = len(self.of(host))
        await self.until(
            lambda: len(self.of(host)) >= start + n, timeout, f"{host}: {n} more frame(s)"
        )


def steady_mean(ticks: list[Tick], link: str, key: str, t0: float, t1: float) -> float:
    """Time-weighted mean of a rate over the ticks whose span lies inside [t0, t1] (wall)."""
    num = den = 0.0
    for t in ticks:
        v = t.rates.get(link, {}).get(key)
        if t.dt is None or not isinstance(v, float):
            continue
        if t.clock_s - t.dt >= t0 and t.clock_s <= t1:
            num += v * t.dt
            den += t.dt
    if den == 0:
        raise AssertionError(f"no {link} {key} tick inside [{t0:.2f}, {t1:.2f}]")
    return num / den


def counted(ticks: list[Tick], link: str, key: str, after: Tick, upto: Tick) -> float:
    """What a shown per-second rate adds up to from frame ``after`` to frame ``upto``.

    The sum of rate x span over the frames after ``after`` up to ``upto`` inclusive (the
    span the rate was made over: the link's two reads, which the fast probe stamps, not the
    frames' interval): the counter's change between those two frames as fabtop's own rates
    tell it. Every frame
    in between must carry the rate over its whole interval since the previous frame, or
    an interval would be lost from the sum (AssertionError).
    """
    i = next(k for k, t in enumerate(ticks) if t is after)
    j = next(k for k, t in enumerate(ticks) if t is upto)
    total, prev = 0.0, after
    for t in ticks[i + 1 : j + 1]:
        v = t.rates.get(link, {}).get(key)
        if t.dt is None or not isinstance(v, float) or t.gap.get(link):
            raise AssertionError(f"{t.host} {link}: no {key} at {t.clock_s:.2f}")
        if abs(t.clock_s - prev.clock_s - t.dt) > 1e-3:
            raise AssertionError(f"{t.host}: a frame is missing before {t.clock_s:.2f}")
        span = t.spans.get(link)
        total += v * (span if span is not None else t.dt)
        prev = t
    return total


def max_gap(ticks: list[Tick], start: float, end: float) -> float:
    """Longest wait between consecutive frames applied in [start, end] (monotonic)."""
    times = [start, *(t.mono for t in ticks if start <= t.mono <= end), end]
    return max(b - a for a, b in itertools.pairwise(times))
