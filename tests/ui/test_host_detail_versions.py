"""A host's software on its detail screen (issue 15): each version with its source, an
unknown one said unknown with why, one never read said so, the NICs' driver/firmware."""

from __future__ import annotations

from collectors.samples import SoftwareVersions, VersionRead
from tests.ui.fabric import dashboard as make
from tests.ui.fabric import feed, sample, words
from tests.ui.test_host_detail import body
from tui.screens.host_detail import HostDetailScreen


async def test_versions_known_unknown_and_not_read_at_80x24() -> None:
    app, state, clock = make(hosts=2)
    s = sample("node1", 21)
    s.versions = SoftwareVersions(
        kernel=VersionRead("6.8.0-45-generic", "uname -r"),
        rdma_core=VersionRead(None, "dpkg-query", "rdma-core not installed"),
        ofed=VersionRead(None, "ofed_info -s", "no ofed_info"),
        nvidia_driver=VersionRead("580.95.05", "/proc/driver/nvidia/version"),
    )  # nccl: never read
    clock.t += 1.0
    feed(state, "node1", s, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.push_screen(HostDetailScreen(app.ctx, "node1"))
        await pilot.pause()
        text = words(body(app))
        assert "Software" in text
        assert "kernel 6.8.0-45-generic uname -r" in text
        assert "rdma-core unknown (rdma-core not installed)" in text
        assert "OFED unknown (no ofed_info)" in text
        assert "NVIDIA driver 580.95.05" in text
        assert "NCCL (loaded) not read" in text
        assert "NIC mlx5_core, fw 28.39.1002" in text
