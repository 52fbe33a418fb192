"""Remote strings are data: no control character from a node reaches any sample field.

Frames are built from the real captures with control characters (the whole C0/C1 range,
whole escape sequences: OSC 0 sets the terminal title, OSC 52 writes the clipboard)
injected into every word, assembled, and then EVERY ``str`` in the result is checked,
wherever it sits (a field, a list, a dict key or value, a nested dataclass). The fields
are enumerated from :mod:`collectors.samples` with :func:`dataclasses.fields`, so a field
added later is covered without touching this file; the meta-checks fail if the
enumeration stops finding the string fields or the frames stop filling one of them.
"""

from __future__ import annotations

import csv
import dataclasses
import inspect
import json
import math
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collectors.samples
from collectors.assemble import assemble
from collectors.frames import Frame, Section
from collectors.numbers import U64_MAX
from collectors.parsers.exo_state import parse_exo_state
from collectors.parsers.mlx_lm import parse_mlx_lm_models
from collectors.parsers.nvidia_smi import QUERY_FIELDS
from collectors.parsers.prometheus_text import parse_inference_metrics
from collectors.samples import HostSample
from collectors.text import has_control
from tests.unit.gid_captures import sysib_text
from tests.unit.tb_sysfs import TbHost, Xd, systb_text
from tests.unit.test_parse_sysfs import sysfs_dump

URL = "http://127.0.0.1:8000/metrics"
B64 = "cGF5bG9hZA=="  # base64 "payload": what an OSC 52 would put on the clipboard
OSC52 = f"\x1b]52;c;{B64}\x07"
SAFE_PAYLOAD = OSC52 + "\x9b31m\u202e"  # whole sequences: clean() leaves the text intact
CONTROLS = [chr(c) for c in [*range(0x00, 0x20), *range(0x7F, 0xA0)]]
BIDI = [chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]]
SEQUENCES = [
    "\x1b]0;owned\x07",
    OSC52,
    f"\x1b]52;c;{B64}\x1b\\",
    f"\x9d52;c;{B64}\x9c",
    "\x1b[31m",
    "\x9b2J",
    "\x1bP+q\x1b\\",
    "\x1b_apc\x9c",
    "\x1bc",
]


# --- the enumeration --------------------------------------------------------------------

SAMPLE_TYPES: list[type[Any]] = [
    cls
    for _, cls in inspect.getmembers(collectors.samples, inspect.isclass)
    if dataclasses.is_dataclass(cls) and cls.__module__ == collectors.samples.__name__
]


def _mentions_str(tp: Any) -> bool:
    if tp is str:
        return True
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return False  # a nested sample type: its own fields are enumerated on their own
    return any(_mentions_str(a) for a in typing.get_args(tp))


def _str_fields() -> set[tuple[str, str]]:
    found = set()
    for cls in SAMPLE_TYPES:
        hints = typing.get_type_hints(cls, vars(collectors.samples))
        for f in dataclasses.fields(cls):
            if _mentions_str(hints[f.name]):
                found.add((cls.__name__, f.name))
    return found


STR_FIELDS = _str_fields()


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every str/int/float under ``value`` (dict keys included), with where it sits."""
    if isinstance(value, str | int | float):
        yield path, value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _leaves(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(k, f"{path}[key]")
            yield from _leaves(v, f"{path}[{k!r}]")
    elif isinstance(value, list | tuple | set | frozenset):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")


def check_output(value: Any) -> None:
    """The property every parser's output keeps: clean strings, finite 64-bit numbers."""
    for path, leaf in _leaves(value, type(value).__name__):
        if isinstance(leaf, str):
            assert not has_control(leaf), (path, leaf)
            assert B64 not in leaf, (path, leaf)
        elif isinstance(leaf, bool):
            continue
        elif isinstance(leaf, int):
            assert -(2**63) <= leaf <= U64_MAX, path
        elif re.search(r"\.histograms\[[^]]*\]\[0\]\[\d+\]$", path):
            # Histogram upper bounds: +Inf is the last bucket's bound, not a reading.
            assert math.isfinite(leaf) or leaf == math.inf, path
        else:
            assert math.isfinite(leaf), (path, leaf)


