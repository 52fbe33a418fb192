"""Command-line arguments: every number finite and above zero (one type for all), one line
and exit 2 for a bad one, and a hostlist beyond 256 hosts only with --many-hosts."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fabtop.commands.cli import (
    PROMETHEUS_INTERVAL_S,
    SUBCOMMANDS,
    _link_filter,
    _parser,
    build_config,
    instant,
    positive,
    positive_int,
    source,
)
from fabtop.config import MAX_HOSTS, ConfigError
from tests.conftest import REPO

COMMANDS = (None, *SUBCOMMANDS)
POSITIONAL = {"replay": ["run.fabrec"], "diff": ["a.json", "b.json"], "record": ["-o", "x"]}


def _numeric_options(cmd: str | None) -> list[argparse.Action]:
    return [
        a
        for a in _parser(cmd)._actions
        if a.option_strings and a.type not in (None, _link_filter, instant) and a.nargs is None
    ]


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_numeric_option_uses_the_one_checked_type(cmd: str | None) -> None:
    for action in _numeric_options(cmd):
        assert action.type in (positive, positive_int), (cmd, action.option_strings)


@pytest.mark.parametrize("cmd", COMMANDS)
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e999", "-1", "0", "x", ""])
def test_a_number_that_cannot_be_is_one_line_and_exit_2(
    cmd: str | None, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    options = _numeric_options(cmd)
    if cmd in ("snapshot", "doctor", "record", "replay", "diff"):
        assert options, cmd  # the commands that take numbers
    for action in options:
        opt = action.option_strings[-1]
        with pytest.raises(SystemExit) as e:
            _parser(cmd).parse_args([*POSITIONAL.get(cmd or "", []), f"{opt}={value}"])
        assert e.value.code == 2, (cmd, opt, value)
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, err
        assert opt in err and "Traceback" not in err


def test_good_numbers_still_pass() -> None:
    ns = _parser("doctor").parse_args(["--window", "2.5"])
    assert ns.window == 2.5
    assert _parser("diff").parse_args(["a", "b", "--top", "3"]).top == 3
    assert _parser("snapshot").parse_args(["--timeout", "1e-1"]).timeout == pytest.approx(0.1)


@pytest.mark.parametrize("cmd", [None, "export", "serve"])
@pytest.mark.parametrize("interval", ["0.001", "3600"])
def test_the_interval_range_holds_for_a_prometheus_source_too(
    cmd: str | None, interval: str
) -> None:
    # --from-prometheus skipped build_config, and with it the 0.1..60 s check: 0.001 polled
    # Prometheus a thousand times a second.
    words = ["--from-prometheus", "http://prom:9090"]
    with pytest.raises(ConfigError, match=r"--interval must be in 0\.1\.\.60 seconds"):
        source(_parser(cmd).parse_args([*words, "--interval", interval]))
    cfg, src = source(_parser(cmd).parse_args([*words, "--interval", "15"]))
    assert src is not None and cfg.interval == 15
    # Without --interval it polls at its own default, which the help says beside the probes'.
    cfg, _ = source(_parser(cmd).parse_args(words))
    assert cfg.interval == PROMETHEUS_INTERVAL_S
    said = " ".join(_parser(cmd).format_help().split())
    assert f"seconds between frames (1; {PROMETHEUS_INTERVAL_S:g} with --from-prometheus)" in said


def test_doctor_with_a_nan_window_exits_at_once_instead_of_hanging() -> None:
    start = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "tui", "doctor", "--demo", "--window", "nan"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "--window" in run.stderr
    assert time.monotonic() - start < 30


@pytest.mark.parametrize("cmd", [None, "snapshot", "doctor", "record", "export"])
def test_more_than_256_hosts_needs_many_hosts(cmd: str | None, tmp_path: Path) -> None:
    extra = POSITIONAL.get(cmd or "", [])
    ns = _parser(cmd).parse_args([*extra, "node[1-300]"])
    with pytest.raises(ConfigError, match=f"300 hosts is more than {MAX_HOSTS}; pass --many-hosts"):
        build_config(ns)
    ns = _parser(cmd).parse_args([*extra, "--many-hosts", "node[1-300]"])
    assert len(build_config(ns).hosts) == 300
    toml = tmp_path / "big.toml"
    toml.write_text('[[host]]\nname = "gpu[001-400]"\n')
    with pytest.raises(ConfigError, match="400 hosts is more than"):
        build_config(_parser(cmd).parse_args([*extra, "-c", str(toml)]))
    assert (
        len(build_config(_parser(cmd).parse_args([*extra, "-c", str(toml), "--many-hosts"])).hosts)
        == 400
    )


def test_too_many_hosts_is_one_line_on_the_command_line() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tui", "snapshot", "node[1-10000]"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.strip().splitlines() == [
        "fabtop: command line: 10000 hosts is more than 256; pass --many-hosts to monitor them all"
    ]


def _record(path: Path, *args: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tui", "record", "-o", str(path), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert run.returncode == 0, run.stderr


def _replay_findings(path: Path) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-m", "tui", "replay", str(path), "--findings"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert run.returncode == 0 and run.stderr == "", run.stderr
    return run.stdout.splitlines()


def test_replay_findings_prints_each_raise_and_clear_not_every_tick(tmp_path: Path) -> None:
    from fabtop.run.record import EVALUATED, RecordingReader
    from tests.unit.test_diff import record_demo

    # 90 s of the demo: incast (20-45 s), the PFC storm (45-70 s) and out of it.
    path = record_demo(tmp_path / "demo.fabrec", 90)
    ticks = sum(1 for r in RecordingReader(path).records() if r.kind == EVALUATED)
    lines = _replay_findings(path)
    assert ticks > 60 and 0 < len(lines) < ticks / 3, (ticks, lines)
    rows = [ln.split(None, 3) for ln in lines]  # time, raised|cleared, severity, the rest
    assert all(float(t) >= 0 and what in ("raised", "cleared") for t, what, _, _ in rows)
    assert [float(r[0]) for r in rows] == sorted(float(r[0]) for r in rows)
    storm = [(what, sev, rest) for _, what, sev, rest in rows if "PFC storm" in rest]
    assert [(what, sev) for what, sev, _ in storm] == [
        ("raised", "critical"),
        ("cleared", "critical"),
    ], lines
    assert storm[0][2].startswith("node3/")
    subjects = [(what, rest.split(":")[0]) for _, what, _, rest in rows]
    assert len(set(subjects)) == len(subjects)  # each finding raised (and cleared) once


def test_record_demo_scenario_records_that_scenario(tmp_path: Path) -> None:
    # Reported in issue 12 as recording the plain demo: its first 20 s are healthy, so a
    # PFC storm from the start can only come from the scenario's own fabric.
    path = tmp_path / "storm.fabrec"
    # By frames, not seconds: a starved machine records the same ticks (8 of each host).
    _record(path, "--demo-scenario", "pfc_storm", "--demo-speed", "10", "--frames", "56")
    from fabtop.run.record import RecordingReader

    assert RecordingReader(path).config().source == "demo:pfc_storm"
    lines = _replay_findings(path)
    assert any(" raised " in ln and "PFC storm" in ln for ln in lines), lines
    plain = tmp_path / "plain.fabrec"
    _record(plain, "--demo", "--demo-speed", "10", "--frames", "42")
    assert not any("PFC storm" in ln for ln in _replay_findings(plain))


@pytest.mark.parametrize(
    ("terms", "says"), [("bogus:1", "unknown field 'bogus'"), ("host:n[", "bad hostlist")]
)
def test_a_bad_filter_is_one_line_and_exit_2(
    terms: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        _parser(None).parse_args(["--demo", "--filter", terms])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "--filter" in err and says in err and len(err.splitlines()) == 1


def test_a_filter_reads_as_the_dashboards_slash_reads_it() -> None:
    ns = _parser(None).parse_args(["--demo", "--filter", "kind:roce !host:node[1-2]"])
    assert ns.filter.text == "kind:roce !host:node[1-2]" and len(ns.filter.terms) == 2


@pytest.mark.parametrize(
    ("text", "unix"),
    [
        ("2026-01-05T14:00:00Z", 1767621600.0),
        ("2026-01-05T15:00:00+01:00", 1767621600.0),
        ("1767621600", 1767621600.0),
        ("1767621600.5", 1767621600.5),
    ],
)
def test_at_takes_rfc3339_with_its_zone_or_unix_seconds(text: str, unix: float) -> None:
    assert instant(text) == unix


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("2026-01-05T14:00:00", "is not a time"),  # no zone: whose 14:00?
        ("yesterday", "is not a time"),
        ("nan", "is not a time"),
        ("-5", "is not a past instant"),
        ("9999999999", "is not a past instant"),
        ("2999-01-01T00:00:00Z", "is not a past instant"),
    ],
)
def test_a_bad_at_is_one_line_naming_it(
    text: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        _parser("snapshot").parse_args(["--from-prometheus", "http://p:9090", "--at", text])
    assert e.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert why in line and "--at" in line


def test_at_without_from_prometheus_is_refused() -> None:
    ns = _parser("snapshot").parse_args(["--at", "1767621600"])
    with pytest.raises(ConfigError, match="--at reads a past instant from --from-prometheus"):
        source(ns)
