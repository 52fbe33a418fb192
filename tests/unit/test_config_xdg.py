"""The user's config file: $XDG_CONFIG_HOME/fabtop/config.toml (or ~/.config/...) when no
hosts and no -c are given, before the ``local`` default; errors name that file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fabtop.commands.cli import HOST_COMMANDS, _parser, build_config
from fabtop.config import ConfigError, user_config_path
from tests.conftest import REPO

POSITIONAL = {"record": ["-o", "x.fabrec"], "test": ["pairs"]}
TWO_HOSTS = '[[host]]\nname = "gpu[1-2]"\nssh = "admin@{name}"\n'


def _write(base: Path, text: str = TWO_HOSTS) -> Path:
    path = base / "fabtop" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of its own, with XDG_CONFIG_HOME unset."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return tmp_path / "home"


def _hosts(cmd: str | None, *args: str) -> list[str]:
    ns = _parser(cmd).parse_args([*POSITIONAL.get(cmd or "", []), *args])
    return [h.name for h in build_config(ns).hosts]


def test_the_path_follows_the_xdg_rules(tmp_path: Path) -> None:
    home = str(tmp_path)
    fallback = tmp_path / ".config/fabtop/config.toml"
    assert user_config_path({"HOME": home}) == fallback
    assert user_config_path({"HOME": home, "XDG_CONFIG_HOME": ""}) == fallback
    # A relative XDG_CONFIG_HOME is invalid by the spec and ignored.
    assert user_config_path({"HOME": home, "XDG_CONFIG_HOME": "rel/conf"}) == fallback
    assert user_config_path({"HOME": home, "XDG_CONFIG_HOME": "/etc/xdg"}) == Path(
        "/etc/xdg/fabtop/config.toml"
    )


@pytest.mark.parametrize("cmd", HOST_COMMANDS)
def test_every_command_that_takes_hosts_reads_the_user_config(
    cmd: str | None, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = _hosts(cmd)
    assert len(local) == 1  # no file: this machine
    _write(home / ".config")
    assert _hosts(cmd) == ["gpu1", "gpu2"]
    xdg = tmp_path / "xdg"
    _write(xdg, '[[host]]\nname = "other"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert _hosts(cmd) == ["other"]  # $XDG_CONFIG_HOME wins over ~/.config


@pytest.mark.parametrize("cmd", HOST_COMMANDS)
def test_hosts_c_and_demo_come_before_the_user_config(
    cmd: str | None, home: Path, tmp_path: Path
) -> None:
    _write(home / ".config")
    assert _hosts(cmd, "node7") == ["node7"]
    given = tmp_path / "given.toml"
    given.write_text('[[host]]\nname = "given"\n')
    assert _hosts(cmd, "-c", str(given)) == ["given"]
    from fabtop.sim import demo_hosts

    assert _hosts(cmd, "--demo") == [h.name for h in demo_hosts()]


def test_a_bad_user_config_is_one_line_naming_the_file(home: Path) -> None:
    path = _write(home / ".config", '[[host]]\nname = "a"\nbogus = 1\n')
    with pytest.raises(ConfigError, match=f"^{path}: host 'a': unknown field 'bogus'$"):
        _hosts(None)
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("XDG_CONFIG_HOME", None)
    run = subprocess.run(
        [sys.executable, "-m", "tui", "doctor"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=env,
    )
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [f"fabtop: {path}: host 'a': unknown field 'bogus'"]


def test_a_dangling_symlink_is_said_not_silently_local(home: Path) -> None:
    path = home / ".config/fabtop/config.toml"
    path.parent.mkdir(parents=True)
    path.symlink_to(home / "gone.toml")
    with pytest.raises(ConfigError, match=f"^{path}: no such file$"):
        _hosts("snapshot")


@pytest.mark.parametrize("cmd", HOST_COMMANDS)
def test_help_says_the_lookup_order(cmd: str | None) -> None:
    text = _parser(cmd).format_help()
    hosts = text.index("HOST arguments, or -c FILE")
    xdg = text.index("$XDG_CONFIG_HOME/fabtop/config.toml")
    local = text.index("local: this machine")
    assert hosts < xdg < local
    assert "~/.config/fabtop/config.toml" in text
