"""Hosts from the command line and from TOML: expansions a user types, errors a user can act on."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fabtop.config import ConfigError, hosts_from_args, load_config


def test_hostlist_expressions_expand_like_slurm() -> None:
    hosts = hosts_from_args(["node[01-04]", "admin@gpu[1-2]:2222"])
    assert [h.name for h in hosts] == ["node01", "node02", "node03", "node04", "gpu1", "gpu2"]
    gpu2 = hosts[-1]
    assert gpu2.ssh is not None
    assert (gpu2.ssh.user, gpu2.ssh.host, gpu2.ssh.port) == ("admin", "gpu2", 2222)
    assert gpu2.target == "admin@gpu2:2222"
    assert hosts[0].ssh is not None and hosts[0].ssh.port is None


def test_named_targets_and_same_address_different_ports() -> None:
    hosts = hosts_from_args(["a=root@127.0.0.1:2201", "b=root@127.0.0.1:2202", "local"])
    assert [h.name for h in hosts] == ["a", "b", hosts[2].name]
    assert hosts[2].ssh is None and hosts[2].target == "local"
    unnamed = hosts_from_args(["127.0.0.1:2201", "127.0.0.1:2202"])
    assert [h.name for h in unnamed] == ["127.0.0.1", "127.0.0.1_2202"]


@pytest.mark.parametrize(
    "arg",
    ["node[01-", "root@host;reboot", "$(id)@x", "-oProxyCommand=x", "h:99999", "a b"],
)
def test_bad_host_arguments_are_one_line_errors(arg: str) -> None:
    with pytest.raises(ConfigError) as e:
        hosts_from_args([arg])
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("command line:")


def test_duplicate_host_is_rejected() -> None:
    with pytest.raises(ConfigError, match="listed twice"):
        hosts_from_args(["n1", "n1"])


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "fabtop.toml"
    p.write_text(text)
    return p


def test_toml_config_with_defaults_and_hostlist(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        """
interval = 0.5
[defaults]
path = ["/usr/sbin", "/opt/mellanox/bin"]
[[host]]
name = "node[1-2]"
ssh = "admin@{name}.cluster:2222"
interfaces = ["enp65s0f0np0", "enp65s0f1np1"]
inference = "http://127.0.0.1:8000/metrics"
[[host]]
name = "me"
sysfs = "/tmp/fake-sys"
[thresholds]
storm_pause_ratio = 0.95
""",
    )
    cfg = load_config(p)
    assert cfg.interval == 0.5
    assert [h.name for h in cfg.hosts] == ["node1", "node2", "me"]
    n2 = cfg.hosts[1]
    assert n2.target == "admin@node2.cluster:2222"
    assert n2.path == ("/usr/sbin", "/opt/mellanox/bin")
    assert n2.interfaces == ("enp65s0f0np0", "enp65s0f1np1")
    assert n2.inference == ("http://127.0.0.1:8000/metrics",)
    me = cfg.hosts[2]
    assert me.ssh is None and me.sysfs == "/tmp/fake-sys"
    assert cfg.thresholds == {"storm_pause_ratio": 0.95}
    assert load_config(p, interval=2.0).interval == 2.0


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        ('[[host]]\nname = "n1"\nsshh = "x"\n', "host 'n1'.*unknown field 'sshh'"),
        ('[[host]]\nname = "n1"\nsysfs = "relative/sys"\n', "host 'n1'.*field 'sysfs'"),
        ('[[host]]\nname = "n1"\ninterfaces = ["eth0;reboot"]\n', "host 'n1'.*'interfaces'"),
        ('[[host]]\nname = "n1"\npath = ["/bin:/tmp"]\n', "host 'n1'.*field 'path'"),
        ('[[host]]\nname = "n1"\nssh = "a@b;c"\n', "host 'n1'.*field 'ssh'"),
        ('[[host]]\nname = "n1"\ninference = ["https://x/metrics"]\n', "'inference'"),
        ('interval = "fast"\n[[host]]\nname = "n1"\n', "field 'interval'"),
        ('[[host]]\nssh = "x"\n', "host #1.*field 'name'"),
        ("interval = 1\n", "no \\[\\[host\\]\\]"),
        ("[[host]\n", "not valid TOML"),
        ('colour = 1\n[[host]]\nname="a"\n', "unknown setting 'colour'"),
        ('[thresholds]\nstorm_ratio = 1\n[[host]]\nname="a"\n', "unknown threshold 'storm_ratio'"),
    ],
)
def test_bad_config_names_file_host_and_field(tmp_path: Path, body: str, expect: str) -> None:
    p = _write(tmp_path, body)
    with pytest.raises(ConfigError, match=expect) as e:
        load_config(p)
    assert str(e.value).startswith(str(p)) and "\n" not in str(e.value)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "nope.toml")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sysfs", '"/sys/../etc"'),
        ("sysfs", '"/sys/class/.."'),
        ("path", '["/usr/bin", "/opt/../../etc"]'),
        ("interfaces", '["-oProxyCommand"]'),
        ("interfaces", '["' + "e" * 65 + '"]'),
        ("inference", '["http://127.0.0.1:0/metrics"]'),
        ("inference", '["http://127.0.0.1:8000/metrics?x=1"]'),
        ("inference", '["http://user@127.0.0.1:8000/metrics"]'),
    ],
)
def test_what_the_probe_would_refuse_is_refused_at_load(
    tmp_path: Path, field: str, value: str
) -> None:
    p = _write(tmp_path, f'[[host]]\nname = "n1"\n{field} = {value}\n')
    with pytest.raises(ConfigError) as e:
        load_config(p)
    (line,) = str(e.value).splitlines()
    assert line.startswith(f"{p}: host 'n1': field '{field}'"), line


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0.05", "61", "true"])
def test_interval_must_be_finite_and_what_the_probe_runs(tmp_path: Path, value: str) -> None:
    p = _write(tmp_path, f'interval = {value}\n[[host]]\nname = "n1"\n')
    with pytest.raises(ConfigError, match="field 'interval' must be a number of seconds"):
        load_config(p)
    q = _write(tmp_path, '[[host]]\nname = "n1"\n')
    with pytest.raises(ConfigError, match="--interval"):
        load_config(q, interval=float("nan"))


def test_thresholds_must_be_finite(tmp_path: Path) -> None:
    p = _write(tmp_path, '[thresholds]\nstorm_pause_ratio = nan\n[[host]]\nname = "a"\n')
    with pytest.raises(ConfigError, match=r"\[thresholds\] storm_pause_ratio must be a number in "):
        load_config(p)


def test_ten_thousand_hosts_need_the_explicit_flag(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        hosts_from_args(["node[1-10000]"])
    assert str(e.value) == (
        "command line: 10000 hosts is more than 256; pass --many-hosts to monitor them all"
    )
    # The bound counts every argument together, and a config file the same way.
    with pytest.raises(ConfigError, match="257 hosts is more than 256"):
        hosts_from_args(["a[1-200]", "b[1-57]"])
    p = _write(tmp_path, '[[host]]\nname = "n[1-200]"\n[[host]]\nname = "m[1-100]"\n')
    with pytest.raises(ConfigError, match=f"^{p}: 300 hosts is more than 256; pass --many"):
        load_config(p)
    assert len(hosts_from_args(["node[1-256]"])) == 256
    assert len(hosts_from_args(["node[1-10000]"], max_hosts=None)) == 10000
    assert len(load_config(p, max_hosts=None).hosts) == 300


@pytest.mark.parametrize(
    "expr",
    [
        "node[1-10000000]",
        "n[1-99999],m[1-99999]",
        "n[1-1000][1-1000]",
        "n[1-" + "9" * 5000 + "]",
    ],
)
def test_a_huge_hostlist_is_refused_before_it_is_expanded(expr: str) -> None:
    started = time.process_time()
    for limit in (256, None):
        with pytest.raises(ConfigError) as e:
            hosts_from_args([expr], max_hosts=limit)
        (line,) = str(e.value).splitlines()
        assert line.startswith("command line: ") and len(line) < 200, line
        assert ": bad hostlist" not in line or "is too long" in line, line
        assert "hosts is more than" in line or "is too long" in line, line
    assert time.process_time() - started < 0.5  # counted, not expanded
