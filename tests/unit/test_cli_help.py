"""The command line as a Unix tool: help that lists the commands, each command's own help,
"did you mean" for a typo that is not a host, and shell completion the way bash asks."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from fabtop.commands.cli import COMMANDS, SUBCOMMANDS, _parser, looks_like_command
from tests.conftest import REPO
from tui.main import main

ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _fabtop(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=env or ENV,
    )


def test_help_lists_every_command_with_its_one_line() -> None:
    run = _fabtop("--help")
    assert run.returncode == 0
    lines = run.stdout.splitlines()
    for c in COMMANDS:
        assert [ln.split() for ln in lines if ln.split()[:1] == [c.name]] == [
            [c.name, *c.summary.split()]
        ], c.name
    assert "fabtop COMMAND" in run.stdout and "--demo" in run.stdout


@pytest.mark.parametrize("cmd", SUBCOMMANDS)
def test_each_command_describes_itself_not_the_dashboard(cmd: str) -> None:
    text = _parser(cmd).format_help()
    dashboard = _parser(None).format_help()
    assert text.startswith(f"usage: fabtop {cmd} ")
    summary = next(c.summary for c in COMMANDS if c.name == cmd)
    assert " ".join(text.split()).count(summary[1:]) == 1  # its own first sentence
    assert "Live dashboard" not in text and "Live dashboard" in dashboard
    assert f"fabtop {cmd} " in text.split("examples:")[1]


@pytest.mark.parametrize("cmd", [None, *SUBCOMMANDS])
def test_each_help_names_only_options_its_command_accepts(cmd: str | None) -> None:
    # `fabtop doctor --help` once said "--from-prometheus replace all three", which doctor
    # refuses: a reader tries what the help names, so every option it names must parse.
    parser = _parser(cmd)
    accepted = {s for a in parser._actions for s in a.option_strings}
    named = set(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*\*?", parser.format_help()))
    # "--demo-*" names a family: some option of it must be accepted.
    refused = [n for n in named if not any(fnmatch.fnmatchcase(a, n) for a in accepted)]
    assert named and sorted(refused) == [], cmd


@pytest.mark.parametrize(
    ("word", "meant"),
    [
        ("sanpshot", "snapshot"),
        ("doctr", "doctor"),
        ("recrod", "record"),
        ("replya", "replay"),
        ("dif", "diff"),
        ("exprot", "export"),
    ],
)
def test_a_typo_of_a_command_is_one_line_and_exit_2(word: str, meant: str) -> None:
    run = _fabtop(word, "--demo")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [
        f"fabtop: unknown command {word!r}; did you mean {meant!r}? "
        f"(a host named so: fabtop -- {word}, or {word}={word})"
    ]


@pytest.mark.parametrize(
    "word",
    [
        "doctor1",
        "snapshot.lan",
        "root@doctor",
        "doctor:2222",
        "doctr[1-2]",
        "d=doctr",
        "node",
        "gpu",
        "local",
        "--demo",
    ],
)
def test_a_word_that_can_only_be_a_host_stays_a_host(word: str) -> None:
    assert looks_like_command(word, "/nonexistent") is None


def test_a_host_in_the_ssh_config_is_never_taken_for_a_typo(tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        "Host *\n  ServerAliveInterval 5\n"
        "Host bastion sanpshot\n  HostName 10.0.0.9\n"
        "Host=rec*\n  User admin\n"
        "Include extra/*.conf\n"
    )
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra/lab.conf").write_text('Host "doctr"\n  Port 2222\n')
    ssh = str(cfg)
    assert looks_like_command("sanpshot", ssh) is None  # a Host line names it
    assert looks_like_command("recrod", ssh) is None  # a pattern matches it
    assert looks_like_command("exprot", ssh) == "export"  # "Host *" names no host
    # Include is relative to ~/.ssh, as OpenSSH reads it, not to the file: extra/ is not read.
    assert looks_like_command("doctr", ssh) == "doctor"


def test_include_is_read_relative_to_the_ssh_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh/conf.d").mkdir(parents=True)
    (tmp_path / ".ssh/config").write_text("Include conf.d/*\n")
    (tmp_path / ".ssh/conf.d/lab").write_text("Host doctr\n  Port 2222\n")
    assert looks_like_command("doctr") is None
    assert looks_like_command("sanpshot") == "snapshot"


def test_the_escape_hatch_watches_a_host_named_like_a_typo(monkeypatch: pytest.MonkeyPatch) -> None:
    import tui.app

    seen: dict[str, Any] = {}

    def fake_dashboard(cfg: Any, **_: Any) -> int:
        seen["hosts"] = [(h.name, h.target) for h in cfg.hosts]
        return 0

    monkeypatch.setattr(tui.app, "run_dashboard", fake_dashboard)
    assert main(["--", "sanpshot"]) == 0
    assert seen["hosts"] == [("sanpshot", "sanpshot")]
    assert main(["sanpshot=sanpshot"]) == 0
    assert seen["hosts"] == [("sanpshot", "sanpshot")]
    with pytest.raises(SystemExit) as e:  # the command's place: a typo, not a host
        main(["sanpshot", "--ssh-config", "/nonexistent"])
    assert e.value.code == 2 and seen["hosts"] == [("sanpshot", "sanpshot")]


def _imported(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``fabtop ARGS`` as ``python -m tui``; the top-level packages it imported."""
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tui", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=ENV,
    )
    lines = run.stderr.splitlines()
    return run, {ln.split("|")[-1].strip().split(".")[0] for ln in lines if "|" in ln}


