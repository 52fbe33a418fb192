"""The simulated fabric: frames decode, counters behave like the real NICs', faults show."""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from collectors.assemble import assemble
from collectors.frames import Frame, FrameDecoder
from collectors.gpu_sections import gpus_from_frame
from collectors.parsers.ethtool import parse_ethtool_stats
from collectors.parsers.sysfs import NetdevRecord, parse_sysib, parse_sysnet
from fabtop.sim import Fabric, SimHostConfig, demo_fabric, demo_hosts, tree
from fabtop.sim.counter_names import IB_HW_CONG_COUNTERS, MLX5_DRIVER_SOURCE_NAMES
from fabtop.sim.episodes import FLAP_DOWN_AT_S, FLAP_DOWN_FOR_S
from fabtop.sim.transport import DemoTransport, SimClock, sim_transports

MLX5_CAPTURE = "ethtool/ethtool_S_mlx5_xdp_kernel5.15_nonzero_only_bpf-list.txt"
IGB_CAPTURE = "ethtool/ethtool_S_igb_1g_go-ethtool-metrics.txt"
P0, P1 = "enp65s0f0np0", "enp65s0f1np1"


def decode(text: str) -> Frame:
    d = FrameDecoder()
    frames = d.feed(text.encode())
    assert len(frames) == 1, d.take_warnings()
    assert d.take_warnings() == []
    return frames[0]


def frame_at(fab: Fabric, host: str, t: float) -> Frame:
    return decode(fab.hosts[host].frame(t))


def ethtool(frame: Frame, netdev: str) -> dict[str, int]:
    sec = frame.find("ethtool_S", netdev)
    assert sec is not None and sec.status == "ok"
    parsed = parse_ethtool_stats(sec.text)
    assert parsed.warnings == []
    return parsed.counters


def sysnet(frame: Frame) -> dict[str, NetdevRecord]:
    sec = frame.find("sysnet")
    assert sec is not None
    return parse_sysnet(sec.text).netdevs


