"""sockperf ping-pong summaries and ``--full-log`` CSV, on captures from the test bed
(sockperf 3.7, Debian bookworm); real loopback runs are in
tests/integration/test_engines_loopback.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.parsers.sockperf import MAX_SAMPLES, parse_sockperf
from collectors.text import has_control

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sockperf"


def _read(name: str) -> str:
    return (CAPTURES / name).read_text()


def test_every_capture_is_documented() -> None:
    sources = (CAPTURES / "SOURCES.md").read_text()
    for path in CAPTURES.iterdir():
        if path.name != "SOURCES.md":
            assert f"`{path.name}`" in sources, path.name


def test_summary() -> None:
    r = parse_sockperf(_read("ping_pong_3.7_tcp_loopback_testbed.txt"))
    assert r.ok and r.warnings == [] and r.version == "3.7-no.git"
    assert (r.sent, r.received, r.dropped, r.duplicated, r.out_of_order) == (549, 549, 0, 0, 0)
    assert (r.avg_us, r.stdev_us, r.min_us, r.max_us) == (38.017, 61.896, 5.883, 1002.078)
    assert r.percentiles_us["50.000"] == 33.855
    assert r.percentiles_us["99.000"] == 136.502
    assert r.percentiles_us["99.900"] == 773.403
    assert r.samples_us == []


def test_full_log_has_every_sample() -> None:
    text = _read("full_log_3.7_tcp_loopback_testbed.csv")
    r = parse_sockperf(text)
    assert r.ok and r.warnings == []
    assert len(r.samples_us) == r.received == 549
    assert r.samples_us[0] == float(text.split("latency(usec)\n")[1].split("\n")[0].split(",")[3])
    # the summary's extremes, to its rounding
    assert max(r.samples_us) == pytest.approx(r.max_us, abs=0.002)
    assert min(r.samples_us) == pytest.approx(r.min_us, abs=0.002)


@pytest.mark.parametrize(
    ("name", "line"),
    [
        (
            "ping_pong_3.7_tcp_refused_testbed.txt",
            "sockperf: ERROR: Can`t connect socket (errno=111 Connection refused)",
        ),
        (
            "ping_pong_3.7_udp_no_server_testbed.txt",
            "sockperf: No messages were received from the server. Is the server down?",
        ),
    ],
)
def test_failures_are_the_tools_line(name: str, line: str) -> None:
    """sockperf 3.7 exits 0 after both: its text is what tells the run failed."""
    r = parse_sockperf(_read(name))
    assert not r.ok and r.error == line
    assert not has_control(r.error)


def test_truncated_log_keeps_the_samples_it_has() -> None:
    text = _read("full_log_3.7_tcp_loopback_testbed.csv")
    r = parse_sockperf(text[: len(text) - 3000])
    assert 400 < len(r.samples_us) < 549
    assert len(r.warnings) <= 1  # the line cut in the middle, when it is unreadable


@pytest.mark.parametrize(
    "bad", ["", "\x1b[31m" * 1000, "packet, txTime(sec), rxTime(sec), latency(usec)\nx\n"]
)
def test_garbage_is_one_line(bad: str) -> None:
    r = parse_sockperf(bad)
    assert not r.ok and r.error is not None and "\n" not in r.error


def test_samples_are_bounded() -> None:
    text = "packet, txTime(sec), rxTime(sec), latency(usec)\n" + "1, 0.1, 0.2, 3.5\n" * (
        MAX_SAMPLES + 3
    )
    r = parse_sockperf(text)
    assert len(r.samples_us) == MAX_SAMPLES
    assert r.warnings == [f"more than {MAX_SAMPLES} samples: the rest were left out"]


def test_summary_of_3_10_with_more_statistics() -> None:
    """3.10's avg-latency line adds mean-ad, ..., std-error (not an error) inside."""
    r = parse_sockperf(_read("ping_pong_3.10_tcp_i40e_public.txt"))
    assert r.ok and r.version == "3.10-no.git"
    assert (r.avg_us, r.stdev_us) == (24.571, 93.297)
    assert (r.received, r.max_us, r.min_us) == (2429473, 103294.331, 12.220)
    assert r.percentiles_us["99.900"] == 35.910
