"""A recording of a node whose cable degrades replays to the same cable data (issue 33).

The real probe (sh and python) reads shim ``ethtool -m``, ``--show-fec`` and ``devlink
health show`` that replay the public captures of tests/fixtures/optics, one round each
frame, their readings moved round by round as a degrading cable moves them (a lane's rx
power sinking to its alarm, the module warming, corrected and uncorrectable blocks
climbing, a health reporter recovering). The frames go to a Recorder as the live session
hands them over; the replay must give the same module, FEC and health data and the same
cable findings, and ``fabtop diff`` of two points of it must show what changed.
"""

# ruff: noqa: F811
# (pytest fixtures imported from test_probe are redefined as test parameters)

from __future__ import annotations

import itertools
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from collectors.frames import Frame
from collectors.probe import build_argv
from fabtop.commands.diff import compare
from fabtop.config import Config, HostConfig
from fabtop.core.findings import Finding
from fabtop.core.state import FabricState
from fabtop.run.compose import fabric_state
from fabtop.run.record import Recorder
from fabtop.run.replay import Replay
from tests.integration.test_probe import (  # noqa: F401
    ETHTOOL_I,
    ETHTOOL_S,
    Probe,
    _args,
    _start,
    _write_tool,
    node,
    run_probe,
)

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "optics"
MODULE = "ethtool_m_qsfpdd_cmis4_400g_xdr4_temp_warning_netdev.txt"  # rx low alarm 0.1288 mW
FEC = "show_fec_per_lane_netdev.txt"
HEALTH = "devlink_health_mlx5_tx_netdev.txt"  # pci/0000:04:00.0: reporter tx
BUS = "0000:04:00.0"
# Per round: module temperature (its own warning: 70 °C), lanes 1 and 2's rx power (mW:
# lane 1 wanders by a tenth of a dB, lane 2 sinks to its alarm), corrected blocks on lanes
# 0 and 1, uncorrectable on lanes 0 and 1, the tx reporter's errors and recoveries.
ROUNDS = (
    (70.49, (2.2489, 1.8629), (255, 1), (128, 17), 0),
    (71.20, (2.2100, 0.9000), (1255, 1), (128, 17), 0),
    (72.10, (2.2300, 0.1500), (5055, 201), (129, 17), 1),
    (74.00, (2.2000, 0.1400), (19855, 401), (131, 19), 2),
)
CABLE_RULES = {"module_temp_high", "optic_rx_low", "fec_uncorrectable", "nic_health"}


def _round_files(node: Path) -> None:
    """The captures, their readings set to each round's (lines as the tools print them)."""
    module, fec, health = ((CAPTURES / n).read_text() for n in (MODULE, FEC, HEALTH))
    for i, (temp, rx, corr, unc, rec) in enumerate(ROUNDS):
        m = re.sub(r"(Module temperature\s+: )[0-9.]+", rf"\g<1>{temp:.2f}", module)
        for lane, mw in enumerate(rx, 1):
            m = re.sub(
                rf"(Rcvr signal avg optical power \(Channel {lane}\) : )[^\n]+",
                rf"\g<1>{mw:.4f} mW / 0.00 dBm",  # the parser reads mW; dBm is computed
                m,
            )
        (node / f"m{i}.txt").write_text(m)
        head, stats = fec.split("Statistics:")
        vals = iter((sum(corr), *corr, sum(unc), *unc))  # in the order the capture has them
        stats = re.sub(r"(?m)(: )[0-9]+$", lambda x, v=vals: x.group(1) + str(next(v)), stats)
        (node / f"fec{i}.txt").write_text(head + "Statistics:" + stats)
        h = health.replace("error 0 recover 0", f"error {rec} recover {rec}")
        (node / f"devlink{i}.txt").write_text(h)


