"""64 hosts at 1 Hz over a real sshd on loopback: every host's shown sample stays fresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.sshd import Sshd
from tests.testbed.fleet import fanout, fleet_config

pytestmark = pytest.mark.sshd

HOSTS = 64


async def test_64_hosts_all_stay_fresh(sshd: Sshd, tmp_path: Path) -> None:
    config = fleet_config(sshd, tmp_path, HOSTS, interval=1.0)
    # fabtop's own loop is blocked for 3 s in the middle of the start (a loaded operator
    # machine): the hosts streaming then are not called stale or down for it, the hosts
    # still starting are not given up on, and fabtop says it fell behind.
    r = await fanout(config, warmup_s=3.0, measure_s=8.0, stall_s=3.0)
    print(r.summary())
    print(r.startup_line())
    assert r.up == HOSTS
    assert r.blamed == {} and r.silent == 0, r.startup_line()
    assert r.own_lag >= 1 and r.lag_max_s >= 2.5, r.startup_line()
    # No host ever looked stale (2.5 intervals) under the load of the other 63; the p99
    # target itself (< 1.5 s) is a figure that benchmarks/fanout.py prints.
    assert r.pct(1.0) < 2.5, r.summary()
    # Every host delivered about one frame a second during the measurement.
    assert r.frames >= HOSTS * (r.wall_s - 1.5)