def _seen(value: Any, out: set[tuple[str, str]]) -> None:
    """Record which (type, field) held a non-empty string somewhere beneath it."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if any(isinstance(x, str) and x for _, x in _leaves(v, "")):
                out.add((type(value).__name__, f.name))
            _seen(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _seen(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            _seen(v, out)


# --- frames from the real captures, with payloads injected ------------------------------

_WORD = re.compile(r"[A-Za-z]{2,}")


def inject(text: str, payload: str) -> str:
    """The payload inside every word (after its first letter): names, values, keys."""
    return _WORD.sub(lambda m: m.group()[0] + payload + m.group()[1:], text)


def inject_json(text: str, payload: str) -> str:
    """The payload, JSON-escaped, inside every string value (keys kept, JSON stays valid)."""
    escaped = json.dumps(payload)[1:-1]
    return re.sub(r'("\s*:\s*")([^"\\]?)', lambda m: m.group(1) + m.group(2) + escaped, text)


def inject_labels(text: str, payload: str) -> str:
    """The payload inside every label value of a /metrics page (raw, as a server may send)."""
    quoted = payload.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return re.sub(r'(="[^"]?)', lambda m: m.group(1) + quoted, text)


# dcb tools: formats from the iproute2 man pages, as in test_assemble (no capture exists).
DCB_APPTRUST = "order: dscp pcp\n"
DCB_APP = "dscp-prio 0:0 CS3:3 AF41:4\n"
DCB_ETS = "willing off ets-cap 8 cbs off\nprio-tc 0:0 1:0 2:0 3:1\ntc-tsa 0:ets 1:strict\n"
DCB_BUFFER = "prio-buffer 0:0 1:0 2:0 3:1\nbuffer-size 0:10Kb 1:1Mb\ntotal-size 1222Kb\n"
# ip -o addr show (tests/fixtures/ipaddr)
IP_ADDR = "2: eth0    inet 10.0.11.252/24 brd 10.0.11.255 scope global eth0\\       valid_lft\n"
# A Linux host with two Thunderbolt domains and a cable (tests/unit/tb_sysfs.py).
TB_TWO_DOMAINS = systb_text(
    TbHost(
        "d2030000-0072-6b0e-23a4-1c9b3f5e8a01",
        xds=[Xd("1", "d2030000-0072-6b0e-23a4-1c9b3f5e8a02", "spark2")],
    )
) + ("\n1-0 -\n1-0/unique_id d2030000-0072-6b0e-23a4-1c9b3f5e8a03\n")
NVIDIA = (
    "nvidia_smi/captures_utkuozdemir/"
    "query_gpu_csv_idle__linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt"
)


def _nvidia(fixtures_dir: Path, payload: str) -> str:
    header, row = list(
        csv.reader((fixtures_dir / NVIDIA).read_text().splitlines(), skipinitialspace=True)
    )
    # The '# fields' line is fabtop's own (the probe echoes what it asked for): not remote.
    return (
        "# "
        + ",".join(QUERY_FIELDS)
        + "\n"
        + ", ".join(header)
        + "\n"
        + ", ".join(inject(v, payload) for v in row)
    )


def build_sample(fixtures_dir: Path, payload: str) -> HostSample:
    """A host's frame of real captures, payload in every word, plus two /metrics readings."""
    procfs = fixtures_dir / "sysfs/prometheus_procfs/sys/class"
    node_ib = fixtures_dir / "sysfs/prometheus_node_exporter/sys/class/infiniband"
    sysib = (
        sysfs_dump(procfs / "infiniband").replace(
            "mlx5_0/ports/1/link_layer InfiniBand", "mlx5_0/ports/1/link_layer Ethernet"
        )
        + "mlx5_0/ports/1/gid_attrs/ndevs/0 eth0\n"
    )

    def read(rel: str) -> str:
        return (fixtures_dir / rel).read_text()

    def sec(kind: str, subject: str | None, text: str, status: str = "ok") -> Section:
        return Section(kind, subject, 1, status, None, text)

    p = payload
    sections = [
        sec("sysnet", None, inject(sysfs_dump(procfs / "net"), p)),
        sec("sysib", None, inject(sysib, p)),
        sec("sysib", None, inject(sysfs_dump(node_ib), p)),
        # a GID table (show_gids capture): GIDs, their types and netdevs
        sec(
            "sysib_slow",
            None,
            inject(
                sysib_text("show_gids_mlx5_ipv4_at_3_nccl1131.txt") + "\nmlx5_0/node_type 1: CA", p
            ),
        ),
        sec(
            "ethtool_S",
            "eth0",
            inject(read("ethtool/ethtool_S_mlx5_xdp_kernel5.15_nonzero_only_bpf-list.txt"), p),
        ),
        sec("ethtool_i", "eth0", inject(read("ethtool/ethtool_i_e1000e_node_exporter.txt"), p)),
        sec(
            "mlnx_qos",
            "eth0",
            inject(read("qos/mlnx_qos_trust_dscp_pfc3_os_controlled_att-netarbiter.txt"), p),
        ),
        sec("dcb_apptrust", "eth0", inject(DCB_APPTRUST, p)),
        sec("dcb_app", "eth0", inject(DCB_APP, p)),
        sec("dcb_ets", "eth0", inject(DCB_ETS, p)),
        sec("dcb_buffer", "eth0", inject(DCB_BUFFER, p)),
        Section(
            "dcb_pfc",
            "eth0",
            1,
            "error",
            inject("rc=1 failed", p),
            inject("Error: Operation not supported", p),
        ),
        sec("cputhrottle", None, inject("cpu0/thermal_throttle/core_throttle_count 3\n", p)),
        sec("systb_slow", None, inject(TB_TWO_DOMAINS, p)),
        # addresses (tests/fixtures/ipaddr): a clean listing, then the same poisoned
        sec("ip_addr", None, IP_ADDR + inject(IP_ADDR, p)),
        # software versions (tests/fixtures/versions: uname -r, ofed_info -s captures)
        sec("uname_r", None, inject("6.8.0-58-generic", p)),
        sec("ofed_info", None, inject("MLNX_OFED_LINUX-23.10-1.1.9.0:", p)),
        Section("nccl", None, 1, "missing", inject("nvidia-smi", p), ""),
        sec(
            "probe",
            None,
            inject("interval_ms 1000\nwarning interface name refused\n", p)
            + "impl "
            + inject("python 3.11.2 /usr/bin/python3", p)
            + "\n",
        ),
        sec("gpu_nvidia", None, _nvidia(fixtures_dir, p)),
        Section(
            "gpu_amd",
            None,
            1,
            "ok",
            "rocm-smi",
            inject_json(read("amd_smi/rocm_smi_json_mi100_rocm571_telegraf.json"), p),
        ),
        Section(
            inject("odd", p), inject("subject", p), 1, inject("ok", p), inject("detail", p), "x"
        ),
    ]
    sample = assemble("node1", Frame(7, 1_700_000_000_000_000_000, 100.0, 1.7e9, sections))
    vllm = inject_labels(read("llm_metrics/vllm_metrics_datadog.txt"), p)
    first = "vllm:generation_tokens_total{"
    nan_counter = vllm.replace(first, f'{first}x="1"}} NaN\n{first}', 1)
    bad_line = "vllm:broken{model_name=" + inject("broken", p) + "\n"
    # a page with one unreadable line (a warning), and one of nothing else (an error)
    sample.inference = [
        parse_inference_metrics(t, URL) for t in (nan_counter, vllm + "\n" + bad_line, bad_line)
    ]
    # Servers with no counter (issue 14): exo's /state, mlx_lm's /v1/models (documented).
    sample.inference.append(parse_exo_state(inject_api(read_api("exo_state"), p), EXO_URL))
    sample.inference.append(parse_mlx_lm_models(inject_api(read_api("mlx_lm"), p), MLX_URL))
    return sample


