"""Cumulative counters of a simulated device, integrated on the simulation grid."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class Counters:
    """Cumulative counters integrated on the simulation grid.

    ``vals`` hold the value at the last grid point, ``rates`` the per-second growth for
    the current cell; a reading at a time inside the cell adds the partial step, so a
    counter is a deterministic function of simulation time and never goes backwards.
    """

    __slots__ = ("_prefix", "index", "names", "rates", "vals")

    def __init__(self, names: Sequence[str], start: Mapping[str, int] | None = None) -> None:
        self.names = tuple(names)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.vals = [float((start or {}).get(n, 0)) for n in self.names]
        self.rates = [0.0] * len(self.names)
        self._prefix = [f"     {n}: " for n in self.names]

    def has(self, name: str) -> bool:
        """True when this counter exists on the device."""
        return name in self.index

    def rate(self, name: str, per_s: float) -> None:
        """Set the growth per second of ``name`` for the current cell (absent names: ignored)."""
        i = self.index.get(name)
        if i is not None:
            self.rates[i] = max(per_s, 0.0)

    def bump(self, name: str, n: float) -> None:
        """Add a discrete step to ``name`` (an event, not a rate)."""
        i = self.index.get(name)
        if i is not None:
            self.vals[i] += n

    def clear_rates(self) -> None:
        """Every counter stops growing until rates are set again."""
        self.rates = [0.0] * len(self.names)

    def commit(self, dt: float) -> None:
        """Advance to the next grid point."""
        self.vals = [v + r * dt for v, r in zip(self.vals, self.rates, strict=True)]

    def zero(self) -> None:
        """Driver reload: every counter restarts from 0."""
        self.vals = [0.0] * len(self.names)

    def value(self, name: str, frac_s: float = 0.0) -> int:
        """Value of ``name`` at ``frac_s`` seconds into the current cell."""
        i = self.index[name]
        return int(self.vals[i] + self.rates[i] * frac_s)

    def items(self, frac_s: float = 0.0) -> list[tuple[str, int]]:
        """Every (name, value) at ``frac_s`` seconds into the current cell."""
        return [
            (n, int(v + r * frac_s))
            for n, v, r in zip(self.names, self.vals, self.rates, strict=True)
        ]

    def ethtool_text(self, frac_s: float = 0.0) -> str:
        """``ethtool -S`` output: a header line, then ``     name: value`` per counter."""
        lines = ["NIC statistics:"]
        lines += [
            p + str(int(v + r * frac_s))
            for p, v, r in zip(self._prefix, self.vals, self.rates, strict=True)
        ]
        return "\n".join(lines)
