"""``fabtop test serving`` on the namespace fabric, against a real /metrics server.

h1 runs a small inference stand-in (tests/testbed/serving_server.py, prometheus_client
with vLLM's metric names) whose tokens are the bytes its peer on h2 manages to deliver
over h2's shaped uplink (tc tbf). The plan's incast (h2, h3 -> h1) and bidir (h1 <-> h2)
compete for that uplink, so the token rate fabtop scrapes falls for real while they run,
and comes back when they end; the server's port counters say why (what it received).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.testbed.netns import Testbed, bed_for_test

REPO = Path(__file__).resolve().parents[2]
SERVER = REPO / "tests" / "testbed" / "serving_server.py"
SHAPED_MBIT = 220
METRICS_PORT = 8000
FEED_PORT = 7000
TOOLS = ("iperf3", "sockperf")


@pytest.fixture(scope="module")
def bed() -> Iterator[Testbed]:
    with bed_for_test(3) as b:
        for h in b.hosts:
            b.rate_limit(h.name, SHAPED_MBIT)
        h1 = b.host("h1")
        data = f"{h1.data_ip}:{FEED_PORT}"
        procs = [
            b.popen("h1", sys.executable, str(SERVER), "serve", f"127.0.0.1:{METRICS_PORT}", data),
            b.popen("h2", sys.executable, str(SERVER), "feed", data),
        ]
        try:
            yield b
        finally:
            for p in procs:
                p.kill()
                p.wait(timeout=5)


@pytest.fixture(scope="module")
def config(bed: Testbed, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bed's config: the data links on rail 0, and h1's server's /metrics."""
    url = f"http://127.0.0.1:{METRICS_PORT}/metrics"
    text = bed.toml().replace("[[host]]", "[[host]]\nrails = { eth0 = 0 }")
    text = text.replace('name = "h1"', f'name = "h1"\ninference = ["{url}"]')
    path = tmp_path_factory.mktemp("serving") / "fabtop.toml"
    path.write_text(text)
    return path


def _fabtop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1"},
    )


def _left(bed: Testbed) -> list[str]:
    return [
        f"{ns}: {' '.join(argv)}" for ns, argv in bed.processes() if Path(argv[0]).name in TOOLS
    ]


def test_serving_is_refused_without_allow_busy(bed: Testbed, config: Path) -> None:
    r = _fabtop("test", "serving", "-c", str(config), "--seconds", "2")
    assert r.returncode == 2, r.stdout + r.stderr
    assert (
        "fabtop test: refused: serving loads the fabric beside a live inference server on "
        "purpose" in r.stderr
    )
    assert "--allow-busy to run it" in r.stderr
    assert r.stdout == "" and _left(bed) == []


def test_the_token_rate_falls_beside_the_loads_and_comes_back(
    bed: Testbed, config: Path, tmp_path: Path
) -> None:
    report = tmp_path / "serving.json"
    r = _fabtop(
        "test", "serving", "-c", str(config), "--allow-busy", "--seconds", "6", "-o", str(report)
    )
    out = r.stdout + r.stderr
    # The loads' impact is a warning where it passes the mark, never a failure.
    assert r.returncode in (0, 1), out
    # Said before anything ran: which server, which windows and loads, what it does.
    assert "fabtop test serving: h1's inference server read over 4 windows of about 6 s" in out
    assert "beside an incast into h1 from h2,h3 on rail 0, beside bidir with h2 on rail 0" in out
    doc = json.loads(report.read_text())
    assert doc["format"] == "fabtop.test/1" and doc["plan"] == "serving"
    steps: dict[str, dict[str, Any]] = {s["window"]: s for s in doc["steps"]}
    assert list(steps) == ["baseline", "incast", "bidir", "after"]
    base, after = steps["baseline"]["figures"], steps["after"]["figures"]
    # The feed's 220 Mbit/s is about 1,700 tokens/s.
    assert 1000 < base["tokens_per_s"] < 2000, base
    assert base["itl_p99_s"] is not None and base["ttft_p99_s"] is not None
    for name in ("incast", "bidir"):
        s = steps[name]
        f = s["figures"]
        assert s["engine"] == "iperf3", (name, s)
        # The load takes part of h2's shaped uplink from the feed (a quarter to a half:
        # TCP's share between the feed and iperf3's new flow), while the windows without
        # a load agree to within a few percent.
        assert f["token_ratio"] < 0.9, (name, f)
        assert s["status"] == ("warn" if f["token_ratio"] < 0.8 else "pass"), (name, s)
        assert f["load_gbps"] > 0.05, (name, f)
        assert any(n.startswith("its ports: ") for n in s["notes"]), s["notes"]
        assert s["evidence"] is not None and s["ports"], s
    # The counters that explain it: beside the incast h1 received the incast's bytes as
    # well as the feed's (both senders' shaped uplinks), twice its baseline.
    inc, bidir = steps["incast"]["figures"], steps["bidir"]["figures"]
    assert inc["server_rx_gbps"] > 1.5 * base["server_rx_gbps"], (inc, base)
    # Beside the bidir it also sent iperf3's other direction to h2.
    assert bidir["server_tx_gbps"] > base["server_tx_gbps"] + 0.05, (bidir, base)
    # Back near its baseline once the loads ended.
    assert steps["after"]["status"] == "pass", steps["after"]
    assert 0.85 < after["token_ratio"] < 1.15, after
    assert _left(bed) == []
