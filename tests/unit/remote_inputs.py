"""Remote text for the class tests of issue 27: real captures of every parser, and the
same texts with one field, one line or the whole text replaced by hostile input.

Every public ``parse_*`` of collectors/parsers is found at import time (as the fuzz test
finds them); each needs its captures named in ``SOURCES`` below, so a parser added later
fails the class tests until it has some. Captures come from this repository's fixtures,
from the simulated hosts (which print every section a probe sends) and, where present,
from ../shared/fixtures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from collectors.frames import Frame, FrameDecoder, Section
from fabtop.sim import Fabric, SimHostConfig
from tests.conftest import FIXTURES
from tests.unit.test_parsers_fuzz import PARSERS, _call

REPO_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

__all__ = ["PARSERS", "_call"]


def sim_frames() -> tuple[Frame, Frame]:
    """A slow tick's frame of a Linux host (RoCE, IB, Thunderbolt, GPUs, /metrics) and of
    a Mac, as the simulated probes print them."""
    fab = Fabric(
        [
            SimHostConfig(
                "n1",
                roce_ports=2,
                ib_port=True,
                gpus=2,
                tb_link=True,
                tb_self_uid="e0376f00-0300-0100-ffff-ffffffffffff",
                tb_peer_uid="e1376f00-0300-0100-ffff-ffffffffffff",
                tb_peer_name="n2",
                inference_url="http://127.0.0.1:8000/metrics",
            ),
            SimHostConfig("mac1", roce_ports=0, gpus=0, macos=True),
            SimHostConfig("mac2", roce_ports=0, gpus=0, macos=True),
        ],
        seed=0,
    )
    out = []
    for name in ("n1", "mac1"):
        (frame,) = FrameDecoder().feed(fab.hosts[name].frame(25.0, 1.0).encode())
        out.append(frame)
    return out[0], out[1]


LINUX, MAC = sim_frames()
_FAB = Fabric([SimHostConfig("n1", inference_url="http://127.0.0.1:8000/metrics")], seed=0)
METRICS = _FAB.hosts["n1"].metrics_text()


def sim_text(frame: Frame, kind: str) -> str:
    sec = frame.find(kind)
    assert sec is not None, kind
    return sec.text


# Texts no capture holds: formats from the tools' documentation (see the parsers' tests).
_INLINE: dict[str, list[str]] = {
    # perftest's --out_json, from its format strings (write_report_lat_to_file, 6.29)
    "perftest.parse_perftest_json": [
        '{\n"test_info": {\n"test": "Write_Latency_Test",\n"Device": "mlx5_0",\n"Mtu": 4096,\n'
        '"GID_index": 3\n},\n"results": {\n"MsgSize": 2,\n"n_iterations": 1000,\n'
        '"t_min": 1.79,\n"t_typical": 1.87,\n"percentile_99.9": 5.41\n}\n}\n'
    ],
    "qos.parse_dcb_apptrust": ["order: ethtype stream-port dscp pcp\n"],
    "qos.parse_dcb_app": ["default-prio 0\ndscp-prio 0:0 CS3:3 AF41:4 46:5 EF:6\n"],
    "qos.parse_dcb_ets": [
        "willing off ets-cap 8 cbs off\nprio-tc 0:0 1:1 2:2 3:3\n"
        "tc-tsa 0:ets 1:ets 2:strict 3:strict\ntc-bw 0:50 1:50 2:0 3:0\n"
    ],
    "qos.parse_dcb_buffer": [
        "prio-buffer 0:0 1:1 2:2 3:3 4:4 5:5 6:6 7:7\n"
        "buffer-size 0:10Kb 1:10Kb 6:1Mb 7:10Kb\ntotal-size 1222Kb\n"
    ],
    "qos.parse_dcb_pfc": [
        "pfc-cap 8 macsec-bypass off delay 4096\nprio-pfc 0:off 1:off "
        "2:off 3:on 4:off 5:off 6:off 7:off\nrequests 0:0 1:0 2:0 3:12\n"
        "indications 0:0 1:0 2:0 3:7\n"
    ],
    "sysfs.parse_kv_dump": [
        "cpu0/thermal_throttle/core_throttle_count 5\n"
        "cpu1/thermal_throttle/package_throttle_count 0\n"
    ],
    "sysfs.parse_ib_rate": ["100 Gb/sec (4X EDR)"],
    "sysfs.parse_ib_width": ["100 Gb/sec (4X EDR)", "25 Gb/sec (1X EDR)"],
    "sysfs.parse_pcie_speed": ["16.0 GT/s PCIe"],
    "thunderbolt.parse_uid": ["e0376f00-0300-0100-ffff-ffffffffffff"],
    "thunderbolt.parse_lane_speed": ["20.0 Gb/s"],
    "thunderbolt.parse_lanes": ["2"],
    "pfcwd.parse_pfcwd": ["storm eth0 3 rx 0.995 1200 100000\nclear eth0 3 rx 0.120\n"],
    # (the shared captures, where present, add real ones of these three)
    "amd_smi.parse_rocm_smi_json": [
        '{"card0": {"Card Series": "MI100", "pcie clock level": "1 (16.0GT/s x16)", '
        '"GPU use (%)": "3", "Temperature (Sensor edge) (C)": "31.0", '
        '"Average Graphics Package Power (W)": "35.0", "VRAM Total Memory (B)": "343429611"}}'
    ],
    "amd_smi.parse_amd_smi_metric_json": [
        '[{"gpu": 0, "usage": {"gfx_activity": {"value": 3, "unit": "%"}}, "power": '
        '{"socket_power": {"value": 35, "unit": "W"}}, "mem_usage": {"used_vram": "6 MB", '
        '"total_vram": "64 GB"}, "pcie": {"width": 16, "speed": {"value": 16, "unit": "GT/s"}}}]'
    ],
    "nvidia_smi.parse_query_csv": [
        "index, name, utilization.gpu [%], memory.used [MiB], power.draw [W], "
        "pcie.link.gen.current\n0, NVIDIA H100 80GB HBM3, 35 %, 1024 MiB, 120.50 W, 5\n"
    ],
}

# Parser -> (its captures: globs under this repository's fixtures, under the shared ones,
# and the simulated Linux host's sections of these kinds).
_Source = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
SOURCES: dict[str, _Source] = {
    "amd_smi.parse_amd_smi_metric_json": ((), ("amd_smi/amd_smi_metric*",), ()),
    "amd_smi.parse_rocm_smi_json": ((), ("amd_smi/rocm_smi_json_mi100*",), ()),
    "devlink_health.parse_devlink_health": (
        ("optics/devlink_health_mlx5*", "optics/devlink_health_port*"),
        (),
        (),
    ),
    "ethtool_module.parse_ethtool_module": (
        (
            "optics/ethtool_m_qsfp28_aoc_oma*",
            "optics/ethtool_m_qsfp28_sr4_lol*",  # per-lane loss-of-lock flags
            "optics/ethtool_m_qsfpdd_cmis4*",
            "optics/ethtool_m_sfp*",
        ),
        (),
        (),
    ),
    "mlxlink.parse_mlxlink_json": (("optics/mlxlink_json*",), (), ()),
    "fec.parse_show_fec": (("optics/show_fec_per_lane*", "optics/show_fec_hist_netdev*"), (), ()),
    "ethtool.parse_ethtool_info": ((), ("ethtool/ethtool_i_ice*",), ("ethtool_i",)),
    "ethtool.parse_ethtool_stats": ((), ("ethtool/ethtool_S_bnxt*",), ("ethtool_S",)),
    "exo_state.parse_exo_state": (("inference/exo_state*",), (), ()),
    "inference_page.parse_inference_page": ((), ("llm_metrics/vllm*",), ()),
    "ipaddr.parse_ip_addr": (("ipaddr/ip_o_a_*",), (), ("ip_addr",)),
    "iperf3.parse_iperf3": (("iperf3/client_3.12_tcp*",), (), ()),
    "iptables.parse_iptables_save": (("firewall/algo_iptables_save.txt",), (), ()),
    "macos_ifconfig.parse_ifconfig": (("darwin/ifconfig_bridge0*",), (), ()),
    "macos_netstat.parse_netstat_ibdn": (("darwin/netstat_ibdn_gopsutil*",), (), ()),
    "macos_networksetup.parse_hardware_ports": (("darwin/networksetup_*osaurus*",), (), ()),
    "macos_rdma.parse_ibv_devinfo": (("darwin/ibv_devinfo*",), (), ()),
    "macos_rdma.parse_rdma_ctl": (("darwin/rdma_ctl*",), (), ()),
    "macos_thermal.parse_macmon": (("darwin/macmon*",), (), ()),
    "macos_thermal.parse_pmset_therm": (("darwin/pmset_g_therm_speed*",), (), ()),
    "macos_thunderbolt.parse_sp_thunderbolt": (("darwin/system_profiler*m3ultra*",), (), ()),
    "mlx_lm.parse_mlx_lm_models": (("inference/mlx_lm*",), (), ()),
    "nftables.parse_nft_json": (("firewall/docker.json",), (), ()),
    "nvidia_smi.parse_query_csv": (
        (),
        ("nvidia_smi/captures_utkuozdemir/query_gpu_csv_load__linux-x86_64__nvidia-h100*",),
        (),
    ),
    "perftest.parse_perftest": (("perftest/ib_write_lat_all_sizes*",), (), ()),
    "perftest.parse_perftest_json": ((), (), ()),  # inline: no public --out_json capture
    "prometheus_text.parse_inference_metrics": ((), ("llm_metrics/vllm*",), ()),
    "prometheus_text.parse_prometheus_text": ((), ("llm_metrics/vllm*",), ()),
    "qos.parse_mlnx_qos": ((), ("qos/mlnx_qos_trust*",), ("mlnx_qos",)),
    "sockperf.parse_sockperf": (("sockperf/ping_pong_3.7_tcp_loopback*",), (), ()),
    "sysfs.parse_sysib": ((), (), ("sysib",)),
    "sysfs.parse_sysnet": ((), (), ("sysnet",)),
    "thunderbolt.parse_systb": ((), (), ("systb_slow",)),
    "versions.parse_dpkg_query": (("versions/dpkg_query_status*",), (), ()),
    "versions.parse_nccl_scan": ((), (), ("nccl",)),
    "versions.parse_nvidia_version": (("versions/proc_driver_nvidia_version_open*",), (), ()),
    "versions.parse_ofed_info_s": (("versions/ofed_info_s_doca*",), (), ()),
    "versions.parse_rpm_q": (("versions/rpm_q_rdma_core_36*",), (), ()),
    "versions.parse_uname_r": (("versions/uname_r*",), (), ()),
}


def captures(name: str) -> list[str]:
    """The real texts parser ``name`` reads (inline ones where no capture exists)."""
    repo, shared, kinds = SOURCES.get(name, ((), (), ()))
    texts = list(_INLINE.get(name, []))
    for pattern in repo:
        texts += [p.read_text() for p in sorted(REPO_FIXTURES.glob(pattern))[:1]]
    if FIXTURES.is_dir():
        for pattern in shared:
            texts += [p.read_text(errors="replace") for p in sorted(FIXTURES.glob(pattern))[:1]]
    texts += [sim_text(LINUX, k) for k in kinds]
    if name == "inference_page.parse_inference_page" or name.startswith("prometheus_text"):
        texts.append(METRICS)
    return texts


# --- hostile input -------------------------------------------------------------------

SIZE = 40_000  # digits in a field (the pcie clock level)
LINE_70K = "a" * 70_000  # one line of 70 KB
# Runs a pattern may try from each of their positions: a leading repeated class, two
# adjacent ones, an optional group between blanks, the token a pattern looks for.
RUNS: dict[str, str] = {
    "digits": "1" * SIZE,
    "digits, a letter": "1" * SIZE + "x",
    "letters, a digit": "a" * SIZE + "1",
    "blanks inside": "1" + " " * SIZE + "!",
    "tabs inside": "a" + "\t" * SIZE + "!",
    "dots": "." * SIZE + "!",
    "colons": ":" * SIZE + "!",
    "brackets": "[" * SIZE,
    "parentheses": "(" * SIZE,
    "numbers with dots": "1." * (SIZE // 2),
    "signed numbers": "-1" * (SIZE // 2),
    "x and digits": "x1" * (SIZE // 2),
    "keys": "a:" * (SIZE // 2),
    "quotes": '"a' * (SIZE // 2),
    "GT/s": "1GT/s " * (SIZE // 6),
    "Gb/s": "1 Gb/s" * (SIZE // 6),
}
# What each field position gets (all runs go to whole lines and whole texts).
FIELD_RUNS = ("digits", "digits, a letter", "letters, a digit", "blanks inside", "brackets")
_SEP = re.compile(r"(\s+|[:=,;()\[\]{}<>/\"'|])")


def line_variants(text: str, lines: int = 6, tokens: int = 4) -> Iterator[tuple[str, str]]:
    """``text`` with each of its first field positions replaced by each of FIELD_RUNS,
    and each of a few lines by every run and by LINE_70K (label, text)."""
    rows = text.split("\n")
    picked = sorted({round(i * (len(rows) - 1) / max(lines - 1, 1)) for i in range(lines)})
    for li in picked:
        parts = _SEP.split(rows[li])
        fields = [i for i, p in enumerate(parts) if p and not _SEP.fullmatch(p)][:tokens]
        for fi in fields:
            for run in FIELD_RUNS:
                new = parts.copy()
                new[fi] = RUNS[run]
                yield f"line {li} field {fi}: {run}", _with_line(rows, li, "".join(new))
        for run, value in [*RUNS.items(), ("70 KB line", LINE_70K)]:
            yield f"line {li}: {run}", _with_line(rows, li, value)


def _with_line(rows: list[str], i: int, line: str) -> str:
    return "\n".join([*rows[:i], line, *rows[i + 1 :]])


def json_variants(text: str, nodes: int = 40) -> Iterator[tuple[str, str]]:
    """JSON ``text`` with each of its first nodes (objects, lists and values alike)
    replaced by each of FIELD_RUNS (label, text)."""
    paths: list[list[Any]] = []

    def walk(node: Any, path: list[Any]) -> None:
        items = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node[:3])
            if isinstance(node, list)
            else ()
        )
        for key, child in items:
            paths.append([*path, key])
            walk(child, [*path, key])

    walk(json.loads(text), [])
    step = max(1, len(paths) // nodes)
    for path in paths[::step]:
        for run in FIELD_RUNS:
            doc = json.loads(text)
            node = doc
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = RUNS[run]
            yield f"{path}: {run}", json.dumps(doc)


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def hostile(name: str) -> Iterator[tuple[str, str]]:
    """Every hostile input of parser ``name``: whole texts, then its captures' fields."""
    for run, value in [*RUNS.items(), ("70 KB line", LINE_70K)]:
        yield f"whole text: {run}", value
    for text in captures(name):
        yield from json_variants(text) if is_json(text) else line_variants(text)


def section_variants(frame: Frame) -> Iterator[tuple[str, Frame]]:
    """``frame`` with one section's text replaced: by each run, and field by field."""
    for i, sec in enumerate(frame.sections):
        texts = [(f"{sec.kind}: {label}", t) for label, t in line_variants(sec.text, 3, 3)]
        if is_json(sec.text):
            texts = [(f"{sec.kind}: {label}", t) for label, t in json_variants(sec.text, 12)]
            texts += [(f"{sec.kind}: whole: {run}", v) for run, v in RUNS.items()]
        for label, text in texts:
            sections = list(frame.sections)
            sections[i] = Section(sec.kind, sec.subject, sec.read_ns, sec.status, sec.detail, text)
            yield label, Frame(frame.seq, frame.clock_ns, frame.uptime_s, frame.unix_s, sections)


def call(fn: Callable[..., Any], text: str) -> Any:
    return _call(fn, text)
