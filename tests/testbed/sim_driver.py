"""The simulated hosts of a bed: their trees written, then kept moving once per interval."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from fabtop.sim import Fabric, SimHostConfig, tree

if TYPE_CHECKING:
    from tests.testbed.netns import Testbed

SIM_START_S = 30.0  # simulated time the trees start at: under traffic, counters moving


class SimDriver:
    """Writes the simulated hosts' trees, then rewrites them once per interval."""

    def __init__(self, bed: Testbed) -> None:
        self.bed = bed
        sims = [h for h in bed.hosts if h.sim_root is not None]
        self.fabric = Fabric([SimHostConfig(h.name, ib_port=True) for h in sims], slow_every_s=0.0)
        self.roots = {h.name: h.sim_root for h in sims if h.sim_root is not None}
        self.hold: set[str] = set()  # hosts whose trees a test edits by hand for now
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.t0 = time.monotonic()

    def write(self) -> None:
        """Create every tree at the start time."""
        self.fabric.at(SIM_START_S)
        for name, root in self.roots.items():
            tree.write(self.fabric.hosts[name], root, SIM_START_S)

    def tick(self) -> None:
        """Bring every tree to now."""
        t = SIM_START_S + time.monotonic() - self.t0
        with self.lock:
            for name, root in self.roots.items():
                if name not in self.hold:
                    tree.update(self.fabric.hosts[name], root, t)

    def reload_driver(self, name: str) -> None:
        """A NIC driver reload on a simulated host: its counters restart from 0."""
        with self.lock:
            self.fabric.hosts[name].reload_driver()

    def loop(self) -> None:
        """Tick until stopped."""
        while not self._stop.wait(min(self.bed.interval, 1.0) / 2):
            self.tick()

    def start(self) -> None:
        """Tick in a daemon thread."""
        self._thread = threading.Thread(target=self.loop, daemon=True, name="sim-driver")
        self._thread.start()

    def stop(self) -> None:
        """Stop ticking."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
