"""Probe arguments (the GPU field lists the probe is sent by default, the byte caps, the
per-tick counter lists and the watchdog's thresholds) and the script that carries the
probe's files."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from collectors import probe_fast as pf
from collectors.frames import MAX_FRAME_BYTES
from collectors.normalize import IB_HW_TICK, IB_PORT_TICK
from collectors.parsers.nvidia_smi import FALLBACK_FIELDS, QUERY_FIELDS
from collectors.probe import (
    CARRIED,
    FRAME_BYTES,
    SECTION_BYTES,
    STORM_THRESHOLDS,
    ProbeArgError,
    ProbeArgs,
    build_argv,
    probe_args,
    probe_script,
    remote_command,
)
from fabtop.core.thresholds import DEFAULT_THRESHOLDS, threshold_range
from tests.conftest import REPO, skip_or_fail

COLLECTORS = REPO / "collectors"


def _word(argv: list[str], key: str) -> str:
    return next(a.partition("=")[2] for a in argv if a.startswith(f"{key}="))


def test_default_gpu_fields_are_the_parsers_lists() -> None:
    # The parser reads the columns the probe asked for: both lists come from one place.
    for argv in (build_argv(ProbeArgs()), probe_args()):
        assert _word(argv, "gpu_fields") == ",".join(QUERY_FIELDS)
        assert _word(argv, "gpu_fallback") == ",".join(FALLBACK_FIELDS)
    assert QUERY_FIELDS != FALLBACK_FIELDS


def test_byte_caps_are_sent_and_fit_the_decoder() -> None:
    argv = build_argv(ProbeArgs())
    assert int(_word(argv, "section_bytes")) == SECTION_BYTES == 8 * 1024 * 1024
    assert int(_word(argv, "frame_bytes")) == FRAME_BYTES < MAX_FRAME_BYTES
    # 100k ethtool -S counters ("     rx_prio7_buff_discard_12345: 18446744073709551615")
    assert SECTION_BYTES > 100_000 * 56


@pytest.mark.parametrize(
    "bad",
    [
        {"section_bytes": 4095},
        {"section_bytes": FRAME_BYTES + 1},
        {"frame_bytes": 65535},
        {"frame_bytes": MAX_FRAME_BYTES},
        {"frame_bytes": 100_000, "section_bytes": 200_000},
    ],
)
def test_bad_byte_caps_are_refused(bad: dict[str, int]) -> None:
    with pytest.raises(ProbeArgError):
        build_argv(replace(ProbeArgs(), **bad))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "word",
    ["section_bytes=4095", "section_bytes=0x10", "frame_bytes=16711681", "section_bytes=-1"],
)
def test_the_script_refuses_bad_caps_itself(word: str, tmp_path: Path) -> None:
    r = subprocess.run(
        ["dash", "-s", "--", word],
        input=probe_script().encode(),
        capture_output=True,
        timeout=5,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 2 and r.stdout == b"" and b"fabtop-probe: bad" in r.stderr


def test_remote_command_is_one_shell_neutral_line() -> None:
    # The login shell (bash, dash, zsh, tcsh, fish) runs it: plain words, quoted the
    # same in all of them, and `exec` so the probe keeps sshd's session leader.
    cmd = remote_command(ProbeArgs(interfaces=("eth0",)))
    assert cmd.startswith("exec sh -s -- ") and "\n" not in cmd
    assert len(cmd) < 2000


@pytest.mark.parametrize(("var", "name"), CARRIED)
def test_the_script_carries_each_file_byte_for_byte(var: str, name: str, tmp_path: Path) -> None:
    # Single-quoted on its FAB_*= line, the text the node's shell holds is the file's.
    # The last line (fab_main) swapped for a print of the variable: nothing else runs.
    head, sep, _ = probe_script().rpartition('fab_main "$@"; exit')
    assert sep
    r = subprocess.run(
        ["dash", "-s"],
        input=f'{head}printf %s "${var}"\n'.encode(),
        capture_output=True,
        timeout=5,
        cwd=tmp_path,
    )
    assert r.returncode == 0 and r.stdout == (COLLECTORS / name).read_bytes()


def test_probe_sh_alone_refuses_to_start(tmp_path: Path) -> None:
    # Without probe_script() the carried files are empty: a clear error, not an awk or
    # python3 that runs an empty program and says nothing.
    r = subprocess.run(
        ["dash", "-s", "--", "probe=sh", "max_frames=1"],
        input=(COLLECTORS / "probe.sh").read_bytes(),
        capture_output=True,
        timeout=5,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 2 and r.stdout == b""
    assert b"fabtop-probe: probe.sh alone" in r.stderr


AWKS = {
    "gawk --posix": ["gawk", "--posix"],
    "mawk": ["mawk"],
    "original-awk": ["original-awk"],
    "busybox awk": ["busybox", "awk"],
}


@pytest.mark.parametrize("awk", list(AWKS))
def test_probe_awk_is_portable_awk(awk: str) -> None:
    # The sh probe's awk (collectors/probe.awk) runs under whatever awk the node has: a
    # gawk extension or a mawk-only form fails here before it fails on a node.
    argv = AWKS[awk]
    if not shutil.which(argv[0]):
        skip_or_fail(f"{argv[0]} not installed")
    r = subprocess.run(
        [*argv, "-f", str(COLLECTORS / "probe.awk")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=5,
    )
    assert (r.returncode, r.stderr) == (0, b"")


def test_probe_awk_fits_one_argument() -> None:
    # fab_main gives it to awk as one command-line word: Linux caps one at 128 KiB.
    assert len((COLLECTORS / "probe.awk").read_bytes()) < 128 * 1024


def test_a_session_reads_per_tick_only_the_rdma_counters_a_metric_reads() -> None:
    argv = probe_args()
    assert _word(argv, "ib_hw_tick").split(",") == list(IB_HW_TICK)
    assert _word(argv, "ib_port_tick").split(",") == list(IB_PORT_TICK)
    assert "port_xmit_wait" in IB_PORT_TICK and "unicast_xmit_packets" not in IB_PORT_TICK


def test_the_watchdog_is_told_the_thresholds_and_its_own_defaults_are_theirs() -> None:
    # One set of numbers: a probe run without the words judges by the thresholds' defaults.
    assert STORM_THRESHOLDS == pf.STORM_ARGS
    own = (pf.STORM_RATIO, pf.FLAT_FRACTION, pf.FLAT_BYTES_PER_S)
    assert own == tuple(DEFAULT_THRESHOLDS[n] for n in STORM_THRESHOLDS)
    assert not any(a.startswith("storm_") for a in probe_args())
    th = {**DEFAULT_THRESHOLDS, "storm_pause_ratio": 0.9, "storm_flat_bytes_per_s": 2.5e6}
    argv = probe_args(thresholds=th)
    assert [_word(argv, n) for n in STORM_THRESHOLDS] == ["0.9", "0.02", "2500000"]
    a = pf.Args(argv)  # as the fast probe reads them
    assert (a.storm_ratio, a.flat_frac, a.flat_bytes) == (0.9, 0.02, 2.5e6)


@pytest.mark.parametrize("name", STORM_THRESHOLDS)
def test_every_storm_threshold_a_config_takes_reaches_the_probe(name: str) -> None:
    for v in threshold_range(name):
        word = _word(probe_args(thresholds={name: v}), name)
        assert float(word) == v
        pf.Args([f"{name}={word}"])  # taken (Refused otherwise)


@pytest.mark.parametrize(
    "bad",
    [
        {"storm_pause_ratio": 1.5},
        {"storm_pause_ratio": -0.01},
        {"storm_pause_ratio": float("nan")},
        {"storm_flat_fraction": float("inf")},
        {"storm_flat_fraction": True},
        {"storm_flat_bytes_per_s": 1e16},
        {"ib_port_tick": ("a;reboot",)},
    ],
)
def test_bad_thresholds_and_tick_lists_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ProbeArgError):
        build_argv(replace(ProbeArgs(), **bad))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, 86401, True])
def test_bad_optics_intervals_are_refused(bad: object) -> None:
    with pytest.raises(ProbeArgError):
        build_argv(replace(ProbeArgs(), optics_s=bad))  # type: ignore[arg-type]


@pytest.mark.parametrize("word", ["optics_s=-1", "optics_s=030", "optics_s=86401", "optics_s="])
def test_both_probes_refuse_a_bad_optics_interval(word: str, tmp_path: Path) -> None:
    r = subprocess.run(
        ["dash", "-s", "--", word],
        input=probe_script().encode(),
        capture_output=True,
        timeout=5,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 2 and r.stdout == b"" and b"fabtop-probe: bad optics_s" in r.stderr
    with pytest.raises(pf.Refused):
        pf.Args([word])
    assert pf.Args(["optics_s=0"]).optics_s == 0
    assert _word(build_argv(replace(ProbeArgs(), optics_s=45)), "optics_s") == "45"


def test_optics_sudo_goes_from_the_config_to_both_probes_and_nothing_else_is_taken() -> None:
    from fabtop.config import ConfigError, config_from_dict

    cfg = config_from_dict({"host": [{"name": "a", "optics_sudo": True}, {"name": "b"}]}, "t")
    assert [h.optics_sudo for h in cfg.hosts] == [True, False]
    with pytest.raises(ConfigError, match=r"host 'a'.*'optics_sudo' must be true or false"):
        config_from_dict({"host": [{"name": "a", "optics_sudo": "yes"}]}, "t")
    assert _word(probe_args(optics_sudo=True), "optics_sudo") == "1"
    assert not any(a.startswith("optics_sudo") for a in probe_args())
    assert pf.Args(["optics_sudo=1"]).optics_sudo and not pf.Args([]).optics_sudo
    with pytest.raises(pf.Refused):
        pf.Args(["optics_sudo=yes"])


def test_optics_mlxlink_goes_from_the_config_to_both_probes_off_by_default(tmp_path: Path) -> None:
    from fabtop.config import ConfigError, config_from_dict

    cfg = config_from_dict({"host": [{"name": "a", "optics_mlxlink": True}, {"name": "b"}]}, "t")
    assert [h.optics_mlxlink for h in cfg.hosts] == [True, False]
    with pytest.raises(ConfigError, match=r"host 'a'.*'optics_mlxlink' must be true or false"):
        config_from_dict({"host": [{"name": "a", "optics_mlxlink": 1}]}, "t")
    assert _word(probe_args(mlxlink=True), "mlxlink") == "1"
    assert not any(a.startswith("mlxlink") for a in probe_args())
    assert pf.Args(["mlxlink=1"]).mlxlink and not pf.Args([]).mlxlink
    with pytest.raises(pf.Refused):
        pf.Args(["mlxlink=yes"])
    r = subprocess.run(
        ["dash", "-s", "--", "mlxlink=yes"],
        input=probe_script().encode(),
        capture_output=True,
        timeout=5,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 2 and r.stdout == b"" and b"fabtop-probe: unknown argument" in r.stderr
