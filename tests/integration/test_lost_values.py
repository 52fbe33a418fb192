"""A value lost is named, and a metric summed from it is unknown, never a partial sum.

A real ConnectX port's ``symbol_error`` file holding 5000 digits (a driver bug, a hostile
tree) is more than any counter: both probes leave it out, say so in a warning on the
host, and the collector makes no ``rx_phy_errors`` of ``port_rcv_remote_physical_errors``
alone (issue 27, class 5). The probes run as a node runs them, over the captured sysfs
tree.
"""

# ruff: noqa: F811
# (pytest fixtures imported from test_probe are redefined as test parameters)

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.probe import build_argv
from fabtop.core.pipeline import Pipeline
from tests.integration.test_probe import Probe, _args, _start, node, run_probe  # noqa: F401

PORT = "sys/class/infiniband/mlx5_0/ports/1/counters"
HUGE = "7" * 5000


@pytest.mark.parametrize("probe", ["sh", "python"])
@pytest.mark.parametrize(
    ("file", "link_id", "counter", "metric"),
    [
        (f"{PORT}/symbol_error", "mlx5_0/1", "symbol_error", "rx_phy_errors"),
        # a netdev without ethtool statistics: its drops are the sysfs statistics' own
        ("sys/class/net/veth9/statistics/rx_dropped", "veth9", "rx_dropped", "rx_discards"),
    ],
)
def test_a_value_too_long_is_named_and_its_sum_is_unknown(
    probe: str,
    file: str,
    link_id: str,
    counter: str,
    metric: str,
    node: Path,
    run_probe: list[Probe],
) -> None:
    veth = node / "sys/class/net/veth9"
    (veth / "statistics").mkdir(parents=True)
    (veth / "operstate").write_text("up\n")
    (veth / "statistics/rx_bytes").write_text("5000\n")
    (node / file).write_text(HUGE + "\n")
    args = _args(node, probe=probe, max_frames=3)
    p = _start(run_probe, ["sh", "-s", "--", *build_argv(args)], node)
    frames = p.frames(3, deadline_s=20)
    assert len(frames) == 3
    pipe = Pipeline()
    for f in frames:
        sample, _ = pipe.apply_frame("n1", f)
    said = "\n".join(sample.warnings)
    rel = file.split("/", 3)[3]  # as the probe names it: under class/infiniband or net
    assert f"value of {rel} left out: longer than 2048 bytes" in said, said
    link = sample.links[link_id]
    assert not any(counter in c for c in link.counters.values())
    assert metric not in link.metrics  # unknown, not the sum of the other parts
    assert "rx_bytes" in link.metrics  # the rest of the port is read
