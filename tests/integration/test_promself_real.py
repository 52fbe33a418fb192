"""fabtop's own series read back through a real Prometheus (issue 31 item 2).

One real ``fabtop export --demo`` shard, scraped each second by one real Prometheus per
module, whose data directory starts with an hour of backfilled history for node1
(``promtool tsdb create-blocks-from openmetrics``): never made by waiting. The demo is
deterministic (seed 0, frames on whole-second ticks), so what comes back is compared
value by value with the demo's own state at the tick the shard had read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from fabtop.config import Config
from fabtop.core.state import FabricState
from fabtop.run.compose import fabric_state
from fabtop.run.demo import demo_state
from fabtop.run.promsource import PrometheusSource
from fabtop.run.snapshot import build
from tests.conftest import REPO, skip_or_fail
from tests.integration.sshd import free_port
from tests.testbed.prometheus import prometheus, query, wait_for
from tests.testbed.victoria import flushed, victoria
from tui.main import main

LINK = "enp65s0f0np0"
STEP_S = 15  # the backfill's points
RX_PER_S = 1e9  # node1's backfilled rx_bytes rate, bytes per second


@dataclass
class Shard:
    url: str
    backfill_end: float  # unix s of the last backfilled point
    instance: str  # the shard's own address (host:port)


def _backfill(data: Path, instance: str, end: int) -> None:
    """An hour of node1's rx_bytes (1 GB/s) before ``end``, as the shard would have served."""
    promtool = shutil.which("promtool")
    if promtool is None:
        skip_or_fail("promtool not installed (apt-get install prometheus)")
        raise AssertionError  # unreachable
    target = f'job="fabtop",instance="{instance}",host="node1"'
    times = range(end - 3600, end + 1, STEP_S)
    lines = ["# TYPE fabtop_host_up gauge"]
    lines += [f"fabtop_host_up{{{target}}} 1 {t}" for t in times]
    lines += ["# TYPE fabtop_link_rx_bytes counter"]
    lines += [
        f'fabtop_link_rx_bytes_total{{{target},link="{LINK}"}} {(t - times[0]) * RX_PER_S:.0f} {t}'
        for t in times
    ]
    src = data.parent / "backfill.om"
    src.write_text("\n".join(lines) + "\n# EOF\n")
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(src), str(data)],
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def shard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shard]:
    tmp = tmp_path_factory.mktemp("promself")
    port = free_port()
    instance = f"127.0.0.1:{port}"
    end = int(time.time()) - 600  # backfilled blocks end before the live head begins
    data = tmp / "data"
    _backfill(data, instance, end)
    with contextlib.ExitStack() as stack:
        log = stack.enter_context((tmp / "export.log").open("wb"))
        export = subprocess.Popen(
            [sys.executable, "-m", "tui", "export", "--demo", "--listen", instance],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        stack.callback(export.wait, 20)
        stack.callback(export.terminate)
        url = stack.enter_context(prometheus(tmp, {"fabtop": [instance]}, data=data))
        wait_for("the shard's 7 hosts", lambda: len(query(url, "fabtop_link_up")) > 20)
        yield Shard(url, float(end), instance)


def _frames(url: str) -> dict[str, int]:
    return {
        r["metric"]["host"]: int(r["value"][1])  # type: ignore[index]
        for r in query(url, "fabtop_host_frames_total")
    }


def _demo_at(frames: int) -> FabricState:
    """The demo's own state at the tick a shard that applied ``frames`` frames had read
    (its first frame is the tick after its start)."""
    state, _, _ = demo_state(until_s=float(frames), history_s=1.0)
    return state


def _same_counters(got: FabricState | dict[str, Any], want: FabricState) -> int:
    """Every link's normalized counters equal the demo's; how many were compared."""
    n = 0
    for name, hs in want.hosts.items():
        assert hs.sample is not None
        for lid, link in hs.sample.links.items():
            if isinstance(got, dict):
                back = got[name][lid]
                expect: dict[str, Any] = {
                    str(k): ({str(p): x for p, x in v.items()} if isinstance(v, dict) else v)
                    for k, v in link.metrics.items()
                }
            else:
                g = got.hosts[name].sample
                assert g is not None
                back, expect = dict(g.links[lid].metrics), dict(link.metrics)
            assert back == expect, (name, lid)
            n += len(back)
    return n


def test_the_dashboard_state_is_the_demos_value_by_value_with_an_hour_of_history(
    shard: Shard,
) -> None:
    src = PrometheusSource(shard.url, interval=1.0)
    src.state = st = fabric_state(Config(hosts=[], interval=1.0))
    before = _frames(shard.url)
    asyncio.run(src.poll_once())  # the backfill, then the latest scrape
    frames = _frames(shard.url)
    assert len(set(frames.values())) == 1  # one shard: its hosts' frames in step
    # the scrape it read is the one before or after the poll (a scrape may come between)
    ticks = {*before.values(), *frames.values()}
    assert sorted(st.hosts) == sorted(_demo_at(min(ticks)).hosts)
    assert any(_matches(st, _demo_at(k)) for k in sorted(ticks)), ticks
    # one more scrape: rates by the rate engine, over one scrape interval
    wait_for("the next scrape", lambda: _frames(shard.url) != frames)
    asyncio.run(src.poll_once())
    hs = st.hosts["node3"]
    assert hs.rates is not None
    rate = hs.rates.links[LINK].rates["rx_bytes_per_s"]
    assert isinstance(rate, float) and rate > 0
    # the timeline shows the backfilled hour at once, at its 15 s steps
    series = st.history.get(("node1", LINK, "rx_bps"))
    assert series is not None
    ts, vs = series.points(7200.0)
    old = [v for t, v in zip(ts, vs, strict=True) if t <= shard.backfill_end]
    # (the last hour: the backfill's 50 minutes before the 10 the live data would fill)
    assert ts[0] < shard.backfill_end - 2900 and len(old) >= 190, (ts[0], len(old))
    assert old == [pytest.approx(RX_PER_S * 8)] * len(old)
    note = next(f for f in st.findings if f.rule == "prometheus_readback")
    assert "the scrape interval" in note.summary and "history backfilled 60 min" in note.summary


def test_snapshot_from_prometheus_now_and_at_a_past_instant_and_their_diff(
    shard: Shard, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["snapshot", "--from-prometheus", shard.url]) == 0
    doc = json.loads(capsys.readouterr().out)
    got = {h["name"]: {ln["id"]: ln["metrics"] for ln in h["links"]} for h in doc["hosts"]}
    # the shard's tick at the instant the snapshot read (taken_at is whole seconds:
    # within one scrape interval either side)
    ticks = {
        int(r["value"][1])  # type: ignore[index]
        for dt in (-1.0, 0.0, 1.0)
        for r in query(shard.url, 'fabtop_host_frames_total{host="node1"}', at=_taken(doc) + dt)
    }
    assert sorted(got) == sorted(_demo_at(min(ticks)).hosts)
    tick = next((k for k in sorted(ticks) if _matches(got, _demo_at(k))), None)
    assert tick is not None, ticks
    # and every fact a user compares, as the direct snapshot of that tick has it
    assert _same_facts(doc, build(_demo_at(tick), 1.0)) > 60
    # a past instant: the backfilled hour, its two scrapes before --at
    at = shard.backfill_end - 1800
    paths = []
    for n, when in enumerate((at, at + 600)):
        out = tmp_path / f"at{n}.json"
        assert (
            main(
                ["snapshot", "--from-prometheus", shard.url, "--at", f"{when:.0f}", "-o", str(out)]
            )
            == 0
        )
        paths.append(out)
    past = json.loads(paths[0].read_text())
    (node1,) = past["hosts"]
    (link,) = node1["links"]
    assert _taken(past) == at
    assert link["metrics"]["rx_bytes"] == (at - (shard.backfill_end - 3600)) * RX_PER_S
    assert link["rates"]["rx_bytes_per_s"] == pytest.approx(RX_PER_S)
    capsys.readouterr()
    assert main(["diff", str(paths[0]), str(paths[1]), "--json"]) in (0, 1)
    rows = json.loads(capsys.readouterr().out)
    assert f"{600 * RX_PER_S:.0f}" in json.dumps(rows).replace(".0", "")
    # a bad time: one line naming it
    with pytest.raises(SystemExit) as bad:
        main(["snapshot", "--from-prometheus", shard.url, "--at", "yesterday"])
    assert bad.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "'yesterday' is not a time" in line


def _matches(got: FabricState | dict[str, Any], want: FabricState) -> bool:
    """Every counter of every link the same (several hundred of them)."""
    try:
        return _same_counters(got, want) > 300
    except AssertionError:
        return False


# What a link and a GPU are, beside their counters (which _same_counters compares).
LINK_FACTS = ("state", "rate_gbps", "mtu", "driver", "driver_version", "firmware", "pcie", "kind")
GPU_FACTS = ("name", "uuid", "bus_id", "power_limit_w", "mem_clock_mhz", "pcie_gen", "pcie_width")


def _same_facts(got: dict[str, Any], want: dict[str, Any]) -> int:
    """Every fact of every host in ``got`` (a read-back snapshot) as ``want`` (the direct
    one) has it; how many were compared. Lists the exporter serves in its own order (cable
    ends, hosts in a coverage line) are compared as sets."""
    n = 0
    by = {h["name"]: h for h in got["hosts"]}
    for w in want["hosts"]:
        g = by[w["name"]]
        assert g["versions"] == w["versions"], w["name"]
        tb, wtb = g["thunderbolt"], w["thunderbolt"]
        assert (tb is None) == (wtb is None), w["name"]
        if tb is not None:
            key = lambda p: str(p["port"])  # noqa: E731
            assert sorted(tb.pop("peers"), key=key) == sorted(wtb.pop("peers"), key=key)
            assert tb == wtb, w["name"]
        links = {ln["id"]: ln for ln in g["links"]}
        for wl in w["links"]:
            gl = links[wl["id"]]
            assert [gl[f] for f in LINK_FACTS] == [wl[f] for f in LINK_FACTS], wl["id"]
            q, wq = gl["qos"], wl["qos"]
            if wq is not None:  # all of it but ETS (no series carries it; no screen shows it)
                assert {**q, "ets": None} == {**wq, "ets": None}, wl["id"]
            n += len(LINK_FACTS) + 1
        for gg, wg in zip(g["gpus"], w["gpus"], strict=True):
            assert [gg[f] for f in GPU_FACTS] == [wg[f] for f in GPU_FACTS], w["name"]
            n += len(GPU_FACTS)
    cables = lambda d: sorted(c["text"] for c in d["thunderbolt_cables"])  # noqa: E731
    assert cables(got) == cables(want) and cables(want)
    # the shards' own coverage lines: "unverified on mac1, mac2" included
    gaps, wgaps = got["coverage"]["gaps"], want["coverage"]["gaps"]
    assert (
        [x for x in gaps if x.startswith("unverified")]
        == [x for x in wgaps if x.startswith("unverified")]
        != []
    )
    assert sorted(x.split(" on ")[0] for x in gaps) == sorted(x.split(" on ")[0] for x in wgaps)
    return n


def _taken(doc: dict[str, Any]) -> float:
    return datetime.fromisoformat(doc["taken_at"]).timestamp()


def test_export_from_a_prometheus_holding_fabtop_series_refuses_the_loop(
    shard: Shard, capsys: pytest.CaptureFixture[str]
) -> None:
    listen = f"127.0.0.1:{free_port()}"
    assert main(["export", "--from-prometheus", shard.url, "--listen", listen]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "holds fabtop's own series (shards fabtop/127.0.0.1:" in line
    assert "feed them back" in line


def test_doctor_from_prometheus_judges_the_shards_hosts(
    shard: Shard, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    status = main(["doctor", "--from-prometheus", shard.url, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert sorted(doc["coverage"]["reporting"]) == sorted(_frames(shard.url))
    rules = {f["rule"] for f in doc["findings"]}
    assert "prometheus_readback" in rules  # how this view differs, said
    worst = max({"info": 0, "warning": 1, "critical": 2}[f["severity"]] for f in doc["findings"])
    assert status == worst


def test_the_same_read_back_through_victoriametrics(shard: Shard, tmp_path: Path) -> None:
    # VictoriaMetrics speaks the same query API: the shard's series read back through it
    # give the same hosts and, at a tick it holds, the demo's counters value by value.
    with victoria(tmp_path, {"fabtop": [shard.instance]}) as vm:
        wait_for(
            "the shard's hosts in VictoriaMetrics",
            lambda: len(query(flushed(vm), "fabtop_link_up")) > 20,
        )
        src = PrometheusSource(vm, interval=1.0)
        src.state = st = fabric_state(Config(hosts=[], interval=1.0))
        # (a first query may come before the whole scrape is searchable: poll as the
        # dashboard would until its hosts come)
        for _ in range(100):
            before = _frames(flushed(vm))
            asyncio.run(src.poll_once())
            after = _frames(vm)
            if len(st.hosts) >= 7:
                break
            time.sleep(0.1)
    ticks = range(min({*before.values(), *after.values()}) - 2, max(after.values()) + 1)
    assert sorted(st.hosts) == sorted(_demo_at(ticks[-1]).hosts)
    assert any(_matches(st, _demo_at(k)) for k in ticks), list(ticks)
