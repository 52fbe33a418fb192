"""Blind is a finding: a stale host, an unreachable source, and what "no findings" may say."""

from __future__ import annotations

from dataclasses import replace

from collectors.samples import QosConfig
from fabtop.core.coverage import calm_line, coverage, gaps_of, names
from fabtop.core.expect import rdma_ports
from fabtop.core.state import DOWN, STALE, UP, FabricState, effective_status, link_up
from fabtop.run.demo import demo_state, feed_until
from fabtop.sim.fabric import DEMO_EPOCH_S, demo_hosts

# The demo's hosts, in order (Linux nodes, then the Macs of issue 14).
DEMO = [h.name for h in demo_hosts()]


def test_a_host_that_stops_sending_raises_a_stale_warning_on_the_tick() -> None:
    state, clock, fab = demo_state(until_s=10.0)
    assert not any(f.rule == "host_stale" for f in state.findings)
    # node4 falls silent: no frame and no status message (a replay, a hand-fed fabric).
    feed_until(fab, state, clock, 11.0, 13.0, silent=("node4",))
    hs = state.hosts["node4"]
    assert effective_status(hs, clock.t, state.interval) == STALE and hs.status == UP
    (f,) = [f for f in state.findings if f.rule == "host_stale"]
    assert f.severity == "warning" and f.host == "node4"
    assert f.summary == "node4: no frame for 3 s; its numbers are old"
    # stale since its last frame, on the data's axis (the demo's calendar)
    assert f.since == DEMO_EPOCH_S + 10.0
    (ep,) = [e for e in state.finding_log.episodes() if e.rule == "host_stale"]
    assert ep.raised == DEMO_EPOCH_S + 10.0 and ep.active
    feed_until(fab, state, clock, 14.0, 14.0)  # it answers again
    assert not any(f.rule == "host_stale" for f in state.findings)
    assert not ep.active and ep.cleared is not None and ep.cleared > ep.raised


def test_refresh_liveness_raises_stale_when_nothing_else_happens() -> None:
    state, clock, _ = demo_state(until_s=10.0)
    state.evaluate_per_frame = False
    assert state.refresh_liveness() is False  # nothing changed: no re-evaluation
    clock.t += 3.0  # no host sends anything for 3 intervals; the dashboard ticks
    assert not any(f.rule == "host_stale" for f in state.findings)
    assert state.refresh_liveness() is True
    stale = sorted(f.host or "" for f in state.findings if f.rule == "host_stale")
    assert stale == sorted(DEMO)
    assert state.refresh_liveness() is False
    cov = coverage(state, clock.t, state.interval)
    assert not cov.all_seen and cov.reporting == ()
    assert "no problems in what was seen" not in calm_line(cov)
    assert f"{names(DEMO)} stale" in calm_line(cov)


def test_every_host_down_is_never_healthy() -> None:
    state, clock, _ = demo_state(until_s=5.0)
    for n in list(state.hosts):
        state.apply_status(n, DOWN, f"{n}: connection refused")
    assert all(f.rule == "host_unreachable" for f in state.findings)
    assert len(state.findings) == len(DEMO)
    line = calm_line(coverage(state, clock.t, 1.0))
    assert line.startswith(f"nothing seen yet: {names(DEMO)} down")
    assert "healthy" not in line and "no problems" not in line


def test_the_calm_line_names_what_was_not_monitored() -> None:
    state, clock, _ = demo_state(until_s=5.0)
    cov = coverage(state, clock.t, 1.0)
    assert cov.all_seen and cov.hosts == len(DEMO)
    # the demo's node1 runs the only inference server; every node has RoCE and GPUs (the
    # Macs: RDMA over Thunderbolt, and formats known from documentation only) but the DGX
    # Spark, simulated with its Thunderbolt link only
    others = names(n for n in DEMO if n != "node1")
    assert list(cov.gaps[:3]) == [
        "no RDMA device on spark1",
        "GPUs not monitored on spark1 (no GPU tool answered)",
        f"no inference server on {others}",
    ]
    assert [g for g in cov.gaps[3:] if not g.startswith("unverified on mac1, mac2")] == []
    assert calm_line(cov) == "; ".join(("no problems in what was seen", *cov.gaps))


