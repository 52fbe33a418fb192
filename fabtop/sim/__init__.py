"""Simulated hosts that print the probe's frames: the ``--demo`` fabric and test scenarios."""

from fabtop.sim.episodes import DEMO_CYCLE, DEMO_CYCLE_S, KINDS, Episode
from fabtop.sim.fabric import DEMO_METRICS_URL, Fabric, demo_fabric, demo_hosts
from fabtop.sim.host import SimHost, SimHostConfig

__all__ = [
    "DEMO_CYCLE",
    "DEMO_CYCLE_S",
    "DEMO_METRICS_URL",
    "KINDS",
    "Episode",
    "Fabric",
    "SimHost",
    "SimHostConfig",
    "demo_fabric",
    "demo_hosts",
]
