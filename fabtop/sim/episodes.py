"""Scripted faults: what each episode does to the fabric at a given simulation time.

An episode never draws random numbers: its effect is a pure function of the time since
it started, so a fabric's text is the same for the same seed and time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

KINDS: tuple[str, ...] = (
    "healthy",
    "incast",
    "pfc_storm",
    "link_flap",
    "gpu_thermal",
    "no_ecn",
    "switch_no_pfc",
    "optic_degrade",
)
# The Macs' road (issue 14): what each sets on the target Mac (fabtop/sim/mac.py).
MAC_KINDS = {
    "rdma_no_ipv4": "no_ipv4",
    "tb_bridge_loop": "bridge_loop",
    "rdma_no_device": "no_device",
    "rdma_tb4": "tb4",
}
KINDS = (*KINDS, *MAC_KINDS)


@dataclass(frozen=True, slots=True)
class Episode:
    """One scripted episode: ``kind`` from ``start_s`` for ``duration_s`` on ``target``."""

    kind: str
    start_s: float
    duration_s: float
    target: str | None = None  # host; None = the kind's default
    port: int | None = None  # port (or GPU) index on the target; None = the kind's default

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown episode kind {self.kind!r}; known: {', '.join(KINDS)}")

    @property
    def end_s(self) -> float:
        """When the episode is over."""
        return self.start_s + self.duration_s


def _cycle(*parts: tuple[str, float]) -> tuple[Episode, ...]:
    out: list[Episode] = []
    t = 0.0
    for kind, dur in parts:
        out.append(Episode(kind, t, dur))
        t += dur
    return tuple(out)


# The demo: healthy first, then each fault in turn; about three minutes per cycle.
DEMO_CYCLE: tuple[Episode, ...] = _cycle(
    ("healthy", 20.0),
    ("incast", 25.0),
    ("pfc_storm", 25.0),
    ("healthy", 10.0),
    ("link_flap", 20.0),
    ("gpu_thermal", 30.0),
    ("no_ecn", 25.0),
    ("healthy", 10.0),
    ("rdma_no_ipv4", 15.0),
)
DEMO_CYCLE_S = DEMO_CYCLE[-1].end_s

# Defaults of each kind (the demo topology's names).
DEFAULT_TARGET = {
    "incast": ("node1", 0),
    "pfc_storm": ("node3", 0),
    "link_flap": ("node2", 1),
    "gpu_thermal": ("node4", 1),
    "no_ecn": ("node2", 0),
    # Scenario only (not in the demo's cycle): --demo-scenario switch_no_pfc.
    "switch_no_pfc": ("node1", 0),
    # Scenario only: --demo-scenario optic_degrade (its story takes three minutes).
    "optic_degrade": ("node1", 1),
    "rdma_no_ipv4": ("mac1", 0),
    "tb_bridge_loop": ("mac1", 0),  # every Mac of the ring bridges its ports
    "rdma_no_device": ("mac2", 0),
    "rdma_tb4": ("mac1", 0),  # the cable trains at 40 Gb/s: both ends
}
FLAP_DOWN_AT_S = 8.0
FLAP_DOWN_FOR_S = 4.0
STORM_WARNING_AT_S = 2.0
# A degrading optic (issue 33): the pre-FEC BER of a healthy PAM4 link for a minute, then
# up a decade every 30 s for a minute, held there; the link flaps at 150 s and comes back
# with its BER 250 x what it was (SONiC's "pre-FEC BER guard after a link flap").
OPTIC_HEALTHY_BER = 2e-9
OPTIC_CLIMB_AT_S, OPTIC_DECADE_S, OPTIC_CLIMB_S = 60.0, 30.0, 60.0
OPTIC_FLAP_AT_S, OPTIC_AFTER_BER = 150.0, 5e-5


@dataclass(slots=True)
class PortMods:
    """How an episode bends one RoCE port's traffic during one grid cell."""

    down: bool = False
    rx_scale: float = 1.0
    tx_scale: float = 1.0
    rx_pause_frac: float = 0.0
    tx_pause_frac: float = 0.0
    ecn_marked_pps: float = 0.0
    cnp_sent_pps: float = 0.0
    cnp_handled_pps: float = 0.0
    # Discrete events that happen inside the cell.
    carrier_changes: int = 0
    link_down_events: int = 0
    storm_warnings: int = 0
    retransmits: int = 0
    switch_drop_frac: float = 0.0  # share of the RDMA packets toward this port the switch drops
    pre_fec_ber: float | None = None  # a degrading optic's BER (None: the port's healthy one)


