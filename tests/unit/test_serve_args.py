"""``fabtop serve``'s command line: what each tab's fabtop runs with, where it may listen,
and the one-line errors (a missing extra, an address beyond loopback)."""

from __future__ import annotations

import sys

import pytest

from fabtop.commands.cli import _parser
from fabtop.commands.serve import MISSING_EXTRA, session_args, session_command
from tui.main import ENTRY, main

browser = pytest.importorskip("fabtop.run.browser", reason="the [serve] extra is not installed")


@pytest.mark.parametrize(
    ("args", "rest"),
    [
        (["--demo"], ["--demo"]),
        (["node[1-4]", "--port", "8001", "--sessions", "2", "--allow-write"], ["node[1-4]"]),
        (
            ["--port=8001", "-c", "f.toml", "--host", "::1", "--interval", "0.5"],
            ["-c", "f.toml", "--interval", "0.5"],
        ),
        (["--public-url", "http://localhost:9000", "--allow-remote", "a", "b"], ["a", "b"]),
        # after --, every word is a host, even one spelled like an option of serve
        (["--port", "1", "--", "--port", "x"], ["--", "--port", "x"]),
    ],
)
def test_each_tab_gets_the_arguments_less_serves_own(args: list[str], rest: list[str]) -> None:
    assert session_args(args) == rest


def test_a_tabs_fabtop_is_the_dashboard_read_only_unless_allow_write() -> None:
    args = ["export", "--demo", "--port", "8001"]  # a host named like a command
    ns = _parser("serve").parse_args(args)
    argv = session_command(ns, args, ENTRY)
    assert argv[:4] == [sys.executable, "-P", "-m", "tui"]  # -P: not from the cwd
    tab = _parser(None).parse_args(argv[4:])
    assert tab.hosts == ["export"] and tab.demo and tab.served == "read-only"
    ns = _parser("serve").parse_args([*args, "--allow-write"])
    assert _parser(None).parse_args(session_command(ns, args, ENTRY)[4:]).served == "allow-write"


def test_an_abbreviation_of_serves_options_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # It would reach the tab's fabtop, which does not know it.
    with pytest.raises(SystemExit) as e:
        main(["serve", "--demo", "--allow-w"])
    assert e.value.code == 2
    assert "--allow-w" in capsys.readouterr().err


@pytest.mark.parametrize("port", ["65536", "99999"])
def test_a_port_out_of_range_is_one_line(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--demo", "--port", port]) == 2  # below 1: tests/unit/test_cli_args
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"--port {port}" in err


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_needs_no_flag(host: str) -> None:
    plan = browser.bind_plan(host, 8000)
    assert plan.warning is None
    assert plan.origin == (f"http://[{host}]:8000" if ":" in host else f"http://{host}:8000")


@pytest.mark.parametrize("host", ["10.1.2.3", "0.0.0.0", "::", "admin-host", "192.168.1.10"])
def test_any_other_address_needs_allow_remote(host: str) -> None:
    with pytest.raises(browser.BindError, match="--allow-remote"):
        browser.bind_plan(host, 8000)


def test_beyond_loopback_is_a_warning_and_every_address_needs_the_public_url() -> None:
    plan = browser.bind_plan("10.1.2.3", 8000, allow_remote=True)
    assert plan.warning and "without TLS" in plan.warning
    assert plan.origin == "http://10.1.2.3:8000"
    with pytest.raises(browser.BindError, match="--public-url"):
        browser.bind_plan("0.0.0.0", 8000, allow_remote=True)
    plan = browser.bind_plan(
        "0.0.0.0", 8000, allow_remote=True, public_url="https://Admin-Host.example/"
    )
    assert plan.origin == "https://admin-host.example"


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://localhost:9000", "http://localhost:9000"),
        ("http://127.0.0.1:80/", "http://127.0.0.1"),
        ("https://h.example:443", "https://h.example"),
        ("https://h.example:8443", "https://h.example:8443"),
        ("http://[::1]:9000", "http://[::1]:9000"),
    ],
)
def test_the_public_url_is_compared_as_browsers_write_origins(url: str, origin: str) -> None:
    assert browser.origin_of(url) == origin


@pytest.mark.parametrize(
    "url",
    [
        "localhost:9000",
        "ftp://h",
        "http://h/fabtop",
        "http://h/?x=1",
        "http://u:p@h",
        "http://h:99999",
        "http://",
        "javascript:alert(1)",
    ],
)
def test_a_public_url_that_is_no_origin_is_refused(url: str) -> None:
    with pytest.raises(browser.BindError, match="--public-url"):
        browser.origin_of(url)


def test_a_remote_address_without_the_flag_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["serve", "--demo", "--host", "10.1.2.3"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--allow-remote" in err and "SSH tunnel" in err


def test_without_the_extra_serve_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delitem(sys.modules, "fabtop.run.browser")
    monkeypatch.setitem(sys.modules, "textual_serve", None)  # import textual_serve fails
    assert main(["serve", "--demo"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"fabtop: {MISSING_EXTRA}")
    assert "pip install 'fabtop[serve]'" in err


def test_a_port_in_use_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--demo", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fabtop: cannot listen on 127.0.0.1:{port}: ") and err.count("\n") == 1
