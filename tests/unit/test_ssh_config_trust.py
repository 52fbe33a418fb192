"""An ssh_config named by a fabtop config file is data: what would run a command is refused.

Each spelling below is checked against asyncssh's own parser first (it acts on the line:
the option is set, or Match exec runs), so a refusal here is a command that would have run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from asyncssh.config import SSHClientConfig

from collectors.transport.base import TransportError
from collectors.transport.ssh import SshTransport
from collectors.transport.ssh_config import (
    INCLUDE_DEPTH,
    MAX_FILES,
    SshConfigError,
    check_no_commands,
)
from fabtop.config import Config, ConfigError, HostConfig, load_config, refuse_ssh_commands
from tui.main import main


def _asyncssh_reads(path: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """The options asyncssh's own parser takes from ``path`` for host ``a`` (Match exec runs)."""
    monkeypatch.chdir(cwd)
    cfg = SSHClientConfig.load(None, [path], False, False, False, "me", (), "a", ())
    return {k: cfg.get(k) for k in ("ProxyCommand", "PKCS11Provider") if cfg.get(k)}


# (line as written, the option the error names); every one is read by asyncssh.
ASYNCSSH_ACTS_ON = [
    ("ProxyCommand touch M", "ProxyCommand"),
    ("proxycommand=touch M", "ProxyCommand"),
    ("PROXYCOMMAND = touch M", "ProxyCommand"),
    ("ProxyCommand= touch M", "ProxyCommand"),
    ("\tProxyCommand\ttouch M", "ProxyCommand"),
    ('"ProxyCommand" touch M', "ProxyCommand"),
    ('Proxy"Command" touch M', "ProxyCommand"),
    ("=ProxyCommand touch M", "ProxyCommand"),
    ("Port 22\rProxyCommand touch M", "ProxyCommand"),  # a bare CR ends a line too
    ("\x0cProxyCommand touch M", "ProxyCommand"),
    ("PKCS11Provider /tmp/x.so", "PKCS11Provider"),
    ("P\u212aCS11Provider /tmp/x.so", "PKCS11Provider"),  # KELVIN SIGN lowers to "k"
    ('Match exec "touch M"', "Match exec"),
    ("Match host a exec=touch\\ M", "Match exec"),
    ("Match !exec 'touch M'", "Match exec"),
    ("match EXEC 'touch M'", "Match exec"),
    ("Match=exec 'touch M'", "Match exec"),
]


@pytest.mark.parametrize(("line", "option"), ASYNCSSH_ACTS_ON)
def test_every_spelling_asyncssh_acts_on_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, option: str
) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host *\n  User admin\n{line}\n")
    got = _asyncssh_reads(cfg, tmp_path, monkeypatch)
    ran = (tmp_path / "M").exists()
    assert ran if option == "Match exec" else option in got, "asyncssh ignores this line"
    with pytest.raises(SshConfigError) as e:
        check_no_commands(cfg)
    assert str(e.value).startswith(f"ssh_config {cfg} line "), e.value
    assert f": {option} " in str(e.value) and e.value.runs


@pytest.mark.parametrize(
    ("line", "option"),
    [
        ("LocalCommand touch M", "LocalCommand"),
        ("KnownHostsCommand /bin/cat %H", "KnownHostsCommand"),
        ("SecurityKeyProvider /tmp/sk.so", "SecurityKeyProvider"),
        ("XAuthLocation /tmp/xauth", "XAuthLocation"),
        ("Host other\n  ProxyCommand touch M", "ProxyCommand"),  # in a block for another host
    ],
)
def test_what_openssh_would_run_is_refused_too(tmp_path: Path, line: str, option: str) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host *\n  User admin\n{line}\n")
    with pytest.raises(SshConfigError, match=f"^ssh_config {cfg} line [34]: {option} "):
        check_no_commands(cfg)


def test_data_only_options_pass(tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        "# ProxyCommand in a comment\n"
        "Host execute proxycommand\n  HostName 10.0.0.9\n"  # host names, not options
        "Match host exec.example.com\n  User admin\n"
        "Match all\n"
        "Host *\n  ProxyJump admin@bastion:2222\n  ForwardAgent yes\n  IdentityFile ~/.ssh/id\n"
        "  RemoteCommand uptime\n  PermitLocalCommand yes\n  SendEnv LANG\n"
    )
    check_no_commands(cfg)


def test_includes_are_followed_as_asyncssh_resolves_them(tmp_path: Path) -> None:
    ssh_dir = tmp_path / "dot-ssh"
    (ssh_dir / "conf.d").mkdir(parents=True)
    top = tmp_path / "ssh_config"
    top.write_text("Host *\n  User admin\nInclude conf.d/*.conf\n")  # relative: under ~/.ssh
    (ssh_dir / "conf.d/a.conf").write_text(f"Include = {tmp_path}/deeper\n")
    (tmp_path / "deeper").write_text("Host *\n\n  ProxyCommand touch M\n")
    with pytest.raises(SshConfigError) as e:
        check_no_commands(top, ssh_dir=ssh_dir)
    assert str(e.value) == (
        f"ssh_config {top} line 3: included {tmp_path}/deeper line 3: "
        "ProxyCommand runs a local command"
    )
    (tmp_path / "deeper").write_text("Host *\n  Port 2222\n")
    check_no_commands(top, ssh_dir=ssh_dir)


