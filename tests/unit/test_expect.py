"""``[expect]`` (issue 29 item 7): the config's table and overrides, the check of one host
against its expectation, and ``--write-expect``'s file of the fabric as it is."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

import pytest

from collectors.samples import GpuSample, HostSample, LinkSample, QosConfig, SectionStatus
from fabtop.commands.expect_file import (
    expectations,
    load_expect_file,
    refuse_existing,
    render,
)
from fabtop.config import Config, ConfigError, HostConfig, config_from_dict, load_config
from fabtop.core.expect import (
    FIELDS,
    UNCHECKED,
    UNMET,
    Expect,
    Unmet,
    check,
    check_fabric,
    finding,
)
from fabtop.core.state import DOWN, UP, HostState
from fabtop.run.demo import demo_state, feed_until
from fabtop.run.outputs import OutputError

HOST = [{"name": "node[1-3]"}]


def cfg(top: dict[str, Any] | None = None, **host: Any) -> Config:
    data: dict[str, Any] = {"host": [{"name": "node[1-3]", **host}]}
    if top is not None:
        data["expect"] = top
    return config_from_dict(data, "fab.toml")


# -- the config ----------------------------------------------------------------------------


def test_expect_for_all_hosts_with_a_per_host_override_field_by_field() -> None:
    data = {
        "expect": {"rdma_ports": 2, "link_layer": "ethernet", "speed_gbps": 400, "gpus": 8},
        "host": [{"name": "node[1-2]"}, {"name": "head", "expect": {"gpus": 0}}],
    }
    c = config_from_dict(data, "fab.toml")
    assert c.expect == Expect(rdma_ports=2, link_layer="Ethernet", speed_gbps=400.0, gpus=8)
    by = {h.name: h.expect for h in c.hosts}
    assert by["node1"] == by["node2"] == c.expect
    # the head node's gpus over [expect]; the rest is [expect]'s
    assert by["head"] == Expect(rdma_ports=2, link_layer="Ethernet", speed_gbps=400.0, gpus=0)


def test_without_expect_nothing_is_expected() -> None:
    c = cfg()
    assert c.expect is None and all(h.expect is None for h in c.hosts)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"gpu": 8}, "fab.toml: [expect]: unknown field 'gpu' (one of rdma_ports, "),
        (
            {"gpus": -1},
            "fab.toml: [expect]: field 'gpus' must be a whole number in 0..1024, got -1",
        ),
        ({"gpus": 8.0}, "field 'gpus' must be a whole number in 0..1024, got 8.0"),
        ({"mtu": "9000"}, "field 'mtu' must be a whole number in 68..65536, got '9000'"),
        ({"speed_gbps": True}, "field 'speed_gbps' must be a number in 1..3200, got true"),
        ({"speed_gbps": float("nan")}, "field 'speed_gbps' must be a number in 1..3200, got nan"),
        (
            {"lossless_priority": 8},
            "field 'lossless_priority' must be a whole number in 0..7, got 8",
        ),
        ({"link_layer": "RoCE"}, "field 'link_layer' must be InfiniBand or Ethernet, got 'RoCE'"),
        ({"inference": "yes"}, "field 'inference' must be true or false, got 'yes'"),
        ({"ip_speed_mbps": 0}, "field 'ip_speed_mbps' must be a number in 1..1e+07, got 0"),
    ],
)
def test_a_bad_expect_field_is_one_line_naming_file_and_field(
    table: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as e:
        cfg(table)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_bad_override_names_the_host() -> None:
    with pytest.raises(
        ConfigError, match=r"^fab.toml: host 'node1': \[host.expect\]: field 'gpus'"
    ):
        cfg(None, expect={"gpus": -2})
    with pytest.raises(ConfigError, match=r"\[expect\] must be a table"):
        cfg(3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"\[defaults\] expect: put what all hosts"):
        config_from_dict({"defaults": {"expect": {}}, "host": HOST}, "fab.toml")


# -- the check ---------------------------------------------------------------------------


def roce(i: int, **kw: Any) -> LinkSample:
    base = LinkSample(
        id=f"eth{i}",
        netdev=f"eth{i}",
        rdma_device=f"mlx5_{i}",
        port=1,
        link_layer="Ethernet",
        state="up",
        rate_gbps=400.0,
        mtu=9000,
        kind="roce",
        width=4,
        qos=QosConfig(source="mlnx_qos", pfc_enabled=(3,)),
    )
    return dataclasses.replace(base, **kw)


def host(links: list[LinkSample], gpus: int | None = 8, **state: Any) -> HostState:
    s = HostSample("n1", 1, 0, 1.0, links={ln.id: ln for ln in links})
    if gpus is not None:
        s.gpus = [GpuSample(i) for i in range(gpus)]
        s.sections = [SectionStatus("gpu_nvidia", None, "ok")]
    hs = HostState("n1", "admin@n1", status=UP, sample=s)
    for k, v in state.items():
        setattr(hs, k, v)
    return hs


FULL = Expect(
    rdma_ports=2,
    link_layer="Ethernet",
    speed_gbps=400,
    width=4,
    mtu=9000,
    lossless_priority=3,
    gpus=8,
)


def test_a_host_that_has_what_is_expected_meets_it() -> None:
    assert check(host([roce(0), roce(1)]), FULL) == []


def test_a_node_with_no_rdma_device_fails_the_gate_once() -> None:
    """The issue's VM: "no RDMA device on vm" used to exit 0. The per-port fields have no
    port to speak of: the count is the one thing said."""
    (u,) = check(host([LinkSample("eth0", netdev="eth0", kind="netdev")]), FULL)
    assert (u.host, u.field, u.expected, u.found, u.status) == ("n1", "rdma_ports", 2, 0, UNMET)
    assert u.line == "n1: rdma_ports expected 2, found 0"
    # the ports' fields alone, no count declared: still a failure, never a vacuous pass
    (u,) = check(host([]), Expect(speed_gbps=400))
    assert (u.field, u.expected, u.found) == ("rdma_ports", "at least 1", 0)


@pytest.mark.parametrize(
    ("port", "field", "found"),
    [
        (roce(1, rate_gbps=200.0), "speed_gbps", 200.0),
        (roce(1, width=2), "width", 2),
        (roce(1, mtu=1500), "mtu", 1500),
        (roce(1, link_layer="InfiniBand", kind="ib", qos=None), "link_layer", "InfiniBand"),
        (
            roce(1, qos=QosConfig(source="mlnx_qos", pfc_enabled=())),
            "lossless_priority",
            "PFC on none",
        ),
        (roce(1, qos=QosConfig(source="dcb", pfc_enabled=(4,))), "lossless_priority", "PFC on 4"),
        (roce(1, state="down", rate_gbps=None), "speed_gbps", "link down"),
    ],
)
def test_each_port_field_names_the_port_expected_and_found(
    port: LinkSample, field: str, found: object
) -> None:
    unmet = check(host([roce(0), port]), FULL)
    assert [(u.field, u.found, u.status) for u in unmet if u.field == field] == [
        (field, found, UNMET)
    ]
    u = next(u for u in unmet if u.field == field)
    assert u.port is not None and u.port.label == "n1/eth1"
    f = finding(u, "admin@n1")
    assert (f.rule, f.severity, f.host, f.subject) == ("expect_unmet", "critical", "n1", "n1/eth1")
    assert f.evidence["field"] == field and f.evidence["found"] is not None
    assert f.next_step.startswith("ssh admin@n1 ")


@pytest.mark.parametrize(
    ("port", "field"),
    [
        (roce(1, rate_gbps=None), "speed_gbps"),
        (roce(1, width=None), "width"),  # a Prometheus source's rate names no width
        (roce(1, mtu=None), "mtu"),
        (roce(1, qos=None), "lossless_priority"),
        (roce(1, link_layer=None, kind="netdev"), "link_layer"),
    ],
)
def test_a_field_that_was_not_read_is_unchecked_never_met(port: LinkSample, field: str) -> None:
    (u,) = check(host([roce(0), port]), FULL)
    assert (u.field, u.status, u.found) == (field, UNCHECKED, None)
    f = finding(u)
    assert (f.rule, f.severity) == ("expect_unchecked", "warning")
    assert "could not check" in f.summary


def test_a_host_not_read_is_unchecked() -> None:
    hs = host([roce(0), roce(1)], status=DOWN, error="n1: connection refused")
    (u,) = check(hs, FULL)
    assert (u.field, u.status) == ("host", UNCHECKED)
    assert "connection refused" in u.why
    (u,) = check(HostState("n2", "n2"), Expect(gpus=1))  # never answered
    assert u.status == UNCHECKED


def test_gpus_counted_missing_tool_is_none_failing_tool_unchecked() -> None:
    ports = [roce(0), roce(1)]
    assert [u.found for u in check(host(ports, gpus=6), FULL)] == [6]
    # no GPU tool at all on the node: no GPU driver stack, 0 GPUs (a failed gate)
    hs = host(ports, gpus=None, unread={"gpu_nvidia": "missing (no nvidia-smi)"})
    assert [(u.found, u.status) for u in check(hs, FULL)] == [(0, UNMET)]
    assert check(hs, dataclasses.replace(FULL, gpus=0)) == []
    # the tool is there and failed (a driver that did not load): not read
    hs = host(ports, gpus=None, unread={"gpu_nvidia": "error (rc=9)"})
    (u,) = check(hs, FULL)
    assert (u.status, u.why) == (UNCHECKED, "gpu_nvidia error (rc=9)")


def test_inference_true_needs_a_server_that_answers() -> None:
    from collectors.samples import InferenceSample

    hs = host([roce(0), roce(1)])
    (u,) = check(hs, Expect(inference=True))
    assert u.found == "none found"
    assert hs.sample is not None
    hs.sample.inference = [InferenceSample("http://127.0.0.1:8000/metrics", error="refused")]
    (u,) = check(hs, Expect(inference=True))
    assert u.found == "none answering (refused)"
    hs.sample.inference = [InferenceSample("http://127.0.0.1:8000/metrics", server="vllm")]
    assert check(hs, Expect(inference=True)) == []
    assert check(host([]), Expect(inference=False)) == []  # false requires nothing


def test_ip_speed_is_a_declaration_for_fabtop_test_not_a_doctor_check() -> None:
    assert check(host([]), Expect(ip_speed_mbps=10000)) == []
    assert Expect(ip_speed_mbps=300).over(Expect(gpus=1)) == Expect(gpus=1, ip_speed_mbps=300)


def test_unmet_reads_as_a_person_writes_it() -> None:
    u = Unmet("n1", "speed_gbps", 400.0, 200.0)
    assert u.line == "n1: speed_gbps expected 400, found 200"
    assert Unmet("n1", "inference", True, "none found").line == (
        "n1: inference expected true, found none found"
    )


# -- the written file ----------------------------------------------------------------------


def test_the_demo_written_as_it_is_loads_back_and_meets_itself(tmp_path: Path) -> None:
    state, _, _ = demo_state(until_s=4.0)
    config = Config(hosts=[HostConfig(name=n) for n in state.hosts], source="demo")
    text, unread = render(config, state)
    assert unread == []
    path = tmp_path / "expect.toml"
    path.write_text(text)
    loaded = load_config(path)
    assert [h.name for h in loaded.hosts] == list(state.hosts)
    for h in loaded.hosts:
        assert h.expect is not None
        assert check(state.hosts[h.name], h.expect) == [], h.name
    doc = tomllib.loads(text)
    common, own, _ = expectations(state)
    # common values at the top, overrides only where a host differs
    assert doc["expect"] == common and common["lossless_priority"] == 3
    assert {h["name"] for h in doc["host"] if "expect" in h} == set(own)
    for name, over in own.items():
        assert all(common.get(k) != v for k, v in over.items()), name
    # the hosts that share a value do not repeat it
    node1 = next(h for h in doc["host"] if h["name"] == "node1")
    assert "lossless_priority" not in node1.get("expect", {})


def test_a_changed_fabric_fails_the_written_expectation(tmp_path: Path) -> None:
    state, _, _ = demo_state(until_s=4.0)
    config = Config(hosts=[HostConfig(name=n) for n in state.hosts], source="demo")
    path = tmp_path / "expect.toml"
    path.write_text(render(config, state)[0])
    loaded = {h.name: h.expect for h in load_config(path).hosts}
    s = state.hosts["node3"].sample
    assert s is not None
    link = next(ln for ln in s.links.values() if ln.kind == "roce")
    link.rate_gbps = 25.0  # a port that trained at a quarter of its speed
    got = loaded["node3"]
    assert got is not None
    (u,) = check(state.hosts["node3"], got)
    assert (u.field, u.expected, u.found) == ("speed_gbps", 100.0, 25.0)


def test_expect_file_alone_or_a_config(tmp_path: Path) -> None:
    config = cfg()
    alone = tmp_path / "alone.toml"
    alone.write_text("[expect]\ngpus = 4\n")
    load_expect_file(str(alone), config)
    assert all(h.expect == Expect(gpus=4) for h in config.hosts)
    full = tmp_path / "full.toml"
    full.write_text('[expect]\ngpus = 4\n[[host]]\nname = "node2"\n[host.expect]\ngpus = 0\n')
    load_expect_file(str(full), config)
    assert [h.expect.gpus if h.expect else None for h in config.hosts] == [4, 0, 4]
    other = tmp_path / "other.toml"
    other.write_text("[thresholds]\ndetect_s = 3\n")
    with pytest.raises(ConfigError, match="want a fabtop config or a file of"):
        load_expect_file(str(other), config)
    with pytest.raises(ConfigError, match=r"alone.toml: \[expect\]: unknown field 'gpu'"):
        alone.write_text("[expect]\ngpu = 4\n")
        load_expect_file(str(alone), config)


def test_the_readme_config_with_its_expect_loads(tmp_path: Path) -> None:
    """The README's config example is what a user copies: every [expect] field in it."""
    from tests.conftest import REPO

    readme = (REPO / "README.md").read_text()
    block = readme.split("A config file:\n\n```toml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "fabtop.toml"
    path.write_text(block.replace("/etc/fabtop/", str(tmp_path) + "/"))
    (tmp_path / "ssh_config").write_text("")
    c = load_config(path)
    assert c.expect is not None
    assert set(c.expect.declared()) == {f.name for f in FIELDS}


def test_where_write_expect_may_write_is_said_before_the_window(tmp_path: Path) -> None:
    there = tmp_path / "fabric.toml"
    refuse_existing(str(there), force=False)  # a new file: fine
    there.write_text("# mine\n")
    with pytest.raises(OutputError, match=r"fabric.toml: exists; pass --force to overwrite it$"):
        refuse_existing(str(there), force=False)
    refuse_existing(str(there), force=True)
    dangling = tmp_path / "link.toml"
    dangling.symlink_to(tmp_path / "nowhere.toml")
    with pytest.raises(OutputError, match="exists"):
        refuse_existing(str(dangling), force=False)
    with pytest.raises(OutputError, match="no directory"):
        refuse_existing(str(tmp_path / "no/such/dir.toml"), force=True)
    with pytest.raises(OutputError, match="is a directory"):
        refuse_existing(str(tmp_path), force=True)
    with pytest.raises(OutputError, match="wants a file"):
        refuse_existing("-", force=True)


def test_check_fabric_gates_every_host_that_has_an_expectation() -> None:
    state, _, _ = demo_state(until_s=4.0)
    got = check_fabric(state, {"node1": Expect(gpus=3), "node2": None, "node3": Expect(gpus=2)})
    assert [(u.host, u.field, u.expected, u.found) for u in got] == [("node1", "gpus", 3, 2)]


def test_a_host_gone_silent_is_unchecked_not_met_by_its_old_sample() -> None:
    """Blind is not healthy: a stale host's last sample meets no expectation."""
    state, clock, fab = demo_state(until_s=4.0)
    feed_until(fab, state, clock, 5.0, 30.0, silent=("node2",))
    got = check_fabric(state, {"node1": Expect(gpus=2), "node2": Expect(gpus=2)})
    assert [(u.host, u.field, u.status) for u in got] == [("node2", "host", UNCHECKED)]
    assert "stale" in got[0].why
