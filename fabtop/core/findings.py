"""Findings: what a health rule concluded, with typed evidence and the next step.

A finding says what it is about as data (``host``, ``port``, ``priority``) and names
other ports in its evidence as :class:`PortRef` values, so a view finds the rows it
colours by key. ``subject``, ``summary`` and ``next_step`` are text for people: nothing
takes them apart again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collectors.samples import LinkSample
from fabtop.core.units import evidence_text

SEVERITIES = ("info", "warning", "critical")

# Who pauses whom (pfc_storm, congestion_without_ecn): the port sending the pauses and
# the ports it holds back.
STUCK_RECEIVER = "stuck_receiver"
PAUSED_PEERS = "paused_peers"
# Evidence of a finding whose condition is no longer seen but not yet cleared (a rule's
# restore hold): seconds since it last held.
QUIET_S = "quiet_s"
# Evidence key of a storm the fast probe's watchdog named: the window it measured over.
WATCHDOG_WINDOW_S = "watchdog_window_s"


@dataclass(frozen=True, slots=True)
class PortRef:
    """One port of one host: the keys a view finds it by, and the name people read."""

    host: str
    link: str  # the link's id: its key in HostSample.links
    name: str  # what the operator types: the netdev, else the RDMA device/port

    @property
    def key(self) -> tuple[str, str]:
        """(host, link id): how the state and the views key a port."""
        return self.host, self.link

    @property
    def label(self) -> str:
        """``host/name``, as summaries and panels write a port."""
        return f"{self.host}/{self.name}"


def port_ref(host: str, link: LinkSample) -> PortRef:
    """The reference to ``link`` of ``host``, named as the operator types it."""
    if link.netdev:
        name = link.netdev
    elif link.rdma_device:
        name = link.rdma_device + (f"/{link.port}" if link.port is not None else "")
    else:
        name = link.id
    return PortRef(host, link.id, name)


# A measured number, a text fact (a firmware version, a trust mode), priorities, or ports.
# An empty tuple is "no priority" (PFC on none); no ports at all is None.
Evidence = float | int | str | tuple[int, ...] | PortRef | tuple[PortRef, ...] | None


def prio_text(prios: tuple[int, ...]) -> str:
    """Priorities as the QoS tools print them: ``3,4``, or ``none``."""
    return ",".join(map(str, prios)) or "none"


def evidence_value(v: Evidence) -> float | int | str | None:
    """An evidence value as text or a number (JSON, doctor, the PFC panel): ports by label."""
    if isinstance(v, PortRef):
        return v.label
    if isinstance(v, tuple):
        ports = [x.label for x in v if isinstance(x, PortRef)]
        if ports:
            return ", ".join(ports)
        return prio_text(tuple(x for x in v if isinstance(x, int)))
    return v


@dataclass(slots=True)
class Finding:
    """What a health rule concluded: one line for the screen, evidence and a next step."""

    rule: str
    severity: str  # one of SEVERITIES
    subject: str  # display text: "node3/enp65s0f0np0/prio3", "fabric", "node4/gpu1"
    summary: str
    evidence: dict[str, Evidence] = field(default_factory=dict)
    next_step: str = ""
    host: str | None = None
    since: float | None = None  # unix time on the operator's axis the condition was first seen
    port: PortRef | None = None  # the port it is about (None: a host, a GPU, the fabric)
    priority: int | None = None  # the priority it is about, when one

    @property
    def rank(self) -> int:
        """Sort key: critical first."""
        return SEVERITIES.index(self.severity) if self.severity in SEVERITIES else 0

    @property
    def headline(self) -> str:
        """The summary without the port (or host) it starts with, for a line beside the subject."""
        if self.port is not None:
            lead = self.port.label + (f" prio {self.priority}" if self.priority is not None else "")
        elif self.host is not None:
            lead = self.host
        else:
            return self.summary
        return self.summary.removeprefix(lead + ": ")

    def shown_evidence(self) -> dict[str, float | int | str | None]:
        """The evidence as text and numbers (JSON, doctor, the PFC panel): ports by label."""
        return {str(k): evidence_value(v) for k, v in self.evidence.items()}

    def readable_evidence(self, unknown: str | None = None) -> list[tuple[str, str]]:
        """The evidence as people read it (doctor, the screens): each value in the unit its
        name says. A value not known reads ``unknown`` (the full view lists every item), or
        is left out of a one-line view (None); never ``None``."""
        out = []
        for k, v in self.shown_evidence().items():
            text = evidence_text(k, v)
            if text is None:
                text = unknown
            if text is not None:
                out.append((k, text))
        return out

    def number(self, name: str) -> float | None:
        """A numeric evidence value (None when absent or not a number)."""
        v = self.evidence.get(name)
        return float(v) if isinstance(v, int | float) else None

    def ref(self, name: str) -> PortRef | None:
        """A port named in the evidence (the stuck receiver of a storm)."""
        v = self.evidence.get(name)
        return v if isinstance(v, PortRef) else None

    def refs(self, name: str) -> tuple[PortRef, ...]:
        """Ports named in the evidence (the peers a storm pauses); empty when none."""
        v = self.evidence.get(name)
        if isinstance(v, PortRef):
            return (v,)
        if isinstance(v, tuple):
            return tuple(x for x in v if isinstance(x, PortRef))
        return ()
