"""The launcher's arguments (what it refuses) and its trailer (how a run ended)."""

from __future__ import annotations

import pytest

from collectors.launch import LaunchError, ToolRun, _ended, launch_args, parse_launch_args


def test_the_arguments_carry_the_limit_and_the_words_as_they_are() -> None:
    argv = ["ib_write_bw", "-d", "mlx5_0", "-x", "3", "--report_gbits", "10.0.0.2"]
    assert launch_args(argv, 30) == ["limit_s=30", "--", *argv]


def test_the_hosts_tool_directories_go_before_the_tool() -> None:
    # The host's configured path (as the probe's): perftest in /usr/local/bin or
    # /opt/mellanox/bin is not on a non-login SSH session's PATH.
    argv = ["ib_write_bw", "-d", "mlx5_0"]
    got = launch_args(argv, 30, ("/opt/mellanox/bin", "/usr/local/bin"))
    assert got == ["limit_s=30", "path=/opt/mellanox/bin:/usr/local/bin", "--", *argv]


@pytest.mark.parametrize(
    "path",
    [("bin",), ("/a:/b",), ("/a b",), ("/$(id)",), ("",), ("/x\n",), ("/d",) * 33],
)
def test_a_path_the_launcher_will_not_take(path: tuple[str, ...]) -> None:
    with pytest.raises(LaunchError, match="path"):
        launch_args(["ib_write_bw"], 10, path)


@pytest.mark.parametrize(
    ("argv", "limit"),
    [
        ([], 10),
        (["/bin/sh", "-c", "id"], 10),  # a path, not a tool name on PATH
        (["ib_write_bw;reboot"], 10),
        (["iperf3", "-c", "host\nreboot"], 10),
        (["iperf3", "-c", "h\x1b[2J"], 10),
        (["iperf3", "é"], 10),
        (["iperf3", ""], 10),
        (["iperf3", "x" * 257], 10),
        (["iperf3", *["-V"] * 64], 10),
        (["iperf3"], 0),
        (["iperf3"], 3601),
        (["iperf3"], 1.5),
        (["iperf3"], True),
    ],
)
def test_what_the_launcher_will_not_take(argv: list[str], limit: int) -> None:
    with pytest.raises(LaunchError):
        launch_args(argv, limit)


def _run(out: bytes) -> ToolRun:
    return _ended("n1", ("iperf3",), out, False, 9.0)


def test_the_trailer_says_how_the_run_ended() -> None:
    ok = _run(b"line 1\nline 2\n\n@@fabtop-launch exit 0 1234\n")
    assert (ok.output, ok.status, ok.ok, ok.elapsed_s) == (b"line 1\nline 2\n", 0, True, 1.234)
    no_newline = _run(b"partial\n@@fabtop-launch exit 1 5\n")
    assert (no_newline.output, no_newline.status) == (b"partial", 1)
    late = _run(b"out\n\n@@fabtop-launch timeout 5 5001\n\n@@fabtop-launch exit 143 5004\n")
    assert (late.output, late.timed_out, late.status, late.ok) == (b"out\n", True, 143, False)
    assert late.elapsed_s == 5.004
    killed = _run(b"out\n\n@@fabtop-launch timeout 5 5001\n")
    assert killed.timed_out and killed.status is None and killed.output == b"out\n"
    gone = _run(b"@@fabtop-launch missing ib_write_bw\n")
    assert gone.missing and gone.output == b"" and not gone.ok


def test_a_tool_cannot_fake_the_trailer() -> None:
    # Marker lines the tool printed stay output; only the launcher's last lines count.
    out = b"@@fabtop-launch exit 0 1\n@@fabtop-launch exit 0 1\n\n@@fabtop-launch exit 2 10\n"
    run = _run(out)
    assert run.status == 2 and not run.ok
    assert run.output == b"@@fabtop-launch exit 0 1\n@@fabtop-launch exit 0 1\n"
    # No trailer at all (the connection went, the output was cut): no status, not ok.
    cut = _run(b"@@fabtop-launch exit 0 1\nmore")
    assert cut.status is None and not cut.ok and cut.output.endswith(b"more")


def test_the_arguments_read_back_as_they_were_given() -> None:
    # What the simulator reads of the launcher's words is what launch.sh reads.
    argv = ("iperf3", "-c", "10.0.0.2", "-J")
    words = launch_args(argv, 12, ("/opt/mellanox/bin", "/usr/local/bin"))
    assert parse_launch_args(words) == (12, ("/opt/mellanox/bin", "/usr/local/bin"), argv, None)
    assert parse_launch_args(launch_args(argv, 5)) == (5, (), argv, None)
    for bad in (
        [],
        ["--", "iperf3"],
        ["limit_s=0", "--", "iperf3"],
        ["limit_s=5", "iperf3"],
        ["limit_s=5", "path=/a/../b", "--", "iperf3"],
        ["limit_s=5", "--", "/bin/sh"],
    ):
        with pytest.raises(LaunchError):
            parse_launch_args(bad)


def test_a_kill_on_purpose_is_asked_checked_and_read_back() -> None:
    argv = ("iperf3", "-c", "10.0.0.2", "-J")
    words = launch_args(argv, 15, kill_ms=2000)
    assert words == ["limit_s=15", "kill_ms=2000", "--", *argv]
    assert parse_launch_args(words) == (15, (), argv, 2000)
    for bad in (0, -1, 15_000, 2.5, True, "2000"):
        with pytest.raises(LaunchError, match="kill_ms"):
            launch_args(argv, 15, kill_ms=bad)  # type: ignore[arg-type]
    for word in ("kill_ms=", "kill_ms=0", "kill_ms=02", "kill_ms=15000", "kill_ms=1e3"):
        with pytest.raises(LaunchError):
            parse_launch_args(["limit_s=15", word, "--", "iperf3"])
    # The kill's line comes before the exit line; the limit's may come before both.
    run = _run(b"out\n\n@@fabtop-launch killed 4065 2003\n\n@@fabtop-launch exit 137 2004\n")
    assert (run.killed_pid, run.killed_at_s, run.status, run.output) == (4065, 2.003, 137, b"out\n")
    assert not run.ok and run.elapsed_s == 2.004
    # A tool's own marker line before them stays output, and a killed line that is not
    # followed by the launcher's exit line is not the launcher's.
    faked = _run(b"@@fabtop-launch killed 1 1\nmore\n\n@@fabtop-launch exit 0 10\n")
    assert faked.killed_pid is None and faked.status == 0
    cut = _run(b"out\n@@fabtop-launch killed 4065 2003\n")
    assert cut.killed_pid is None and cut.status is None
    # A run that ended by itself before the kill: no killed line, its own status.
    assert _run(b"ok\n\n@@fabtop-launch exit 0 900\n").killed_pid is None
