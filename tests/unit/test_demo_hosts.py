"""The big simulated fabric (``--demo-hosts N --demo-prefix P``): every command that takes
--demo takes it, bounds said in one line, hosts P1..PN of 8 rails, two prefixes never
share a host, and a scenario's fault on one host of it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fabtop.commands.cli import HOST_COMMANDS, _parser, build_config
from fabtop.config import Config, ConfigError
from fabtop.core.state import FabricState
from fabtop.run.compose import is_demo
from fabtop.run.demo import BIG_SCENARIOS, demo_config, demo_fabric_for, demo_state
from fabtop.sim import Fabric
from tests.conftest import REPO

POSITIONAL = {"test": ["pairs"], "record": ["-o", "x"]}


def _config(cmd: str | None, *args: str) -> Config:
    return build_config(_parser(cmd).parse_args([*POSITIONAL.get(cmd or "", []), *args]))


@pytest.mark.parametrize("cmd", HOST_COMMANDS)
def test_every_command_that_takes_demo_takes_the_big_fabric(cmd: str | None) -> None:
    cfg = _config(cmd, "--demo-hosts", "64", "--demo-prefix", "gpu")
    assert [h.name for h in cfg.hosts] == [f"gpu{i}" for i in range(1, 65)]
    assert is_demo(cfg)
    # the default prefix, and the 7-host demo when --demo-hosts is not given
    assert [h.name for h in _config(cmd, "--demo-hosts", "2").hosts] == ["node1", "node2"]
    assert len(_config(cmd, "--demo").hosts) == 7


@pytest.mark.parametrize("n", [1, 1024])
def test_the_bounds_are_inclusive(n: int) -> None:
    assert len(_config("snapshot", "--demo-hosts", str(n)).hosts) == n


@pytest.mark.parametrize("value", ["0", "-3", "x", "1.5", "nan", ""])
def test_a_count_that_is_no_count_is_one_line_and_exit_2(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        _parser("doctor").parse_args([f"--demo-hosts={value}"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--demo-hosts" in err, err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--demo-hosts", "1025"], "--demo-hosts 1025 is not in 1..1024"),
        (["--demo-hosts", "4", "--demo-prefix", "a1"], "bad --demo-prefix 'a1'"),
        (["--demo-hosts", "4", "--demo-prefix", "1a"], "bad --demo-prefix '1a'"),
        (["--demo-hosts", "4", "--demo-prefix", "a b"], "bad --demo-prefix 'a b'"),
        (["--demo-hosts", "4", "--demo-prefix", "a;id"], "bad --demo-prefix 'a;id'"),
        (["--demo-hosts", "4", "--demo-prefix", "x" * 33], "bad --demo-prefix 'xxx"),
        (["--demo-hosts", "4", "--demo-prefix", ""], "bad --demo-prefix ''"),
        (["--demo-hosts", "4", "--demo-prefix", "a\n"], "bad --demo-prefix 'a\\n'"),
        (["--demo-prefix", "a"], "--demo-prefix names the hosts of --demo-hosts N"),
        (
            ["--demo-hosts", "4", "--demo-scenario", "tb_lane_degraded"],
            "--demo-scenario tb_lane_degraded needs the 7-host demo",
        ),
    ],
)
def test_a_bad_big_fabric_is_one_line_naming_the_option(args: list[str], says: str) -> None:
    with pytest.raises(ConfigError) as e:
        _config("doctor", *args)
    assert says in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_the_command_line_says_a_bad_count_in_one_line() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tui", "snapshot", "--demo-hosts", "5000"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert run.returncode == 2
    assert run.stderr == "fabtop: command line: --demo-hosts 5000 is not in 1..1024\n"


def test_two_prefixes_never_name_the_same_host() -> None:
    a = [h.name for h in demo_config(hosts=128, prefix="a").hosts]
    b = [h.name for h in demo_config(hosts=128, prefix="b").hosts]
    assert a[0] == "a1" and a[-1] == "a128" and not set(a) & set(b)
    # A prefix never ends in a digit, so even prefixes that start alike stay apart.
    names = [
        {h.name for h in demo_config(hosts=1024, prefix=p).hosts} for p in ("a", "ab", "a-", "a_")
    ]
    assert sum(map(len, names)) == len(set().union(*names)) == 4 * 1024


def _state(fab: Fabric, until_s: float, history_s: float) -> FabricState:
    state, _, _ = demo_state(until_s, fabric=fab, history_s=history_s)
    return state


def test_the_big_fabric_has_hosts_of_eight_rails() -> None:
    cfg = demo_config(scenario="healthy", hosts=16, prefix="r")
    state = _state(demo_fabric_for(cfg), 3.0, 2.0)
    assert list(state.hosts) == [f"r{i}" for i in range(1, 17)]
    for name, hs in state.hosts.items():
        assert hs.sample is not None and hs.rates is not None, name
        roce = [ln for ln in hs.sample.links.values() if ln.link_layer == "Ethernet"]
        assert [(ln.id, ln.rdma_device, ln.state, ln.rate_gbps) for ln in roce] == [
            (f"enp65s0f{i}np{i}", f"mlx5_{i}", "up", 100.0) for i in range(8)
        ], name
        assert len(hs.sample.gpus) == 2 and hs.sample.inference, name
    assert not [f for f in state.findings if f.severity in ("critical", "warning")]


@pytest.mark.parametrize(("n", "host"), [(16, "r9"), (5, "r3"), (1, "r1")])
def test_a_scenario_lands_on_one_host_of_the_big_fabric(n: int, host: str) -> None:
    cfg = demo_config(scenario="pfc_storm", hosts=n, prefix="r")
    state = _state(demo_fabric_for(cfg), 4.0, 3.0)
    storms = [f for f in state.findings if f.rule == "pfc_storm"]
    assert storms and {f.subject.split("/")[0] for f in storms} == {host}


def test_a_misconfiguration_lands_on_one_host_of_the_big_fabric() -> None:
    cfg = demo_config(scenario="mtu_mismatch", hosts=8, prefix="r")
    state = _state(demo_fabric_for(cfg), 2.0, 1.0)
    mtu = [f for f in state.findings if f.rule == "mtu_mismatch"]
    assert mtu and all("r5" in f.summary for f in mtu), [f.summary for f in mtu]


def test_every_scenario_the_big_fabric_takes_builds() -> None:
    for s in BIG_SCENARIOS:
        assert len(demo_fabric_for(demo_config(scenario=s, hosts=4)).hosts) == 4


def test_the_demo_cycle_spreads_its_faults_over_the_big_fabric() -> None:
    fab = demo_fabric_for(demo_config(hosts=64))
    targets = {ep.kind: ep.target for ep in fab.episodes if ep.kind != "healthy"}
    assert targets == {
        "incast": "node1",
        "pfc_storm": "node33",
        "link_flap": "node17",
        "gpu_thermal": "node49",
        "no_ecn": "node17",
    }