API_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inference"
EXO_URL = "http://127.0.0.1:52415/state"
MLX_URL = "http://127.0.0.1:8080/v1/models"


def read_api(prefix: str) -> Any:
    """A documented API body of tests/fixtures/inference (see its SOURCES.md), parsed."""
    return json.loads(next(API_FIXTURES.glob(f"{prefix}*.json")).read_text())


def inject_api(doc: Any, payload: str) -> str:
    """The payload inside every string value and every id key, consistently (ids still match).

    Schema keys (``instances``, ``RunnerReady``) have no digit and are kept; ids as keys
    (node, runner, instance ids) have one. ``object`` values are kept (``"list"``).
    """

    def f(x: str) -> str:
        return x[:1] + payload + x[1:]

    def walk(v: Any, key: str = "") -> Any:
        if isinstance(v, dict):
            return {(f(k) if any(c.isdigit() for c in k) else k): walk(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, key) for x in v]
        return f(v) if isinstance(v, str) and key != "object" else v

    return json.dumps(walk(doc))


# --- the tests --------------------------------------------------------------------------


def test_enumeration_finds_the_string_fields() -> None:
    """Meta-check: the dataclasses are found, and with them the fields that hold text."""
    names = {cls.__name__ for cls in SAMPLE_TYPES}
    assert {
        "HostSample",
        "LinkSample",
        "GpuSample",
        "InferenceSample",
        "SectionStatus",
        "QosConfig",
        "PcieLink",
    } <= names
    assert {
        ("LinkSample", "firmware"),
        ("LinkSample", "driver"),
        ("LinkSample", "counters"),  # dict keys: raw counter names
        ("LinkSample", "saturated"),
        ("GpuSample", "name"),
        ("GpuSample", "throttle_reasons"),
        ("InferenceSample", "model"),
        ("InferenceSample", "error"),
        ("InferenceSample", "histograms"),
        ("SectionStatus", "detail"),
        ("HostSample", "warnings"),
        ("QosConfig", "ets"),
    } <= STR_FIELDS
    assert len(STR_FIELDS) >= 30


