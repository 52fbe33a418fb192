"""Snapshot rendering: JSON round-trips, CSV rows, Prometheus text parses with a real parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fabtop.config import HostConfig
from fabtop.core.state import FabricState
from fabtop.run import snapshot
from fabtop.sim import demo_fabric


@pytest.fixture(scope="module")
def doc() -> dict:  # type: ignore[type-arg]
    fab = demo_fabric(slow_every_s=0.0)
    state = FabricState([HostConfig(name=n) for n in fab.hosts])
    from collectors.frames import FrameDecoder

    for t in (10.0, 11.0):
        for name, host in fab.hosts.items():
            (frame,) = FrameDecoder().feed(host.frame(t).encode())
            state.apply_frame(name, frame)
    return snapshot.build(state, 1.0)


def test_json_is_strict_and_keeps_priorities_as_keys(doc: dict) -> None:  # type: ignore[type-arg]
    text = snapshot.render(doc, "json")
    back = json.loads(text)
    assert back["schema"] == "fabtop.snapshot/1"
    link = next(x for x in back["hosts"][0]["links"] if x["kind"] == "roce")
    assert set(link["metrics"]["rx_bytes_prio"]) == {str(p) for p in range(8)}
    assert link["rates"]["rx_bps"] == pytest.approx(link["rates"]["rx_bytes_per_s"] * 8)
    assert 0.9 < link["rates"]["rdma_share"] <= 1.0


def test_prometheus_text_parses_and_has_bounded_labels(doc: dict) -> None:  # type: ignore[type-arg]
    text = snapshot.render(doc, "prom")
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    assert "fabtop_host_up" in fams
    assert all(s.value == 1.0 for s in fams["fabtop_host_up"].samples)
    pauses = fams["fabtop_link_rx_pause"].samples
    assert {s.labels["priority"] for s in pauses} == {"3"}
    for fam in fams.values():
        for s in fam.samples:
            assert set(s.labels) <= {"host", "link", "priority"}


def test_csv_has_a_row_per_counter(doc: dict) -> None:  # type: ignore[type-arg]
    rows = snapshot.render(doc, "csv").splitlines()
    assert rows[0] == "host,link,kind,name,priority,value,rate_per_s"
    assert any(",raw:ethtool,rx_prio3_pause," in r for r in rows)
    assert any(",metric,rx_pause,3," in r for r in rows)


def test_write_atomic_replaces_whole_file(tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    p.write_text("old")
    snapshot.write_atomic(p, "new\n")
    assert p.read_text() == "new\n" and [x.name for x in tmp_path.iterdir()] == ["s.json"]
    with pytest.raises(snapshot.SnapshotError, match="No such file"):
        snapshot.write_atomic(tmp_path / "missing" / "s.json", "x")


def test_write_atomic_gives_the_usual_file_mode(tmp_path: Path) -> None:
    import os

    old = os.umask(0o022)
    try:
        p = tmp_path / "s.json"
        snapshot.write_atomic(p, "{}\n")
        assert p.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
    finally:
        os.umask(old)
