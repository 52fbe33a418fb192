"""Counter deltas: resets and missing counters, significance order, snapshot and 'r' parity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectors.samples import LinkSample
from fabtop.commands.diff import DiffError, diff_docs, elapsed_s, load_point, render_text
from fabtop.core.deltas import counts_since, metric_delta


def _doc(clock_s: float, metrics: dict[str, object]) -> dict[str, object]:
    return {
        "schema": "fabtop.snapshot/1",
        "hosts": [
            {
                "name": "n1",
                "clock_ns": int(clock_s * 1e9),
                "links": [{"id": "mlx5_0/1", "metrics": metrics}],
            }
        ],
    }


def test_reset_and_missing_counters_have_no_delta() -> None:
    assert metric_delta(150, 100) == 50
    assert metric_delta(10, 100) is None  # went backwards: reset, not -90
    assert metric_delta(None, 100) is None and metric_delta(5, None) is None
    assert metric_delta({"3": 12, "4": 1}, {"3": 2, "4": 5}) == {3: 10.0}


def test_errors_come_before_pauses_before_bytes() -> None:
    a = _doc(100.0, {"rx_bytes": 0, "rx_phy_errors": 5, "rx_pause": {"3": 0}, "rx_discards": 1})
    b = _doc(
        110.0, {"rx_bytes": 10**12, "rx_phy_errors": 6, "rx_pause": {"3": 5000}, "rx_discards": 1}
    )
    rows = diff_docs(a, b)
    assert [(r.metric, r.priority) for r in rows] == [
        ("rx_phy_errors", None),
        ("rx_pause", 3),
        ("rx_bytes", None),
    ]
    assert rows[1].rate_per_s == pytest.approx(500.0)
    assert elapsed_s(a, b) == pytest.approx(10.0)
    text = render_text(rows, 10.0)
    assert "rx_phy_errors" in text.splitlines()[2] and "1.00T" in text


def test_dashboard_baseline_and_diff_agree() -> None:
    base = LinkSample(id="l", metrics={"rx_pause": {3: 10}, "rx_pause_global": 1})
    cur = LinkSample(id="l", metrics={"rx_pause": {3: 25}, "rx_pause_global": 3})
    assert counts_since(cur, base, ("rx_pause", "rx_pause_global")) == 17.0
    rows = diff_docs(
        _doc(0, {"rx_pause": {"3": 10}, "rx_pause_global": 1}),
        _doc(1, {"rx_pause": {"3": 25}, "rx_pause_global": 3}),
    )
    assert sum(r.delta for r in rows) == 17.0
    cur.metrics["rx_pause_global"] = 0
    assert counts_since(cur, base, ("rx_pause", "rx_pause_global")) is None


def test_load_point_errors_name_the_input(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"schema": "other"}))
    with pytest.raises(DiffError, match=r"x\.json: not a fabtop\.snapshot/2"):
        load_point(str(p))
    with pytest.raises(DiffError, match="needs a time"):
        load_point(str(tmp_path / "run.fabrec"))
    with pytest.raises(DiffError, match="not a number"):
        load_point(str(tmp_path / "run.fabrec") + "@soon")


def test_a_side_without_data_is_said_not_no_counter_changed(tmp_path: Path) -> None:
    from fabtop.commands.diff import diff_command

    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    a.write_text(json.dumps(_doc(100.0, {"rx_bytes": 5})))
    dead = {
        "schema": "fabtop.snapshot/1",
        "hosts": [
            {
                "name": "n1",
                "reachable": False,
                "links": [],
                "clock_ns": None,
                "error": "n1 (root@gpu1): no answer within 30 s",
            }
        ],
    }
    b.write_text(json.dumps(dead))
    out = diff_command(str(a), str(b))
    assert "no counter changed" not in out
    assert out.splitlines() == [
        f"n1: no data in B ({b}): n1 (root@gpu1): no answer within 30 s",
        "counter deltas: nothing to compare",
    ]
    doc = json.loads(diff_command(str(a), str(b), as_json=True))
    assert doc["no_data"] == [
        {
            "host": "n1",
            "side": "B",
            "source": str(b),
            "why": "n1 (root@gpu1): no answer within 30 s",
        }
    ]
    # A host only one side has, next to one that did not change: both said.
    two = _doc(100.0, {"rx_bytes": 5})
    two["hosts"].append({"name": "n2", "links": [{"id": "x", "metrics": {"rx_bytes": 1}}]})  # type: ignore[attr-defined]
    a.write_text(json.dumps(two))
    b.write_text(json.dumps(_doc(110.0, {"rx_bytes": 5})))
    assert diff_command(str(a), str(b)).splitlines() == [
        f"n2: no data in B ({b}): host not in it",
        "counter deltas over 10.0 s: no counter changed on the other hosts",
    ]


def record_demo(path: Path, seconds: int = 12) -> Path:
    """A demo recording of ``seconds`` s made without waiting: one frame per host and one
    rules run a second, written as the live session writes them."""
    from collectors.frames import FrameDecoder
    from fabtop.run.demo import ManualClock, demo_config
    from fabtop.run.record import Recorder
    from fabtop.run.session import MetricsReading
    from fabtop.sim import demo_fabric

    fab, clock = demo_fabric(), ManualClock(0.0)
    rec = Recorder(path, demo_config(), clock=clock).open()
    decoders = {name: FrameDecoder() for name in fab.hosts}
    for t in range(seconds + 1):
        clock.t = float(t)
        for name, host in fab.hosts.items():
            for frame in decoders[name].feed(host.frame(float(t)).encode()):
                rec.frame(name, frame)
            if host.cfg.inference_url:
                rec.metrics(
                    name, [MetricsReading(host.cfg.inference_url, 200, host.metrics_text())]
                )
        rec.evaluated()
    rec.close()
    return path


def test_a_time_past_the_recordings_end_is_an_error_naming_its_length(tmp_path: Path) -> None:
    from fabtop.commands.diff import diff_command

    run = str(record_demo(tmp_path / "run.fabrec"))
    with pytest.raises(DiffError) as e:
        diff_command(f"{run}@999", f"{run}@5")
    assert str(e.value) == f"{run}@999: past the end: {run} holds 12.0 s"
    with pytest.raises(DiffError, match="past the end"):
        diff_command(f"{run}@2", f"{run}@12.5")
    out = diff_command(f"{run}@2", f"{run}@12")  # the very end is still in it
    assert out.startswith("counter deltas over 10.0 s\n")


def test_b_before_a_is_an_error_not_a_negative_diff(tmp_path: Path) -> None:
    from fabtop.commands.diff import diff_command

    run = str(record_demo(tmp_path / "run.fabrec"))
    with pytest.raises(DiffError, match=r"B \(.*@3\) is before A \(.*@9\)"):
        diff_command(f"{run}@9", f"{run}@3")
    # Snapshot files the wrong way round: the hosts' clocks say which came first.
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_doc(110.0, {"rx_bytes": 50})))
    b.write_text(json.dumps(_doc(100.0, {"rx_bytes": 5})))
    with pytest.raises(DiffError, match=r"is 10\.0 s before A"):
        diff_command(str(a), str(b))


def test_diff_past_the_end_is_one_line_and_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.conftest import REPO

    run = str(record_demo(tmp_path / "run.fabrec"))
    proc = subprocess.run(
        [sys.executable, "-m", "tui", "diff", f"{run}@999", f"{run}@5"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"fabtop: {run}@999: past the end: {run} holds 12.0 s"]
