"""``fabtop test loss``: its plan shape, the recovery timed from the receiver's intervals,
the verdicts (regained, slow, not regained, hung, not killed) and NCCL's stall bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.launch import ToolRun
from collectors.samples import HostSample, LinkSample
from fabtop.config import ConfigError, config_from_dict
from fabtop.core.nccl import NcclTimeouts
from fabtop.fabtest.judge import Status
from fabtop.fabtest.loss import (
    LossMeasured,
    _read,
    frame_series,
    judge_loss,
    recovery,
    series,
)
from fabtop.fabtest.plans import LOSS, OPT_IN, PlanError, Step, make_plan
from fabtop.fabtest.rails import Rails, rails

# A real run on the namespace bed (tests/integration/test_fabtest_loss_netns.py), Gb/s:
# two senders into a 150 Mbit/s switch port, h3 killed 2.003 s in. iperf3's server for h3
# printed no interval for 1.75-2.0: the one the kill cut short.
H2 = [0.145, 0.087, 0.077, 0.074, 0.076, 0.076, 0.073, 0.073, 0.110, 0.148, 0.148, 0.150]
H3 = [0.061, 0.071, 0.075, 0.074, 0.070, 0.076, 0.076]
KILL_AT = 2.003


def grid(gbps: list[float], every: float = 0.25) -> list[tuple[float, float, float]]:
    return [(i * every, (i + 1) * every, g * 1e9) for i, g in enumerate(gbps)]


def step(senders: tuple[str, ...] = ("h2", "h3")) -> Step:
    return Step(LOSS, 0, senders, "h1")


def measured(**kw: object) -> LossMeasured:
    m = LossMeasured(engine="iperf3", killed="h3", killed_pid=4065, killed_at_s=KILL_AT)
    m.killed_tool = "iperf3"
    m.received = {"h2": grid(H2), "h3": grid(H3)}
    for k, v in kw.items():
        setattr(m, k, v)
    return m


def fabric(n: int) -> Rails:
    samples = {
        f"h{i}": HostSample(
            f"h{i}", 1, 0, 0.0, links={"eth0": LinkSample(id="eth0", netdev="eth0", kind="veth")}
        )
        for i in range(1, n + 1)
    }
    return rails(samples, {(f"h{i}", "eth0"): 0 for i in range(1, n + 1)})


def test_the_plan_is_one_incast_per_rail_whose_last_sender_is_killed() -> None:
    plan = make_plan("loss", fabric(4))
    (s,) = plan.steps
    assert (s.kind, s.receiver, s.senders) == (LOSS, "h1", ("h2", "h3", "h4"))
    assert s.label == "h2,h3,h4 -> h1 rail 0, h4 killed"
    assert make_plan("loss", fabric(4), k=2).steps[0].senders == ("h2", "h3")
    assert "loss" in OPT_IN
    # One sender lost and none left to recover: no plan, and why.
    with pytest.raises(PlanError, match="at least 2"):
        make_plan("loss", fabric(4), k=1)
    with pytest.raises(PlanError, match="needs 3 hosts"):
        make_plan("loss", fabric(2))


def test_the_bandwidth_to_regain_counts_every_sender_where_each_reported() -> None:
    total, rest = series({"h2": grid(H2), "h3": grid(H3)}, "h3", KILL_AT)
    r = recovery(total, rest, KILL_AT, 0.9)
    # 1.75-2.0 has only h2's part (h3's server never printed it): not what was had.
    both = sorted(a + b for a, b in zip(H2[1:7], H3[1:7], strict=True))
    assert r.baseline_bps == pytest.approx((both[2] + both[3]) / 2 * 1e9)
    assert r.survivors_before_bps == pytest.approx(0.076e9)
    # 2.0-2.25 (the kill's own, 0.110) is below 0.9 x 0.149; 2.25-2.5 and on are not.
    assert r.recovery_s == pytest.approx(2.5 - KILL_AT)
    assert r.resolution_s == 0.25
    assert r.survivors_after_bps == pytest.approx(sum(H2[9:]) / 3 * 1e9)


def test_a_burst_is_not_a_recovery_and_a_plateau_below_the_mark_is_none() -> None:
    # One interval at the mark, then back down: two in a row are needed.
    burst = [*H2[:9], 0.149, 0.100, 0.148, 0.149, 0.150]
    total, rest = series({"h2": grid(burst), "h3": grid(H3)}, "h3", KILL_AT)
    assert recovery(total, rest, KILL_AT, 0.9).recovery_s == pytest.approx(3.0 - KILL_AT)
    # The survivor holds its own share only (its own uplink is the bottleneck).
    flat = [*H2[:8], *[0.075] * 12]
    total, rest = series({"h2": grid(flat), "h3": grid(H3)}, "h3", KILL_AT)
    r = recovery(total, rest, KILL_AT, 0.9)
    assert r.recovery_s is None and r.survivors_after_bps == pytest.approx(0.075e9)
    # The killed sender's server said nothing: what was had is not known.
    assert series({"h2": grid(H2)}, "h3", KILL_AT) == ([], [])


def test_the_receiver_counters_time_it_where_the_engine_cannot() -> None:
    # RDMA ports: the receiver's rx between its frames (1 s apart, arbitrary phase); the
    # frame the kill falls in mixes both and is never the recovery.
    frames = [(-0.3, 0.7, 80e9), (0.7, 1.7, 96e9), (1.7, 2.7, 85e9), (2.7, 3.7, 97e9)]
    frames += [(3.7, 4.7, 96e9)]
    total, rest = frame_series(frames, 2.0)
    r = recovery(total, rest, 2.0, 0.9)
    assert r.baseline_bps == 96e9 and r.recovery_s == pytest.approx(1.7)
    assert r.resolution_s == pytest.approx(1.0)


def test_regained_within_the_mark_passes_and_says_what_it_found() -> None:
    v = judge_loss(step(), measured(), None, None)
    assert v.status == Status.PASS, v.reasons
    assert v.figures["recovery_s"] == pytest.approx(0.497)
    assert v.figures["baseline_gbps"] == pytest.approx(0.1505, abs=1e-4)
    notes = "\n".join(v.notes)
    assert "h3: iperf3 (pid 4065) killed 2.00 s into its run" in notes
    assert "h2 regained the receiver's 0.15 Gb/s within 0.50 s" in notes
    assert "counters before the kill: no sample" in notes
    assert "NCCL's stall bound: 4.3 s per try (4.096 µs x 2^20), about 30 s" in notes


def test_slow_not_regained_hung_or_not_killed_are_said_and_judged() -> None:
    slow = judge_loss(step(), measured(), None, {"test_loss_recovery_s": 0.2})
    assert slow.status == Status.WARN
    assert "past the 0.2 s mark" in slow.reasons[0]
    flat = measured(received={"h2": grid([*H2[:8], *[0.075] * 12]), "h3": grid(H3)})
    lost = judge_loss(step(), flat, None, None)
    assert lost.status == Status.FAIL and lost.figures["recovery_s"] is None
    assert "h2 did not regain the receiver's 0.15 Gb/s (90% of it)" in lost.reasons[0]
    hung_line = "h1: iperf3 server for h3 did not end within 5 s of its client: fabtop ended it"
    hung = judge_loss(step(), measured(hung=[hung_line]), None, None)
    assert hung.status == Status.FAIL and f"hung: {hung_line}" in hung.reasons
    alive = judge_loss(
        step(), measured(killed_pid=None, killed_at_s=None, kill_ms=2000), None, None
    )
    assert alive.status == Status.FAIL
    assert "h3: its sender was not killed" in alive.reasons[0]


def test_nccl_bound_from_the_config_or_its_defaults_with_one_line_errors() -> None:
    d = NcclTimeouts()
    assert d.per_try_s == pytest.approx(4.294967296) and d.qp_error_s == pytest.approx(30.06, 0.01)
    base = {"host": [{"name": "a"}]}
    got = config_from_dict({**base, "nccl": {"ib_timeout": 22, "ib_retry_cnt": 3}}, "f.toml").nccl
    assert got.per_try_s == pytest.approx(4.096e-6 * 2**22) and got.qp_error_s == 3 * got.per_try_s
    assert got.source == "f.toml: [nccl]" and got.source in got.line
    assert "NCCL's defaults" in config_from_dict(base, "f.toml").nccl.source
    for bad, field in (
        ({"ib_timeout": 0}, "ib_timeout"),
        ({"ib_timeout": 32}, "ib_timeout"),
        ({"ib_timeout": 20.5}, "ib_timeout"),
        ({"ib_retry_cnt": 8}, "ib_retry_cnt"),
        ({"ib_retry_cnt": True}, "ib_retry_cnt"),
    ):
        with pytest.raises(ConfigError, match=f"^f.toml: \\[nccl\\] {field} must be") as e:
            config_from_dict({**base, "nccl": bad}, "f.toml")
        assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match=r"f\.toml: \[nccl\] takes"):
        config_from_dict({**base, "nccl": {"timeout": 20}}, "f.toml")


def test_each_server_is_placed_by_when_its_client_started() -> None:
    # Two real iperf3 server documents (tests/fixtures/iperf3), each on its own client's
    # start: the client of h2 was tried again (its server was not listening yet) and
    # started 0.25 s after h3's, so its intervals and its retransmissions come later on
    # the common timeline, and the kill of h3 is placed from h3's own start.
    here = Path(__file__).resolve().parents[1] / "fixtures" / "iperf3"
    server = (here / "server_3.12_tcp_loopback_testbed.json").read_bytes()
    client = (here / "client_3.12_tcp_loopback_testbed.json").read_bytes()

    def run(host: str, out: bytes, **kw: object) -> ToolRun:
        return ToolRun(host, ("iperf3",), out, kw.pop("status", 0), False, False, False, 2.0, **kw)  # type: ignore[arg-type]

    m = LossMeasured(engine="iperf3", killed="h3")
    ports = [type("P", (), {"host": h})() for h in ("h2", "h3")]
    killed = run("h3", b"", status=137, killed_pid=77, killed_at_s=2.0)
    _read(
        m,
        ports,
        [run("h1", server), run("h1", server)],
        [run("h2", client), killed],
        {"h2": 0.55, "h3": 0.3},
    )  # type: ignore[arg-type]
    assert m.received["h2"][0][:2] == pytest.approx((0.55, 1.55), abs=1e-4)
    assert m.received["h3"][0][:2] == pytest.approx((0.3, 1.3), abs=1e-4)
    assert m.resent and all(t > 0.55 for t, _ in m.resent)
    assert (m.killed_pid, m.killed_at_s, m.killed_tool) == (77, 2.0, "iperf3")
    # A node's bad numbers (an interval ending, or starting, 1e308 s in) cost those
    # intervals, never the step.
    bad = server.replace(b'"end":\t1.000005', b'"end":\t1e308').replace(
        b'"start":\t1.000005', b'"start":\t1e308'
    )
    assert bad != server
    m = LossMeasured(engine="iperf3", killed="h3")
    _read(m, ports, [run("h1", bad), run("h1", bad)], [run("h2", client), killed], {})  # type: ignore[arg-type]
    assert len(m.received["h2"]) < 2 and series(m.received, "h3", 1.0) is not None
