"""Which ports a cable joins (issue 33): ``[[cable]]`` pairs from the config file.

An end is ``host/port`` (a fabtop host and its netdev, or RDMA device/port as
``mlx5_0/1``) or a bare name: a device fabtop does not watch (a switch, a patch panel).
Where both ends are fabtop hosts the cable panel shows them side by side, so "which end
is bad" is one look. For now the config is the only source: Thunderbolt links carry no
optics, and LLDP or InfiniBand peer discovery comes later.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CableEnd:
    """One end of a cable: a fabtop host's port, or a device fabtop does not watch."""

    host: str  # a fabtop host, or the device's name (port None)
    port: str | None  # netdev, or RDMA device/port; None: not a fabtop host's port

    @property
    def label(self) -> str:
        """As the config writes it: ``node1/enp65s0f0np0`` or ``switch1``."""
        return self.host if self.port is None else f"{self.host}/{self.port}"


@dataclass(frozen=True, slots=True)
class Cable:
    """A cable between two ends, as ``[[cable]] a = ... b = ...`` says."""

    a: CableEnd
    b: CableEnd

    def other(self, host: str, port: str) -> CableEnd | None:
        """The far end from ``host``'s ``port`` (None: this cable does not end there)."""
        if (self.a.host, self.a.port) == (host, port):
            return self.b
        if (self.b.host, self.b.port) == (host, port):
            return self.a
        return None


def far_end(cables: Iterable[Cable], host: str, port: str) -> CableEnd | None:
    """The other end of the cable plugged into ``host``'s ``port`` (None: none known)."""
    for cable in cables:
        end = cable.other(host, port)
        if end is not None:
            return end
    return None