def capture_names(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        m = re.match(r"^\s+([^:]+):\s+\d+\s*$", line)
        if m:
            names.add(m.group(1).strip())
    return names


def _linux(fab: Fabric) -> list[str]:
    """The demo's Linux nodes with RoCE NICs and GPUs (the Macs print the macOS probe's
    sections; the DGX Spark is simulated with its Thunderbolt link only)."""
    return [n for n, h in fab.hosts.items() if h.mac is None and h.cfg.roce_ports]


def test_every_host_frame_decodes_with_the_sections_the_probe_sends() -> None:
    fab = demo_fabric()
    macs = [n for n, h in fab.hosts.items() if h.mac is not None]
    assert macs == ["mac1", "mac2"]
    for name in macs:
        kinds = {s.kind for s in frame_at(fab, name, 3.0).sections}
        assert {"probe", "netstat_i", "macmon", "sp_thunderbolt", "ibv_devinfo"} <= kinds
    spark = {s.kind for s in frame_at(fab, "spark1", 3.0).sections}
    assert {"probe", "sysnet", "systb_slow", "ethtool_S"} <= spark
    for name in _linux(fab):
        f = frame_at(fab, name, 3.0)
        kinds = {s.kind for s in f.sections}
        assert {"probe", "sysnet", "sysib", "ethtool_S", "gpu_nvidia"} <= kinds
        assert f.clock_ns == int((fab.base_epoch_s + 3.0) * 1e9)
        assert f.find("ethtool_S", P0) is not None
    tb = frame_at(fab, "node3", 4.0).find("ethtool_S", "thunderbolt0")
    assert tb is not None and tb.status == "error"  # thunderbolt-net has no ethtool stats


def test_counters_never_go_backwards_over_a_healthy_minute() -> None:
    fab = Fabric(demo_hosts(), seed=3)
    prev: dict[str, int] = {}
    for t in range(0, 61, 3):
        f = frame_at(fab, "node1", float(t) + 0.25)
        now: dict[str, int] = {}
        for nd in (P0, P1, "eno1"):
            now.update({f"{nd}:{k}": v for k, v in ethtool(f, nd).items()})
        for nd, rec in sysnet(f).items():
            now.update({f"sys:{nd}:{k}": v for k, v in rec.statistics.items()})
        sib = f.find("sysib")
        assert sib is not None
        for dev, d in parse_sysib(sib.text).devices.items():
            for p in d.ports.values():
                now.update({f"{dev}:{k}": v for k, v in p.counters.items()})
                now.update({f"{dev}:hw:{k}": v for k, v in p.hw_counters.items()})
        for k, v in prev.items():
            assert now[k] >= v, f"{k} went back at t={t}: {v} -> {now[k]}"
        prev = now
    assert len(prev) > 500


def test_healthy_traffic_is_rdma_at_40_to_70_gbps_and_adds_up() -> None:
    fab = Fabric(demo_hosts())
    a, b = ethtool(frame_at(fab, "node2", 10.0), P0), ethtool(frame_at(fab, "node2", 20.0), P0)

    def rate(k: str) -> float:
        return (b[k] - a[k]) / 10.0

    assert 40e9 / 8 <= rate("rx_bytes_phy") <= 70e9 / 8
    assert 40e9 / 8 <= rate("tx_bytes_phy") <= 70e9 / 8
    assert 0.95 <= rate("rx_vport_rdma_unicast_bytes") / rate("rx_bytes_phy") <= 0.99
    per_prio = sum(rate(f"rx_prio{p}_bytes") for p in range(8))
    assert per_prio == pytest.approx(rate("rx_bytes_phy"), rel=0.01)
    assert rate("rx_packets_phy") > 0 and rate("tx_packets_phy") > 0
    # The kernel path (and so /sys statistics) sees only the non-RDMA share.
    assert rate("rx_bytes") < 0.05 * rate("rx_bytes_phy")


def test_every_rendered_counter_name_has_evidence(fixtures_dir: Path) -> None:
    mlx5 = capture_names(fixtures_dir / MLX5_CAPTURE)
    igb = capture_names(fixtures_dir / IGB_CAPTURE)
    procfs_ib = fixtures_dir / "sysfs/prometheus_procfs/sys/class/infiniband/mlx5_0/ports/1"
    ib_counters = {p.name for p in (procfs_ib / "counters").iterdir()}
    ib_hw = {p.name for p in (procfs_ib / "hw_counters").iterdir()}
    rdma_stat = (fixtures_dir / "infiniband/rdma_stat_show_p_mlx5_lkml-rdma.txt").read_text()
    ib_hw |= {ln.split()[0] for ln in rdma_stat.splitlines() if ln.startswith("\t")}
    assert set(IB_HW_CONG_COUNTERS) <= ib_hw
    fab = demo_fabric()
    for name in _linux(fab):
        f = frame_at(fab, name, 2.0)
        for nd in (P0, P1):
            unknown = set(ethtool(f, nd)) - mlx5 - MLX5_DRIVER_SOURCE_NAMES
            assert unknown == set(), unknown
        assert set(ethtool(f, "eno1")) - igb == set()
        sib = f.find("sysib")
        assert sib is not None
        for d in parse_sysib(sib.text).devices.values():
            for p in d.ports.values():
                assert set(p.counters) - ib_counters == set()
                assert set(p.hw_counters) - ib_hw == set()


def test_pause_counters_exist_only_for_pfc_priorities() -> None:
    hosts = [SimHostConfig("a", pfc_prios=(3,)), SimHostConfig("b", pfc_prios=(3, 4))]
    fab = Fabric(hosts)
    a, b = ethtool(frame_at(fab, "a", 1.0), P0), ethtool(frame_at(fab, "b", 1.0), P0)
    assert {k for k in a if "_pause" in k and "prio" in k} == {
        "rx_prio3_pause",
        "rx_prio3_pause_duration",
        "rx_prio3_pause_transition",
        "tx_prio3_pause",
        "tx_prio3_pause_duration",
    }
    assert "rx_prio4_pause_duration" in b and "rx_prio4_pause_duration" not in a
    assert all(f"rx_prio{p}_bytes" in a for p in range(8))
    assert "rx_global_pause" not in a


def test_pfc_storm_pauses_the_stuck_host_all_the_time_and_flattens_its_rx() -> None:
    fab = Fabric.single(demo_hosts(), "pfc_storm")
    t0, t1 = 5.0, 15.0
    n3a, n3b = ethtool(frame_at(fab, "node3", t0), P0), ethtool(frame_at(fab, "node3", t1), P0)
    elapsed_us = (t1 - t0) * 1e6
    paused = n3b["tx_prio3_pause_duration"] - n3a["tx_prio3_pause_duration"]
    assert 0.99 * elapsed_us <= paused <= elapsed_us
    assert n3b["tx_prio3_pause"] > n3a["tx_prio3_pause"]
    assert n3b["rx_bytes_phy"] == n3a["rx_bytes_phy"]
    assert n3b["tx_pause_storm_warning_events"] == 1
    fab.at(0.0)  # replays from the start
    for peer in ("node1", "node2", "node4"):
        a, b = ethtool(frame_at(fab, peer, t0), P0), ethtool(frame_at(fab, peer, t1), P0)
        assert b["tx_prio3_bytes"] == a["tx_prio3_bytes"]
        assert b["rx_prio3_pause_duration"] - a["rx_prio3_pause_duration"] > 0.9 * elapsed_us
    fab.at(t0)
    assert fab.token_rate() < 0.1 * fab.healthy_tokens_per_s


def test_link_flap_takes_the_port_down_and_back() -> None:
    fab = Fabric.single(demo_hosts(), "link_flap")
    down_mid = FLAP_DOWN_AT_S + FLAP_DOWN_FOR_S / 2
    before = frame_at(fab, "node2", 5.0)
    during = frame_at(fab, "node2", down_mid)
    during2 = frame_at(fab, "node2", down_mid + 1.0)
    after = frame_at(fab, "node2", FLAP_DOWN_AT_S + FLAP_DOWN_FOR_S + 2.0)
    s0, s1, s2 = sysnet(before)[P1], sysnet(during)[P1], sysnet(after)[P1]
    assert (s0.operstate, s1.operstate, s2.operstate) == ("up", "down", "up")
    assert s1.speed_mbps is None and s0.speed_mbps == 100000
    assert s0.carrier_changes is not None and s2.carrier_changes == s0.carrier_changes + 2
    e0, e2 = ethtool(before, P1), ethtool(after, P1)
    assert e2["link_down_events_phy"] == e0["link_down_events_phy"] + 1
    d1, d2 = ethtool(during, P1), ethtool(during2, P1)
    assert d2["rx_bytes_phy"] == d1["rx_bytes_phy"] and d2["tx_bytes_phy"] == d1["tx_bytes_phy"]
    sib = during.find("sysib")
    assert sib is not None
    assert parse_sysib(sib.text).devices["mlx5_1"].ports[1].state == "DOWN"
    assert sysnet(during)[P0].operstate == "up"  # the other rail stays


def test_gpu_thermal_sets_the_throttle_reason_and_drops_the_clock() -> None:
    fab = Fabric.single(demo_hosts(), "gpu_thermal", duration_s=30.0)
    cool, _, _ = gpus_from_frame(frame_at(fab, "node4", 1.0))
    hot, _, warns = gpus_from_frame(frame_at(fab, "node4", 20.0))
    assert warns == []
    assert hot[1].temperature_c is not None and hot[1].temperature_c >= 88
    assert "sw_thermal_slowdown" in hot[1].throttle_reasons
    assert cool[1].throttle_reasons == ()
    assert hot[1].sm_clock_mhz is not None and cool[1].sm_clock_mhz is not None
    assert hot[1].sm_clock_mhz < 0.8 * cool[1].sm_clock_mhz
    assert hot[0].throttle_reasons == ()  # only GPU1 overheats
    assert fab.token_rate() < 0.85 * fab.healthy_tokens_per_s


def _hw(frame: Frame, dev: str) -> dict[str, int]:
    sib = frame.find("sysib")
    assert sib is not None
    return parse_sysib(sib.text).devices[dev].ports[1].hw_counters


def test_incast_marks_ecn_at_the_receiver_and_pauses_the_senders() -> None:
    fab = Fabric.single(demo_hosts(), "incast")
    a = {h: frame_at(fab, h, 5.0) for h in fab.hosts}
    b = {h: frame_at(fab, h, 15.0) for h in fab.hosts}
    assert (
        _hw(b["node1"], "mlx5_0")["np_ecn_marked_roce_packets"]
        > _hw(a["node1"], "mlx5_0")["np_ecn_marked_roce_packets"]
    )
    assert _hw(b["node1"], "mlx5_0")["np_cnp_sent"] > _hw(a["node1"], "mlx5_0")["np_cnp_sent"]
    assert ethtool(b["node1"], P0)["tx_prio3_pause"] > ethtool(a["node1"], P0)["tx_prio3_pause"]
    for s in ("node2", "node3", "node4"):
        assert ethtool(b[s], P0)["rx_prio3_pause"] > ethtool(a[s], P0)["rx_prio3_pause"]
        assert _hw(b[s], "mlx5_0")["rp_cnp_handled"] > _hw(a[s], "mlx5_0")["rp_cnp_handled"]


def test_no_ecn_congestion_pauses_without_marks_or_cnps() -> None:
    fab = Fabric.single(demo_hosts(), "no_ecn")
    a = {h: frame_at(fab, h, 5.0) for h in fab.hosts}
    b = {h: frame_at(fab, h, 15.0) for h in fab.hosts}
    assert ethtool(b["node2"], P0)["tx_prio3_pause"] > ethtool(a["node2"], P0)["tx_prio3_pause"]
    for h in _linux(fab):
        for dev in ("mlx5_0", "mlx5_1"):
            for k in IB_HW_CONG_COUNTERS:
                assert _hw(b[h], dev)[k] == _hw(a[h], dev)[k], (h, dev, k)
    assert sysnet(b["node2"])[P0].ecn_np_enabled == ()


def test_metrics_parse_and_generated_tokens_follow_the_token_rate() -> None:
    fab = Fabric(demo_hosts())
    node1 = fab.hosts["node1"]

    def families(t: float) -> dict[str, float]:
        fab.at(t)
        out = {}
        for fam in text_string_to_metric_families(node1.metrics_text()):
            for s in fam.samples:
                if not s.labels.get("le"):
                    out[s.name] = s.value
        return out

    a, b = families(10.0), families(40.0)
    rate = (b["vllm:generation_tokens_total"] - a["vllm:generation_tokens_total"]) / 30.0
    assert rate == pytest.approx(fab.healthy_tokens_per_s, rel=0.03)
    assert b["vllm:prompt_tokens_total"] > a["vllm:prompt_tokens_total"]
    assert b["vllm:time_to_first_token_seconds_count"] > a["vllm:time_to_first_token_seconds_count"]
    assert b["vllm:inter_token_latency_seconds_count"] > a["vllm:inter_token_latency_seconds_count"]
    assert "vllm:num_requests_running" in b and "vllm:num_requests_waiting" in b
    assert fab.hosts["node2"].metrics_text() == ""


def test_same_seed_and_time_give_the_same_text_whatever_the_read_pattern() -> None:
    f1, f2, f3 = demo_fabric(seed=7), demo_fabric(seed=7), demo_fabric(seed=8)
    for t in (1.0, 2.0, 3.0, 7.0):
        f1.hosts["node2"].frame(t)  # f1 is read often, f2 once (its first frame has the
    f2.hosts["node2"].frame(1.0)  # slow sections, as a real probe's first frame does)
    assert f1.hosts["node2"].frame(9.0) == f2.hosts["node2"].frame(9.0)
    assert f1.hosts["node1"].metrics_text() == f2.hosts["node1"].metrics_text()
    assert f3.hosts["node2"].frame(9.0) != f2.hosts["node2"].frame(9.0)


def test_demo_cycle_starts_healthy_and_visits_every_fault() -> None:
    fab = demo_fabric()
    seen = [fab.episode_at(float(t)) for t in range(0, 181)]
    assert set(seen[:20]) == {"healthy"}
    assert {"incast", "pfc_storm", "link_flap", "gpu_thermal", "no_ecn"} <= set(seen)
    assert fab.episode_at(181.0 + 40.0) == fab.episode_at(40.0)  # the cycle repeats


def test_driver_reload_restarts_counters_from_zero() -> None:
    fab = Fabric([SimHostConfig("r", reload_at=(10.0,))])
    before, after = ethtool(frame_at(fab, "r", 9.0), P0), ethtool(frame_at(fab, "r", 12.0), P0)
    assert after["rx_bytes_phy"] < before["rx_bytes_phy"]
    assert 0 < after["rx_bytes_phy"] < 3 * 100e9 / 8


def test_host_overrides_show_in_the_frame() -> None:
    hosts = [
        SimHostConfig(
            "tcp",
            rdma_share=0.0,
            trust="pcp",
            mtu=1500,
            pcie_width=8,
            nic_temp_c=92.0,
            firmware="22.31.1014",
        )
    ]
    fab = Fabric(hosts)
    f5, f10 = frame_at(fab, "tcp", 5.0), frame_at(fab, "tcp", 10.0)
    a, b = ethtool(f5, P0), ethtool(f10, P0)
    assert b["rx_vport_rdma_unicast_bytes"] == a["rx_vport_rdma_unicast_bytes"]
    assert b["rx_bytes"] - a["rx_bytes"] > 10e9
    link = assemble("tcp", f5).links[P0]
    assert link.mtu == 1500 and link.firmware is not None and "22.31.1014" in link.firmware
    assert link.pcie is not None and link.pcie.width == 8 and link.pcie.degraded
    assert link.temperature_c is not None and link.temperature_c >= 92
    assert link.qos is not None and link.qos.trust == "pcp"


def test_sim_frame_assembles_into_normalized_links() -> None:
    fab = demo_fabric()
    s = assemble("node3", frame_at(fab, "node3", 2.0))
    assert s.warnings == []
    roce = s.links[P0]
    assert roce.kind == "roce" and roce.rdma_device == "mlx5_0" and roce.state == "up"
    assert roce.rate_gbps == 100.0 and roce.driver == "mlx5_core"
    assert roce.qos is not None and roce.qos.pfc_enabled == (3,)
    pause = roce.metrics["rx_pause_us"]
    assert isinstance(pause, dict) and set(pause) == {3}
    assert s.links["thunderbolt0"].kind == "tb"
    assert len(s.gpus) == 2 and s.gpus[0].name == "NVIDIA GeForce RTX 4080 SUPER"
    ib = assemble("node1", frame_at(fab, "node1", 3.0)).links["mlx5_2/1"]
    assert ib.kind == "ib" and ib.rate_gbps == 200.0


def test_rendering_is_cheap() -> None:
    fab = Fabric([SimHostConfig(f"n{i:02d}") for i in range(64)])
    start = time.perf_counter()
    for t in (1.0, 2.0, 3.0):
        for h in fab.hosts.values():
            h.frame(t)
    per_tick = (time.perf_counter() - start) / 3
    assert per_tick < 0.5  # 64 hosts at 1 Hz leave most of one core free


def test_tree_shims_print_what_the_frame_carries(tmp_path: Path) -> None:
    fab = Fabric(demo_hosts(), slow_every_s=0)
    host = fab.hosts["node1"]
    tree.write(host, tmp_path, 4.0)
    frame = frame_at(fab, "node1", 4.0)
    sec = frame.find("ethtool_S", P0)
    out = subprocess.run(
        [str(tmp_path / "bin/ethtool"), "-S", P0], capture_output=True, text=True, check=True
    )
    assert sec is not None and out.stdout.rstrip("\n") == sec.text
    gpu = frame.find("gpu_nvidia")
    assert gpu is not None
    fields = gpu.text.splitlines()[0][2:]
    smi = subprocess.run(
        [
            str(tmp_path / "bin/nvidia-smi"),
            f"--query-gpu={fields}",
            "--format=csv,noheader,nounits",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    # Rows differ only in the timestamp (the frame's GPU line is read a little earlier).
    want = [r.split(", ", 1)[1] for r in gpu.text.splitlines()[1:]]
    assert [r.split(", ", 1)[1] for r in smi.stdout.splitlines()] == want
    net = tmp_path / "sys/class/net"
    assert (net / P0 / "operstate").read_text() == "up\n"
    assert (net / P0 / "device").is_dir()
    ib = tmp_path / "sys/class/infiniband/mlx5_0/ports/1"
    assert (ib / "hw_counters/np_cnp_sent").exists()
    tree.update(host, tmp_path, 8.0)
    later = int((ib / "counters/port_rcv_data").read_text())
    assert later > int(_ib_counter(frame, "mlx5_0", "port_rcv_data"))
    bad = subprocess.run(
        [str(tmp_path / "bin/ethtool"), "-S", "thunderbolt0"], capture_output=True, text=True
    )
    assert bad.returncode == 71  # node1 has no such netdev


def _ib_counter(frame: Frame, dev: str, name: str) -> int:
    sib = frame.find("sysib")
    assert sib is not None
    return parse_sysib(sib.text).devices[dev].ports[1].counters[name]


async def test_demo_transport_streams_frames_and_serves_metrics() -> None:
    fab = Fabric(demo_hosts(), interval_s=0.5)
    transports = sim_transports(fab, speed=20.0)
    t = transports["node1"]
    await t.connect()
    dec = FrameDecoder()
    got: list[Frame] = []
    agen = t.stream("", [])
    async with asyncio.timeout(5):
        async for chunk in agen:
            got += dec.feed(chunk)
            if len(got) >= 3:
                break
    await agen.aclose()
    assert [f.seq for f in got] == sorted({f.seq for f in got})
    assert got[1].clock_ns - got[0].clock_ns >= int(0.5e9)
    status, body = await t.http_get("127.0.0.1", 8000, "/metrics", timeout=1.0)
    assert status == 200 and b"vllm:generation_tokens_total" in body
    with pytest.raises(Exception, match="refused"):
        await transports["node2"].http_get("127.0.0.1", 8000, "/metrics", timeout=1.0)
    await t.close()


async def test_a_silent_host_refuses_connections() -> None:
    fab = Fabric([SimHostConfig("gone", silent_after=0.0)])
    t = DemoTransport(fab.hosts["gone"], SimClock(fab))
    with pytest.raises(Exception, match="stopped answering"):
        await t.connect()


def test_each_direction_carries_its_own_traffic_on_every_link() -> None:
    # RX equal to TX to the byte on every link read like a display bug (issue 12).
    fab = demo_fabric()
    a = {h: assemble(h, frame_at(fab, h, 10.0)) for h in fab.hosts}
    b = {h: assemble(h, frame_at(fab, h, 20.0)) for h in fab.hosts}
    checked = 0
    for h in fab.hosts:
        for lid, first in a[h].links.items():  # the first frame names the drivers
            if first.kind not in ("roce", "ib", "tb") or "rx_bytes" not in first.metrics:
                continue  # (a Mac's uncabled Thunderbolt ports have no netstat row)
            before, link = first.metrics, b[h].links[lid]
            rx = float(link.metrics["rx_bytes"]) - float(before["rx_bytes"])  # type: ignore[arg-type]
            tx = float(link.metrics["tx_bytes"]) - float(before["tx_bytes"])  # type: ignore[arg-type]
            assert rx > 0 and tx > 0, (h, lid)
            assert abs(rx - tx) > 0.01 * max(rx, tx), (h, lid, rx, tx)
            # ...and both stay the healthy demo's rate: a bias, not a different fabric.
            assert 0.75 < rx / tx < 1.33, (h, lid, rx, tx)
            checked += 1
    # 2 RoCE rails each, an IB pair, a Thunderbolt pair, the Macs' Thunderbolt 5 cable and
    # the DGX Spark's to mac1
    assert checked == 4 * 2 + 2 + 2 + 2 + 2


def test_the_demo_doc_tells_the_demo_cycle_as_the_simulation_plays_it() -> None:
    from fabtop.run.demo import SCENARIOS
    from fabtop.sim.episodes import DEFAULT_TARGET, DEMO_CYCLE, DEMO_CYCLE_S

    section = (Path(__file__).resolve().parents[2] / "docs" / "DEMO.md").read_text()
    rows = [ln.split("|")[1:3] for ln in section.splitlines() if re.match(r"^\| \d", ln)]
    assert [(t.strip(), kind.strip()) for t, kind in rows] == [
        (f"{ep.start_s:.0f}\u2013{ep.end_s:.0f} s", ep.kind) for ep in DEMO_CYCLE
    ]
    assert "about three minutes" in section and 150 <= DEMO_CYCLE_S <= 210
    for kind, (host, _) in DEFAULT_TARGET.items():
        assert host in next(ln for ln in section.splitlines() if f"| {kind} |" in ln)
    named = re.findall(r"`([a-z0-9_]+)`", section.split("The names:", 1)[1])
    assert sorted(set(named) & set(SCENARIOS)) == sorted(SCENARIOS)
    flap = next(ep.start_s for ep in DEMO_CYCLE if ep.kind == "link_flap")
    down, up = flap + FLAP_DOWN_AT_S, flap + FLAP_DOWN_AT_S + FLAP_DOWN_FOR_S
    assert f"down at {down:.0f} s" in section and f"back at {up:.0f} s" in section