def test_zero_hosts_waiting_for_a_source_is_not_all_seen() -> None:
    state = FabricState([])
    cov = coverage(state, 0.0, 1.0)
    assert not cov.all_seen and cov.hosts == 0
    state.source_status(
        "Prometheus at http://prom:9090",
        "URLError: connection refused",
        check="curl -s http://prom:9090/api/v1/query?query=up",
    )
    (f,) = state.findings
    assert (f.rule, f.severity) == ("source_unreachable", "critical")
    assert f.summary == (
        "Prometheus at http://prom:9090 did not answer: URLError: connection refused"
    )
    assert calm_line(coverage(state, 0.0, 1.0)) == "Prometheus at http://prom:9090 did not answer"
    state.source_status("Prometheus at http://prom:9090", None)
    assert state.findings == []
    assert [e.active for e in state.finding_log.episodes()] == [False]
    # It answered with no hosts: still not "seen", and never "healthy".
    line = calm_line(coverage(state, 0.0, 1.0))
    assert "healthy" not in line and "no problems" not in line


def test_link_up_knows_rdma_port_states() -> None:
    assert link_up("up") and link_up("active") and link_up("ACTIVE")
    assert not link_up("down") and not link_up("init") and not link_up("polling")
    assert not link_up(None)


def test_an_ib_port_down_after_a_flap_is_down_now_not_up_again() -> None:
    from tests.unit.rules_support import Fabric, by_rule

    fab = Fabric()
    p = fab.port("node2", "ib0", kind="ib").traffic(40)
    fab.run(2)
    p.set(link_down_events=1.0)
    p.state = "polling"  # sysfs: state "1: DOWN", phys_state "2: Polling" (no peer)
    (f,) = by_rule(fab.tick(), "link_flap")
    assert f.severity == "critical" and "is down now" in f.summary
    p.set(link_down_events=0.0)
    p.state = "active"
    (f,) = by_rule(fab.run(2), "link_flap")
    assert f.severity == "warning" and "up again now" in f.summary


def test_the_next_step_of_a_down_host_is_an_ssh_line_that_works_when_pasted() -> None:
    from fabtop.core.state import ssh_command

    # ssh takes no host:port: the port is -p (a pasted "ssh root@10.0.0.3:2222" fails).
    assert ssh_command("root@127.0.0.1:2222", "true") == "ssh -p 2222 root@127.0.0.1 true"
    assert ssh_command("node1", "uptime") == "ssh node1 uptime"
    assert ssh_command("admin@[fe80::1%eth0]:22", "true") == "ssh -p 22 admin@fe80::1%eth0 true"
    assert ssh_command("a b;reboot", "true") == "ssh 'a b;reboot' true"  # never unquoted
    from fabtop.config import HostConfig, parse_target

    state = FabricState([HostConfig(name="n1", ssh=parse_target("root@127.0.0.1:2222", "t"))])
    state.apply_status("n1", "down", "n1: cannot connect: connection refused")
    (f,) = [f for f in state.findings if f.rule == "host_unreachable"]
    assert f.next_step == "ssh -p 2222 root@127.0.0.1 true"


def test_a_metrics_readings_warnings_reach_the_hosts_warnings() -> None:
    # A value /metrics gave that was dropped (NaN, a cut body) is said where the host's
    # detail and doctor read warnings, once, not once per poll.
    from collectors.samples import InferenceSample

    state, _, _ = demo_state(20.0)
    reading = InferenceSample(
        url="http://127.0.0.1:8000/metrics", warnings=["vllm:num_requests_running: NaN dropped"]
    )
    for _ in range(3):
        state.apply_inference("node1", [reading])
    said = [w for w in state.hosts["node1"].warnings if "NaN dropped" in w]
    assert said == ["http://127.0.0.1:8000/metrics: vllm:num_requests_running: NaN dropped"]


