"""The demo fabric fed synchronously: a FabricState at a chosen simulation time.

Screenshots, snapshot tests and the benchmark need the same picture every run: the
simulation is stepped by hand (no wall clock, no transports), and its frames go
through the live path (frame decoder, FabricState.apply_frame).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from collectors.frames import FrameDecoder
from collectors.parsers.prometheus_text import parse_inference_metrics
from fabtop.config import HostConfig
from fabtop.sim.fabric import Fabric, demo_fabric
from fabtop.state import FabricState


@dataclass
class ManualClock:
    """A monotonic clock that only moves when told to."""

    t: float = 10_000.0

    def __call__(self) -> float:
        return self.t


def _default_rules() -> Callable[[FabricState], list[object]] | None:
    try:
        from fabtop.rules import evaluate
    except ImportError:
        return None
    return evaluate  # type: ignore[return-value]


def feed_until(
    fabric: Fabric, state: FabricState, clock: ManualClock, start_s: float, until_s: float,
    interval: float = 1.0, silent: Sequence[str] = (),
) -> None:
    """Apply one frame per host per ``interval`` from ``start_s`` to ``until_s`` inclusive.

    Hosts named in ``silent`` send nothing (their last frame grows old).
    """
    decoders = {name: FrameDecoder() for name in fabric.hosts}
    n = round((until_s - start_s) / interval)
    for i in range(n + 1):
        t = start_s + i * interval
        clock.t += interval
        for name, host in fabric.hosts.items():
            if name in silent or name not in state.hosts or not host.answers(t):
                continue
            text = host.frame(t)
            url = host.cfg.inference_url
            for frame in decoders[name].feed(text.encode()):
                state.apply_frame(name, frame)
            if url:
                state.apply_inference(name, [parse_inference_metrics(host.metrics_text(), url)])


def demo_state(
    until_s: float = 60.0, seed: int = 0, fabric: Fabric | None = None,
    history_s: float = 90.0, interval: float = 1.0,
) -> tuple[FabricState, ManualClock, Fabric]:
    """A FabricState holding the demo's last ``history_s`` seconds up to ``until_s``."""
    fab = fabric if fabric is not None else demo_fabric(seed=seed)
    clock = ManualClock()
    hosts = [
        HostConfig(name=n, inference=(h.cfg.inference_url,) if h.cfg.inference_url else ())
        for n, h in fab.hosts.items()
    ]
    state = FabricState(hosts, rules=_default_rules(), clock=clock)  # type: ignore[arg-type]
    start = max(0.0, until_s - history_s)
    feed_until(fab, state, clock, start, until_s, interval)
    return state, clock, fab