def test_an_include_loop_or_fan_out_is_refused_not_followed_for_ever(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.write_text(f"Include {loop}\n")
    with pytest.raises(SshConfigError, match=f"Include nested deeper than {INCLUDE_DEPTH}"):
        check_no_commands(loop)
    (tmp_path / "many").mkdir()
    for i in range(MAX_FILES):
        (tmp_path / "many" / str(i)).write_text("Port 22\n")
    fan = tmp_path / "fan"
    fan.write_text(f"Include {tmp_path}/many/*\n")
    with pytest.raises(SshConfigError, match=f"Include reads more than {MAX_FILES} files"):
        check_no_commands(fan)


def test_a_file_that_cannot_be_read_is_no_permission(tmp_path: Path) -> None:
    with pytest.raises(SshConfigError, match="cannot read") as e:
        check_no_commands(tmp_path / "missing")
    assert not e.value.runs


# The fabtop side: which files are checked, and the one line the operator reads.


def _shared(tmp_path: Path, ssh_lines: str) -> tuple[Path, Path]:
    ssh = tmp_path / "x" / "ssh_config"
    ssh.parent.mkdir(exist_ok=True)
    ssh.write_text(ssh_lines)
    toml = tmp_path / "shared.toml"
    toml.write_text(f'ssh_config = "{ssh}"\n[[host]]\nname = "n1"\nssh = "n1.invalid"\n')
    return toml, ssh


def test_a_shared_config_with_a_proxy_command_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "ran"
    toml, ssh = _shared(tmp_path, f"Host *\n  User admin\n  ProxyCommand touch {marker}\n")
    assert main(["snapshot", "-c", str(toml)]) == 2
    assert capsys.readouterr().err == (
        f"fabtop: {toml}: ssh_config {ssh} line 3: ProxyCommand runs a local command; "
        "pass --allow-ssh-commands to allow it\n"
    )
    assert not marker.exists()


def test_who_named_the_file_decides(tmp_path: Path) -> None:
    toml, ssh = _shared(tmp_path, "Match exec true\n")
    cfg = load_config(toml)
    with pytest.raises(ConfigError, match=f"^{toml}: ssh_config {ssh} line 1: Match exec "):
        refuse_ssh_commands(cfg)
    cfg.allow_ssh_commands = True  # --allow-ssh-commands
    refuse_ssh_commands(cfg)
    # The operator's own file (--ssh-config, ~/.ssh/config) is read as OpenSSH reads it.
    refuse_ssh_commands(
        Config(hosts=[HostConfig("a")], ssh_config=str(ssh), allow_ssh_commands=True)
    )
    refuse_ssh_commands(Config(hosts=[HostConfig("a")]))


def test_the_flags_reach_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fabtop.commands.headless as headless

    seen: list[Config] = []

    async def fake_snapshot(cfg: Config, _: object, source: object = None) -> int:
        seen.append(cfg)
        return 0

    monkeypatch.setattr(headless, "snapshot_command", fake_snapshot)
    toml, ssh = _shared(tmp_path, "ProxyCommand true\n")
    assert main(["snapshot", "-c", str(toml)]) == 2
    assert main(["snapshot", "-c", str(toml), "--allow-ssh-commands"]) == 0
    assert main(["snapshot", "-c", str(toml), "--ssh-config", str(ssh)]) == 0
    assert [c.allow_ssh_commands for c in seen] == [True, True]
    # The user's own config.toml is a config file like any other.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg/fabtop").mkdir(parents=True)
    (tmp_path / "xdg/fabtop/config.toml").write_text(toml.read_text())
    assert main(["snapshot"]) == 2


@pytest.mark.parametrize("allowed", [False, True])
def test_the_transport_checks_again_at_every_connect(tmp_path: Path, allowed: bool) -> None:
    """asyncssh reads the file again at each (re)connect: one changed after start is caught."""
    marker = tmp_path / "ran"
    ssh = tmp_path / "ssh_config"
    ssh.write_text(f"Host *\n  ProxyCommand touch {marker}\n")
    t = SshTransport(
        "n1",
        "admin@127.0.0.1:9",
        config_paths=[str(ssh)],
        known_hosts=[],
        config_commands=allowed,
        agent=None,
        client_keys=[],
        connect_timeout=5,
    )
    with pytest.raises(TransportError) as e:
        asyncio.run(t.connect())
    if allowed:
        assert marker.exists()  # the operator's own file: the proxy ran (and failed)
    else:
        assert not marker.exists()
        assert str(e.value).endswith(
            f"ssh_config {ssh} line 2: ProxyCommand runs a local command"
        ), e.value


def test_a_config_that_would_accept_any_host_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """asyncssh reads ``UserKnownHostsFile none`` as "check no host key" (OpenSSH does not)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    ssh = tmp_path / ".ssh" / "config"
    ssh.parent.mkdir()
    ssh.write_text("Host *\n  Port 9\nInclude extra\n")
    (tmp_path / ".ssh" / "extra").write_text("Host lab\n  UserKnownHostsFile = NONE\n")
    for paths in ((), [str(ssh)]):  # ~/.ssh/config by default, or named
        t = SshTransport(
            "n1",
            "admin@127.0.0.1:9",
            config_paths=paths,
            agent=None,
            client_keys=[],
            connect_timeout=5,
        )
        with pytest.raises(TransportError, match="UserKnownHostsFile none would accept any"):
            asyncio.run(t.connect())
    # A known_hosts of fabtop's own is what asyncssh checks: the line no longer matters.
    t = SshTransport(
        "n1",
        "admin@127.0.0.1:9",
        config_paths=[str(ssh)],
        known_hosts=[],
        agent=None,
        client_keys=[],
        connect_timeout=5,
    )
    with pytest.raises(TransportError, match="connection refused"):
        asyncio.run(t.connect())