@dataclass(slots=True)
class Mods:
    """Everything the active episodes change during one grid cell."""

    token_factor: float = 1.0
    ports: dict[tuple[str, int], PortMods] = field(default_factory=dict)
    gpu_heat_c: dict[tuple[str, int], float] = field(default_factory=dict)
    ecn_off: set[str] = field(default_factory=set)
    active: list[str] = field(default_factory=list)
    mac: dict[str, set[str]] = field(default_factory=dict)  # Mac -> conditions (MAC_KINDS)

    def port(self, host: str, idx: int) -> PortMods:
        """The modifiers of one port, created on first use."""
        key = (host, idx)
        pm = self.ports.get(key)
        if pm is None:
            pm = self.ports[key] = PortMods()
        return pm


def _inside(at: float, t0: float, dt: float) -> bool:
    return t0 <= at < t0 + dt


def _ramp(x: float) -> float:
    return min(max(x, 0.0), 1.0)


def apply_episode(
    ep: Episode, rel: float, dt: float, hosts: list[str], roce_hosts: list[str], mods: Mods
) -> None:
    """Add the effect of ``ep`` at ``rel`` seconds into it (cell length ``dt``) to ``mods``."""
    if ep.kind == "healthy":
        return
    target, idx = DEFAULT_TARGET[ep.kind]
    target = ep.target or target
    idx = ep.port if ep.port is not None else idx
    if target not in hosts:
        return
    mods.active.append(f"{ep.kind}:{target}")
    wobble = 0.5 + 0.5 * math.sin(rel * 1.7)
    peers = [h for h in roce_hosts if h != target]
    if ep.kind == "incast":
        # Three senders into the target: the switch buffer fills, the target's NIC and the
        # switch pause the senders, the switch marks CE toward the target.
        tp = mods.port(target, idx)
        tp.rx_scale = 1.6
        tp.tx_pause_frac = 0.10 + 0.06 * wobble
        tp.ecn_marked_pps = 180_000.0 + 60_000.0 * wobble
        tp.cnp_sent_pps = tp.ecn_marked_pps * 0.35
        for h in peers[:3]:
            pm = mods.port(h, idx)
            pm.rx_pause_frac = 0.08 + 0.05 * wobble
            pm.tx_scale = 0.9
            pm.cnp_handled_pps = tp.cnp_sent_pps / max(len(peers[:3]), 1)
        mods.token_factor *= 0.85
    elif ep.kind == "pfc_storm":
        # The target's receive path is stuck: it pauses the switch without end, the switch
        # pauses everyone sending on that priority; the collective stalls.
        tp = mods.port(target, idx)
        tp.tx_pause_frac = 0.996
        tp.rx_scale = 0.0
        tp.tx_scale = 0.0
        if _inside(STORM_WARNING_AT_S, rel, dt):
            tp.storm_warnings = 1
        for h in peers:
            pm = mods.port(h, idx)
            pm.rx_pause_frac = 0.97
            pm.tx_scale = 0.0
            pm.rx_scale = 0.02
        mods.token_factor *= 0.04
    elif ep.kind == "link_flap":
        pm = mods.port(target, idx)
        down_at, up_at = FLAP_DOWN_AT_S, FLAP_DOWN_AT_S + FLAP_DOWN_FOR_S
        if _inside(down_at, rel, dt):
            pm.carrier_changes += 1
            pm.link_down_events += 1
        if _inside(up_at, rel, dt):
            pm.carrier_changes += 1
            pm.retransmits += 1
        if down_at <= rel < up_at:
            pm.down = True
            mods.token_factor *= 0.6
    elif ep.kind == "optic_degrade":
        pm = mods.port(target, idx)
        pm.pre_fec_ber = optic_ber(rel)
        down_at, up_at = OPTIC_FLAP_AT_S, OPTIC_FLAP_AT_S + FLAP_DOWN_FOR_S
        if _inside(down_at, rel, dt):
            pm.carrier_changes += 1
            pm.link_down_events += 1
        if _inside(up_at, rel, dt):
            pm.carrier_changes += 1
        if down_at <= rel < up_at:
            pm.down = True
    elif ep.kind == "gpu_thermal":
        # Climbs to about 90 C over 60 % of the episode, holds, cools in the last 20 %.
        x = rel / ep.duration_s
        heat = _ramp(x / 0.6) if x < 0.8 else _ramp((1.0 - x) / 0.2)
        mods.gpu_heat_c[(target, idx)] = heat
        if heat > 0.85:
            mods.token_factor *= 0.72
    elif ep.kind == "switch_no_pfc":
        # Incast into the target through a switch that runs no PFC on the RoCE class: the
        # hosts have PFC on, but the switch never pauses anyone; its buffer overflows and
        # drops, so the target sees out-of-sequence and no host ever receives a pause.
        tp = mods.port(target, idx)
        tp.rx_scale = 1.5
        tp.switch_drop_frac = 0.002 + 0.002 * wobble
        tp.ecn_marked_pps = 150_000.0 + 50_000.0 * wobble
        tp.cnp_sent_pps = tp.ecn_marked_pps * 0.35
        for h in peers[:3]:
            pm = mods.port(h, idx)
            pm.tx_scale = 0.9
            pm.cnp_handled_pps = tp.cnp_sent_pps / max(len(peers[:3]), 1)
        mods.token_factor *= 0.7
    elif ep.kind in MAC_KINDS:
        cond = MAC_KINDS[ep.kind]
        every = ep.kind in ("tb_bridge_loop", "rdma_tb4")
        for h in [n for n in hosts if n.startswith("mac")] if every else [target]:
            mods.mac.setdefault(h, set()).add(cond)
    elif ep.kind == "no_ecn":
        # DCQCN off on the target: congestion is handled by PFC alone, nothing is marked.
        mods.ecn_off.add(target)
        tp = mods.port(target, idx)
        tp.rx_scale = 1.4
        tp.tx_pause_frac = 0.18 + 0.08 * wobble
        for h in peers[:3]:
            pm = mods.port(h, idx)
            pm.rx_pause_frac = 0.14 + 0.06 * wobble
            pm.tx_scale = 0.85
        mods.token_factor *= 0.8


def optic_ber(rel: float) -> float:
    """The degrading optic's pre-FEC BER ``rel`` seconds into its episode."""
    if rel >= OPTIC_FLAP_AT_S:
        return OPTIC_AFTER_BER
    climbed = _ramp((rel - OPTIC_CLIMB_AT_S) / OPTIC_CLIMB_S) * OPTIC_CLIMB_S
    return OPTIC_HEALTHY_BER * math.pow(10.0, climbed / OPTIC_DECADE_S)


def active_episodes(
    episodes: tuple[Episode, ...], cycle_s: float | None, t: float
) -> list[tuple[Episode, float]]:
    """The episodes running at ``t`` with the time since each started."""
    tt = t % cycle_s if cycle_s else t
    return [(ep, tt - ep.start_s) for ep in episodes if ep.start_s <= tt < ep.end_s]


def episode_at(episodes: tuple[Episode, ...], cycle_s: float | None, t: float) -> str:
    """Name of the (first) episode running at ``t``, ``healthy`` when none."""
    running = [ep.kind for ep, _ in active_episodes(episodes, cycle_s, t) if ep.kind != "healthy"]
    return running[0] if running else "healthy"
