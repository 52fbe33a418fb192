"""``iperf3 -J`` on the captures in tests/fixtures/iperf3 (3.9 public, 3.12 from the test
bed); real loopback runs are in tests/integration/test_engines_loopback.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectors.parsers.iperf3 import MAX_INTERVALS, parse_iperf3

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "iperf3"


def _read(name: str) -> str:
    return (CAPTURES / name).read_text()


def test_every_capture_is_documented() -> None:
    sources = (CAPTURES / "SOURCES.md").read_text()
    for path in CAPTURES.glob("*.json"):
        assert f"`{path.name}`" in sources, path.name


def test_client_3_12_loopback() -> None:
    r = parse_iperf3(_read("client_3.12_tcp_loopback_testbed.json"))
    assert r.ok and r.warnings == []
    assert (r.version, r.role, r.protocol, r.streams, r.duration_s) == (
        "3.12",
        "client",
        "TCP",
        1,
        1,
    )
    assert r.sent is not None and r.received is not None
    assert r.sent.retransmits == 63
    assert r.received.bytes == 2979266560
    assert r.received.bits_per_second == pytest.approx(23829557205.0166)
    assert len(r.intervals) == 2 and r.intervals[0].sum.retransmits == 26
    assert r.cpu_host_percent == pytest.approx(94.234, abs=1e-3)
    assert r.cpu_remote_percent == pytest.approx(38.626, abs=1e-3)


def test_server_3_12_loopback() -> None:
    r = parse_iperf3(_read("server_3.12_tcp_loopback_testbed.json"))
    assert r.ok and r.role == "server"
    assert r.received is not None and r.received.bytes == 2979266560
    assert r.sent is not None and r.sent.bytes == 0  # a server receives


def test_client_3_9_public_capture() -> None:
    r = parse_iperf3(_read("client_3.9_tcp_bytes_aws.json"))
    assert r.ok and (r.version, r.role) == ("3.9", "client")
    assert r.sent is not None and r.sent.bytes == 56320 and r.sent.retransmits == 0
    assert r.received is not None and r.received.bits_per_second == pytest.approx(448537.99)


def test_the_error_key_is_the_line() -> None:
    r = parse_iperf3(_read("client_3.12_refused_testbed.json"))
    assert not r.ok
    assert r.error == "iperf3: unable to connect to server: Connection refused"


def test_bidir_and_udp_sums() -> None:
    doc = json.loads(_read("client_3.12_tcp_loopback_testbed.json"))
    doc["start"]["test_start"]["bidir"] = 1
    end = doc["end"]
    end["sum_sent_bidir_reverse"] = dict(end["sum_sent"], bytes=5)
    end["sum_received_bidir_reverse"] = dict(end["sum_received"], bytes=7)
    r = parse_iperf3(json.dumps(doc))
    assert r.bidir and r.sent_reverse is not None and r.received_reverse is not None
    assert (r.sent_reverse.bytes, r.received_reverse.bytes) == (5, 7)
    doc["start"]["test_start"]["protocol"] = "UDP"
    end["sum"] = {
        "seconds": 1.0,
        "bytes": 1000,
        "bits_per_second": 8000.0,
        "jitter_ms": 0.02,
        "lost_packets": 3,
        "packets": 100,
        "lost_percent": 3.0,
    }
    r = parse_iperf3(json.dumps(doc))
    assert r.udp is not None and (r.udp.lost_packets, r.udp.lost_percent) == (3, 3.0)


def test_truncated_json_is_one_line() -> None:
    text = _read("client_3.12_tcp_loopback_testbed.json")
    r = parse_iperf3(text[: len(text) // 2])
    assert not r.ok and r.error is not None and "\n" not in r.error
    assert r.error.startswith("iperf3 -J output: not JSON")


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "[]",
        "{}",
        '{"end": {"sum_received": {"bytes": -1, "bits_per_second": "x"}}}',
        "[" * 100_000,
        "1e999",
    ],
)
def test_garbage_is_one_line_and_numbers_are_checked(bad: str) -> None:
    r = parse_iperf3(bad)
    assert r.error is not None and "\n" not in r.error and len(r.error) < 300
    if r.received is not None:
        assert r.received.bytes is None and r.received.bits_per_second is None


def test_intervals_are_bounded() -> None:
    doc = json.loads(_read("client_3.12_tcp_loopback_testbed.json"))
    doc["intervals"] = doc["intervals"][:1] * (MAX_INTERVALS + 5)
    r = parse_iperf3(json.dumps(doc))
    assert len(r.intervals) == MAX_INTERVALS and r.warnings


def test_client_3_6_public_capture_without_sender_flags() -> None:
    """3.6 prints no "sender" key in its sums; a receiver that got nothing reads 0, not None."""
    r = parse_iperf3(_read("client_3.6_tcp_bytes_aws.json"))
    assert r.ok and r.version == "3.6"
    assert r.received is not None and (r.received.bytes, r.received.bits_per_second) == (0, 0.0)
