"""The composition root: the one place a Config becomes a fabric state, rules and a session.

The dashboard, ``snapshot``, ``doctor``, ``record``, ``replay``, ``export`` and the
benchmarks all start here, so each of them runs the same rules with the same thresholds
over the same transports.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from collectors.transport.base import Transport
from fabtop.config import Config
from fabtop.core.rules import make_evaluator
from fabtop.core.state import FabricState
from fabtop.run.demo import demo_spec, demo_transports
from fabtop.run.session import EventTap, Session
from fabtop.sim.transport import DemoTransport


def fabric_state(config: Config, *, clock: Callable[[], float] = time.monotonic) -> FabricState:
    """A fresh state for ``config``'s hosts, with the rules at the config's thresholds."""
    rules = make_evaluator(config.thresholds, firewall_ports=config.firewall_ports)
    return FabricState(
        config.hosts,
        rules=rules,
        clock=clock,
        thresholds=config.thresholds,
        interval=config.interval,
    )


def is_demo(config: Config) -> bool:
    """True for the built-in simulated fabric (``--demo``, ``--demo-scenario``,
    ``--demo-hosts``)."""
    return demo_spec(config) is not None


def open_session(
    config: Config,
    *,
    state: FabricState | None = None,
    transports: dict[str, Transport] | None = None,
    demo_speed: float = 1.0,
    events: EventTap | None = None,
    on_change: Callable[[], None] | None = None,
    discover_inference: bool = True,
) -> Session:
    """A Session collecting ``config``'s hosts into ``state`` (a fresh one by default).

    The demo's simulated transports are chosen here when the config is the demo's
    (at ``demo_speed`` times real time); otherwise each host gets the transport its
    config asks for, created by the session on first use.
    """
    if state is None:
        state = fabric_state(config)
    if transports is None and is_demo(config):
        transports = demo_transports(config, speed=demo_speed)
    sim = next((t for t in (transports or {}).values() if isinstance(t, DemoTransport)), None)
    if sim is not None:
        # The simulated nodes' clocks run on the simulation's own calendar: arrivals are
        # stamped on that axis, so the demo's hosts are not "a year behind".
        clock = sim.clock
        state.wall = lambda: clock.fabric.base_epoch_s + clock.now()
    return Session(
        config,
        state,
        transports=transports,
        events=events,
        on_change=on_change,
        discover_inference=discover_inference,
    )
