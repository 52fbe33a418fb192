"""The deployment docs/PROMETHEUS.md walks through: the files under deploy/ are what a
reader copies, so each is checked by the tool that will read it (issue 31 item 4)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from fabtop.commands.cli import parse
from fabtop.config import load_config
from tests.conftest import REPO, skip_or_fail

DEPLOY = REPO / "deploy"
UNIT = DEPLOY / "systemd" / "fabtop-export@.service"


def test_promtool_checks_the_scrape_config_and_its_rules() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        skip_or_fail("promtool not installed (apt-get install prometheus)")
        return
    run = subprocess.run(
        [promtool, "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "rules found" in run.stdout  # the rule file it names was found and checked


def test_victoria_metrics_takes_the_same_scrape_config(tmp_path: Path) -> None:
    """VictoriaMetrics as the store: the same file, the fields it has no use for (rules,
    evaluation) ignored as docs/PROMETHEUS.md says (-promscrape.config.strictParse=false)."""
    vm = shutil.which("victoria-metrics")
    if vm is None:
        skip_or_fail("victoria-metrics not installed (apt-get install victoria-metrics)")
        return
    run = subprocess.run(
        [
            vm,
            f"-promscrape.config={DEPLOY / 'prometheus' / 'prometheus.yml'}",
            "-promscrape.config.strictParse=false",
            "-promscrape.config.dryRun",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=30,
    )
    assert run.returncode == 0 and "is ok" in run.stderr, run.stderr[-2000:]


def test_systemd_verifies_the_shard_unit(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        # A machine without systemd (a CI container) has no use for the unit: a skip even
        # in CI, by the word; wherever systemd-analyze is, it runs.
        pytest.skip("systemd-analyze not installed (a machine without systemd)")
    # One instance of the template, with the command where this checkout installed it:
    # verify checks that the command is there and runs, so it is this fabtop's.
    fabtop = shutil.which("fabtop", path=str(Path(REPO / ".venv" / "bin")))
    if fabtop is None:
        skip_or_fail("no .venv/bin/fabtop (make test installs it)")
        return
    unit = tmp_path / "fabtop-export@a.service"
    unit.write_text(UNIT.read_text().replace("/opt/fabtop/.venv/bin/fabtop", fabtop))
    run = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True)
    # A misspelt key is only a warning to systemd: any line at all is a failure here.
    assert run.returncode == 0 and not (run.stdout + run.stderr).strip(), run.stderr


def test_the_unit_runs_a_shard_of_its_config_as_fabtop_parses_it() -> None:
    """The unit's command line, with instance "a" and a.env, is one fabtop accepts, and the
    example shard config loads (its hosts, its SSH key and known_hosts)."""
    line = next(x for x in UNIT.read_text().splitlines() if x.startswith("ExecStart="))
    env = dict(
        x.split("=", 1)
        for x in (DEPLOY / "systemd" / "a.env").read_text().splitlines()
        if x and not x.startswith("#")
    )
    argv = shlex.split(re.sub(r"\$\{(\w+)\}", lambda m: env[m[1]], line.removeprefix("ExecStart=")))
    argv = [a.replace("/etc/fabtop/shards/%i", str(DEPLOY / "systemd" / "a")) for a in argv]
    argv = [a.replace("%i", "a") for a in argv]
    cmd, ns, _ = parse(argv[1:])
    assert (cmd, ns.shard, ns.listen) == ("export", "a", "0.0.0.0:9877")
    cfg = load_config(ns.config)
    assert len(cfg.hosts) == 64 and cfg.known_hosts == "/etc/fabtop/ssh/known_hosts"