def build_darwin_sample(payload: str, thermal: str = "macmon") -> HostSample:
    """A Mac's frame (issue 14): the captures of tests/fixtures/darwin and the sim's Mac,
    the payload in every free-text word and JSON string (names a parser validates are
    refused whole, so the clean frame fills those fields)."""
    from fabtop.sim.mac import MacState, ibv_devinfo_text, ifconfig_text

    darwin = Path(__file__).resolve().parents[1] / "fixtures" / "darwin"

    def read(name: str) -> str:
        return (darwin / name).read_text()

    mac = MacState("mac1")
    texts = {
        "netstat_i": read("netstat_ibdn_gopsutil.txt"),
        thermal: read(
            "macmon_pipe_m3pro_macmonbar.json"
            if thermal == "macmon"
            else "pmset_g_therm_speed_limited_machealthkit.txt"
        ),
        "ibv_devinfo": ibv_devinfo_text("mac1", mac),
        "rdma_ctl": read("rdma_ctl_status_enabled_mlx2944.txt"),
        "sp_thunderbolt": read(
            "system_profiler_SPThunderboltDataType_json_macstudio_m3ultra_tb5_omlx.json"
        ),
        "hwports": read("networksetup_listallhardwareports_macbookpro_osaurus.txt"),
        "ifconfig": ifconfig_text("mac1", mac).replace("bridge0: flags", "bridgeX: flags")
        + "\n"
        + read("ifconfig_bridge0_3members_macmini_mlx1903.txt"),
    }
    if payload:
        texts = {
            k: (
                inject_json(v, payload) if k in ("macmon", "sp_thunderbolt") else inject(v, payload)
            )
            for k, v in texts.items()
        }
    sections = [Section(k, None, 1, "ok", None, v) for k, v in texts.items()]
    sections.append(
        Section("probe", None, 1, "ok", None, "impl " + inject("zsh-darwin 5.9", payload) + "\n")
    )
    return assemble("mac1", Frame(7, 1_700_000_000_000_000_000, 100.0, 1.7e9, sections))


def test_a_macs_strings_come_out_clean() -> None:
    for payload in (SAFE_PAYLOAD, *SEQUENCES):
        check_output(build_darwin_sample(payload))
        check_output(build_darwin_sample(payload, "pmset_therm"))


def test_every_string_field_is_filled_and_clean(fixtures_dir: Path) -> None:
    """Meta-check: the injected frames fill every enumerated field, and all come out clean.

    A field added to collectors/samples.py that these frames leave empty fails here: give
    it input (real capture text) above, so the property tests below reach it too.
    """
    sample = build_sample(fixtures_dir, SAFE_PAYLOAD)
    check_output(sample)
    seen: set[tuple[str, str]] = set()
    _seen(sample, seen)
    _seen(build_darwin_sample(""), seen)  # the macOS fields (issue 14)
    _seen(build_darwin_sample("", "pmset_therm"), seen)
    assert STR_FIELDS - seen == set()
    # Whole sequences go and the text around them stays what the node meant.
    eth0 = sample.links["eth0"]
    assert (eth0.driver, eth0.firmware) == ("e1000e", "0.5-4")
    assert eth0.driver_version == "5.11.0-22-generic"
    assert sample.gpus[0].name == "NVIDIA GeForce RTX 2080 SUPER"
    assert sample.gpus[0].throttle_reasons == ("sw_power_cap",)
    assert [g.name for g in sample.gpus[1:]] == ["Arcturus GL-XL [Instinct MI100]"] * 6
    assert sample.inference[0].model == "facebook/opt-125m"
    assert eth0.qos is not None and eth0.qos.trust == "dscp"
    assert "node1: probe: interface name refused" in sample.warnings


@pytest.mark.parametrize("ch", CONTROLS + BIDI, ids=lambda c: f"U+{ord(c):04X}")
def test_each_control_character_is_removed(fixtures_dir: Path, ch: str) -> None:
    """The whole C0/C1 range (and the bidi controls), each around an OSC 52 payload."""
    check_output(build_sample(fixtures_dir, ch + OSC52 + ch))


PAYLOADS = st.lists(
    st.one_of(
        st.sampled_from(CONTROLS + BIDI + SEQUENCES),
        st.text(alphabet="abc019;[]\\P_^\"'=:/ \t", max_size=4),
    ),
    min_size=1,
    max_size=6,
).map("".join)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=PAYLOADS)
def test_any_control_payload_never_reaches_a_field(fixtures_dir: Path, payload: str) -> None:
    check_output(build_sample(fixtures_dir, payload))


def test_walker_reaches_nested_strings() -> None:
    """The checker itself can fail: a control character deep in a nested value is found."""
    link = collectors.samples.LinkSample(id="eth0", counters={"ethtool": {"a\x1b[31m": 1}})
    with pytest.raises(AssertionError):
        check_output(HostSample("h", 1, 0, 0.0, links={"eth0": link}))
    with pytest.raises(AssertionError):
        check_output(collectors.samples.GpuSample(index=0, power_w=math.nan))