def _shims(node: Path, fixtures_dir: Path) -> None:
    """ethtool and devlink that answer round by round (each tool counts its own calls)."""
    _round_files(node)
    info = node / "ethtool_i.txt"
    info.write_text((fixtures_dir / ETHTOOL_I).read_text().replace("0000:b3:00.0", BUS))
    last = len(ROUNDS) - 1

    def next_of(name: str) -> str:
        # the round this call answers, then the next (held at the last)
        return (
            f'n=$(cat {node}/{name}.n 2>/dev/null || echo 0); cat "{node}/{name}$n.txt"; '
            f'[ "$n" -lt {last} ] && n=$((n + 1)); echo $n > {node}/{name}.n'
        )

    _write_tool(
        node / "bin",
        "ethtool",
        f"""case "$1 $2 $3" in
"-S "*) cat "{fixtures_dir / ETHTOOL_S}" ;;
"-i "*) cat "{info}" ;;
"--version  ") echo "ethtool version 6.1" ;;
"-m eth0 ") {next_of("m")} ;;
"-I --show-fec eth0") {next_of("fec")} ;;
*) exit 1 ;;
esac
""",
    )
    _write_tool(
        node / "bin", "devlink", f'[ "$*" = "health show" ] || exit 2\n{next_of("devlink")}\n'
    )


def _key(f: Finding) -> tuple[object, ...]:
    return (f.rule, f.severity, f.subject, f.summary)


@pytest.mark.parametrize("impl", ["sh", "python"])
def test_a_recording_replays_the_cable_data_and_findings_and_diff_shows_the_change(
    impl: str, node: Path, fixtures_dir: Path, run_probe: list[Probe], tmp_path: Path
) -> None:
    _shims(node, fixtures_dir)
    # every frame a slow tick and an optics round (optics_s=0)
    args = replace(_args(node, probe=impl), slow_ticks=1, optics_s=0, max_frames=len(ROUNDS))
    frames: list[Frame] = _start(run_probe, ["sh", "-s", "--", *build_argv(args)], node).frames(
        len(ROUNDS)
    )

    # The live side: the session's state, its tap writing each frame and each rules run.
    cfg = Config(hosts=[HostConfig("n1")], interval=0.2)
    path = tmp_path / "run.fabrec"
    ticks = itertools.count()
    rec = Recorder(path, cfg, clock=lambda: next(ticks) * 0.1).open()
    live: FabricState = fabric_state(cfg)
    live.evaluate_per_frame = False
    live_findings = []
    for f in frames:
        rec.frame("n1", f)
        live.apply_frame("n1", f)
        rec.evaluated()
        live.evaluate()
        live_findings.append(sorted(map(_key, live.findings)))
    rec.close()

    rp = Replay(path)
    replayed = []
    for i in range(len(frames)):
        rp.advance_to(0.1 + 0.2 * i + 0.15)  # the frame and the rules run after it
        replayed.append(sorted(map(_key, rp.state.findings)))
    assert replayed == live_findings
    assert {k[0] for k in replayed[-1]} >= CABLE_RULES, replayed[-1]
    s_live, s_back = live.hosts["n1"].sample, rp.state.hosts["n1"].sample
    assert s_live is not None and s_back is not None
    a, b = s_live.links["eth0"], s_back.links["eth0"]
    assert b.module is not None and b.module.temperature_c == 74.0
    assert (b.module, b.fec, b.health) == (a.module, a.fec, a.health)
    assert b.counters["fec"] == a.counters["fec"] and b.counters["fec"]["corrected_blocks"] == 20256

    # fabtop diff of the first round against the last, as a user reads it
    text, _ = compare(f"{path}@0.15", f"{path}@{rp.duration}")
    rows = {" ".join(ln.split()[2:3]): ln.split() for ln in text.splitlines() if "eth0" in ln}
    assert rows["fec_corrected_blocks"][3] == "20.00k"
    assert rows["fec_uncorrectable_blocks"][3] == "5"
    assert rows["health_tx_recover"][3] == "2"
    lane2 = next(ln for ln in text.splitlines() if "rx power lane 2" in ln)
    assert lane2.split()[-4:] == ["-8.54", "dBm", "-11.24", "dB"], lane2
    temp = next(ln for ln in text.splitlines() if "module temperature" in ln)
    assert temp.split()[-2:] == ["+3.51", "°C"], temp
    assert "lane 1" not in text  # a tenth of a dB is a steady lane's wander: not a change
    js = json.loads(compare(f"{path}@0.15", f"{path}@{rp.duration}", as_json=True)[0])
    assert {c["reading"] for c in js["cable"]} >= {"rx power lane 2", "module temperature"}
