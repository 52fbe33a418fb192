"""A week of netdev churn compressed: tables keyed by remote names forget, never refuse.

Pod veths and SR-IOV VFs come and go for days; the fast probe defines a new schema each
time a node's netdev set changes. The probe (node side) and the stream's decoder
(collector side) must both keep only what is in use, and every live counter must still
decode after thousands of changes (issue 27, class 2).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors import frames as fr
from collectors import probe_fast as pf
from collectors.assemble import assemble
from collectors.frames import FrameDecoder

CHANGES = 600  # past the table bound below: the old decoder refused new schemas there
BOUND = 256


class _Driver:
    """ETHTOOL_GSTATS as the probe calls it, for the netdevs the tree has now."""

    def __init__(self) -> None:
        self.names: dict[str, list[bytes]] = {}
        self.bufs: dict[str, object] = {}
        self.calls = 0

    def read(self, ifname: str) -> tuple[list[bytes], tuple[int, ...]]:
        self.calls += 1
        names = self.names.setdefault(
            ifname, [b"rx_bytes", b"tx_bytes", b"rx_%s_x" % ifname.encode()]
        )
        self.bufs[ifname] = object()
        return names, (self.calls, 2 * self.calls, 7)


def _netdev(root: Path, name: str) -> None:
    d = root / "class" / "net" / name
    (d / "statistics").mkdir(parents=True)
    (d / "device").mkdir()
    (d / "statistics" / "rx_bytes").write_text("5\n")
    (d / "mtu").write_text("1500\n")


def _remove(root: Path, name: str) -> None:
    d = root / "class" / "net" / name
    for p in sorted(d.rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    d.rmdir()


def test_a_week_of_netdev_churn_keeps_every_table_bounded_and_every_counter_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fr, "MAX_SCHEMAS", BOUND)  # 4096 in use: the same, sooner
    root = tmp_path / "sys"
    _netdev(root, "eth0")
    probe = pf.Probe(pf.Args([f"sysfs={root}", "gpu=off", "interval_ms=100", "slow_ticks=1"]))
    probe.have = set()  # no tools: only what the tree and the driver give
    drv = _Driver()
    probe.eth = drv  # type: ignore[assignment]
    dec = FrameDecoder()
    live = "veth0"
    _netdev(root, live)
    for i in range(1, CHANGES + 1):
        # One pod goes, another comes: the netdev set changes every tick (every rescan).
        new = f"veth{i}"
        _remove(root, live)
        _netdev(root, new)
        live = new
        probe.wd.last[live] = (0.0, {})  # the watchdog keeps a baseline per port
        (frame,) = dec.feed(probe.tick(True))
        bad = [(s.kind, s.subject, s.detail) for s in frame.sections if s.status == "error"]
        assert bad == [], f"change {i}"
    # Both ends hold what is in use: eth0's and the live veth's ethtool sections and the
    # sysfs counters section, and no more.
    assert len(dec.schemas) <= 3, sorted(s.key for s in dec.schemas.values())
    assert len(dec._bound) <= 3
    assert set(probe.enc.schemas) == {
        ("ethtool_S", "eth0"),
        ("ethtool_S", live),
        ("sysnet_counters", "-"),
    }
    assert set(drv.names) <= {"eth0", live} and set(drv.bufs) <= {"eth0", live}
    assert set(probe.wd.last) <= {"eth0", live}
    assert BOUND < CHANGES
    # ... and the live netdevs' counters decode, by name.
    sample = assemble("n1", frame)
    assert sample.links[live].counters["ethtool"][f"rx_{live}_x"] == 7
    assert sample.links["eth0"].counters["ethtool"]["rx_bytes"] > 0
    assert sample.links[live].counters["netdev"]["rx_bytes"] == 5


def test_a_section_whose_schema_the_stream_lost_is_said_and_counted() -> None:
    """Values naming a schema the decoder does not hold (a table past its bound, a cut
    schema line) are not decoded: an error section, counted, frame after frame."""
    head = "@@fabtop-frame {seq} {seq}000000000 1.00 1.000\n"
    dec = FrameDecoder()
    for seq in (1, 2, 3):
        (frame,) = dec.feed(
            (
                head.format(seq=seq) + f"@@section ethtool_S eth0 1 ok schema=7\n1 2\n@@end {seq}\n"
            ).encode()
        )
    sec = frame.find("ethtool_S", "eth0")
    assert sec is not None and sec.status == "error"
    assert dec.undecoded == 3 and dec.undecoded_frames == 3
    # A frame that decodes everything ends the run of undecoded frames.
    dec.feed(
        (
            head.format(seq=4) + "@@section schema 7 - ok for=ethtool_S\na\nb\n"
            "@@section ethtool_S eth0 1 ok schema=7\n1 2\n@@end 4\n"
        ).encode()
    )
    assert dec.undecoded_frames == 0


def test_a_dropped_schema_frees_its_section_and_a_rebound_section_frees_its_old_schema() -> None:
    head = "@@fabtop-frame {seq} {seq}000000000 1.00 1.000\n"
    dec = FrameDecoder()
    dec.feed(
        (
            head.format(seq=1) + "@@section schema 1 - ok for=ethtool_S\na\n"
            "@@section ethtool_S eth0 1 ok schema=1\n5\n@@end 1\n"
        ).encode()
    )
    dec.feed(
        (
            head.format(seq=2) + "@@section schema 2 - ok for=ethtool_S\na\nb\n"
            "@@section ethtool_S eth0 1 ok schema=2\n5 6\n@@end 2\n"
        ).encode()
    )
    assert set(dec.schemas) == {2}  # eth0's names changed: schema 1 is done
    dec.feed((head.format(seq=3) + "@@section schema 2 - ok drop\n@@end 3\n").encode())
    assert dec.schemas == {} and dec._bound == {}
    assert dec._schema_chars == 0 and dec.take_warnings() == []


def test_slow_sections_of_a_netdev_gone_are_no_longer_carried() -> None:
    """A slow tick brings ethtool -i (and dcb, mlnx_qos) of every netdev there is: one it
    no longer brings is gone, not carried into every later frame for the week."""
    from collectors.frames import Frame, Section
    from fabtop.core.pipeline import Pipeline

    def frame(seq: int, *netdevs: str) -> Frame:
        secs = [Section("ethtool_i", n, 1, "ok", None, "driver: veth") for n in netdevs]
        return Frame(
            seq,
            seq,
            float(seq),
            float(seq),
            [Section("probe", None, 1, "ok", None, "slow 1"), *secs],
        )

    pipe = Pipeline()
    pipe.with_slow_sections("n1", frame(1, "eth0", "veth1"))
    between = pipe.with_slow_sections("n1", Frame(2, 2, 2.0, 2.0, []))
    assert {s.subject for s in between.sections} == {"eth0", "veth1"}
    pipe.with_slow_sections("n1", frame(3, "eth0", "veth2"))  # veth1 gone, veth2 came
    later = pipe.with_slow_sections("n1", Frame(4, 4, 4.0, 4.0, []))
    assert {s.subject for s in later.sections} == {"eth0", "veth2"}
    assert len(pipe._slow["n1"]) == 2