def test_help_does_not_import_completion_ssh_or_textual() -> None:
    run, imported = _imported("--help")
    assert run.returncode == 0 and "fabtop COMMAND" in run.stdout
    assert not imported & {"argcomplete", "asyncssh", "textual"}


def test_diff_and_doctor_do_not_import_textual(tmp_path: Path) -> None:
    # The entry (tui.main) starts the dashboard; a headless word must not pay its import.
    for name, rx in (("a.json", 100), ("b.json", 250)):
        link = {"id": "mlx5_0/1", "metrics": {"rx_bytes": rx}}
        doc = {"schema": "fabtop.snapshot/1", "hosts": [{"name": "n1", "links": [link]}]}
        (tmp_path / name).write_text(json.dumps(doc))
    run, imported = _imported("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert run.returncode == 0 and "mlx5_0/1" in run.stdout, run.stderr[-500:]
    assert "textual" not in imported
    run, imported = _imported("doctor", "--demo", "--interval", "0.1", "--window", "0.5")
    assert "fabtop doctor: watched" in run.stderr and "asyncssh" in imported
    assert "textual" not in imported


def _complete(line: str) -> list[str]:
    """What bash's completion function gets: argcomplete's protocol, answers on fd 8."""
    pytest.importorskip("argcomplete")
    env = {
        **ENV,
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "COMP_TYPE": "9",
        "_ARGCOMPLETE": "1",
        "_ARGCOMPLETE_SHELL": "bash",
        "_ARGCOMPLETE_SUPPRESS_SPACE": "1",
    }
    # As register-python-argcomplete's bash function runs it: fd 8 is the answer.
    run = subprocess.run(
        ["bash", "-c", '"$0" -m tui 8>&1 9>&2 1>/dev/null 2>/dev/null', sys.executable],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.split("\013") if run.stdout else []


def test_completion_offers_the_commands_for_the_first_word() -> None:
    assert _complete("fabtop sn") == ["snapshot"]
    assert set(SUBCOMMANDS) <= set(_complete("fabtop "))
    assert _complete("fabtop re") == ["record", "replay"]


def test_completion_offers_each_commands_own_options() -> None:
    assert _complete("fabtop doctor --wi") == ["--window"]
    assert _complete("fabtop doctor --w") == ["--window", "--write-expect"]
    assert "--findings" in _complete("fabtop replay run.fabrec --f")
    assert _complete("fabtop --w") == []  # --window is doctor's, not the dashboard's
    assert _complete("fabtop --demo-scenario pfc_") == ["pfc_storm", "pfc_mismatch"]


def test_the_entry_carries_argcompletes_marker_for_global_completion() -> None:
    # activate-global-python-argcomplete completes a console script, or python -m PKG,
    # only when the module run has the marker in its first 1 KB: it moves with the entry.
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    module = scripts["fabtop"].partition(":")[0]
    for path in (f"{module.replace('.', '/')}.py", "tui/__main__.py"):
        assert "PYTHON_ARGCOMPLETE_OK" in (REPO / path).read_text()[:1024], path


def test_the_committed_man_page_is_the_one_the_parsers_make(tmp_path: Path) -> None:
    import shutil

    from tests.conftest import skip_or_fail

    tool = shutil.which("argparse-manpage", path=str(Path(sys.executable).parent))
    if tool is None:
        skip_or_fail("argparse-manpage is not installed (pip install -e '.[test]')")
    out = tmp_path / "fabtop.1"
    # TESTING= : the venv this test runs in is the one to use, never one to install into.
    run = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "man",
            f"MAN_OUT={out}",
            "TESTING=",
            f"VENV={Path(sys.executable).parent.parent}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env=ENV,
    )
    assert run.returncode == 0, run.stderr

    def body(p: Path) -> list[str]:  # without the .TH line, which carries the date
        return [ln for ln in p.read_text().splitlines() if not ln.startswith(".TH ")]

    assert body(out) == body(REPO / "docs/fabtop.1"), "docs/fabtop.1 is stale: run make man"
    assert "fabtop doctor" in out.read_text() and "XDG_CONFIG_HOME" in out.read_text()