def test_a_host_that_reconnects_is_not_stale_for_its_outage() -> None:
    # The runner says "up" just before it hands over the new session's first frame; the
    # last frame is from before the outage, which is no reason to call the host stale.
    state, clock, _ = demo_state(20.0)
    state.apply_status("node4", "down", "node4: connection lost")
    clock.t += 60.0
    state.apply_status("node4", "up")
    assert effective_status(state.hosts["node4"], clock.t, state.interval) == UP
    assert not [f for f in state.findings if f.host == "node4"]
    assert not [
        e for e in state.finding_log.episodes() if e.rule == "host_stale" and e.subject == "node4"
    ]
    clock.t += 3.0  # and then no frame after all: stale, from the reconnection
    assert effective_status(state.hosts["node4"], clock.t, state.interval) == STALE


def test_a_long_prometheus_outage_does_not_stretch_the_stale_limit() -> None:
    # Instant queries are stamped with their evaluation time: a 5-minute gap between two
    # answers is the outage, not the nodes' scrape interval.
    from fabtop.run.promsource import HostSeries, PrometheusSource

    src = PrometheusSource("http://127.0.0.1:1", interval=5.0)
    state = FabricState([])
    src.state = state
    src.apply({"n1": HostSeries(t=1000.0)})
    src.apply({"n1": HostSeries(t=1300.0)})
    assert state.interval == 5.0


def test_a_stale_hosts_finding_keeps_its_silence_current_with_no_frame_at_all() -> None:
    state, clock, _ = demo_state(20.0)
    clock.t += 5.0
    state.refresh_liveness()
    (f,) = [f for f in state.findings if f.rule == "host_stale" and f.host == "node1"]
    assert "no frame for 5 s" in f.summary
    clock.t += 7.0  # every host frozen: nothing else evaluates
    state.refresh_liveness()
    (f,) = [f for f in state.findings if f.rule == "host_stale" and f.host == "node1"]
    assert "no frame for 12 s" in f.summary


def test_the_rdma_and_qos_gaps_are_what_the_ports_say() -> None:
    # coverage() runs every tick for every host: it asks whether a host has an RDMA port
    # without sorting them, and reads the RoCE ports' QoS in one pass. Its sentences must
    # stay the ones rdma_ports and "a RoCE port with its QoS read" give, port by port.
    state, _, _ = demo_state(until_s=2.0)
    hs = next(
        h
        for h in state.hosts.values()
        if h.sample is not None and any(ln.kind == "roce" for ln in h.sample.links.values())
    )
    assert hs.sample is not None
    base = hs.sample
    plain = {k: replace(ln, kind="netdev", rdma_device=None) for k, ln in base.links.items()}
    last = sorted(base.links)[-1]
    cases = [
        base.links,
        plain,  # no RDMA port at all
        plain | {last: replace(plain[last], rdma_device="mlx5_9")},  # RDMA on a plain netdev
        plain | {last: replace(plain[last], kind="ib")},
        {k: replace(ln, kind="roce", qos=None) for k, ln in base.links.items()},  # QoS unread
        # the last RoCE port's QoS read: the host's config is read
        {k: replace(ln, kind="roce", qos=None) for k, ln in base.links.items()}
        | {last: replace(base.links[last], kind="roce", qos=QosConfig(source="mlnx_qos"))},
        {
            k: replace(ln, kind="roce", qos=QosConfig(source="sysfs"))
            for k, ln in base.links.items()
        },
    ]
    for links in cases:
        hs.sample = replace(base, links=links)
        sources = {g.source for g in gaps_of(hs)}
        roce = [ln for ln in links.values() if ln.kind == "roce"]
        read = any(ln.qos is not None and ln.qos.source in ("mlnx_qos", "dcb") for ln in roce)
        assert ("rdma" in sources) == (not rdma_ports(hs.sample))
        assert ("qos" in sources) == (bool(roce) and not read)
