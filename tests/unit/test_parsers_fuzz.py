"""No parser in collectors/parsers raises, whatever text it is given, and none lets a
number that cannot be or a control character through.

Every public ``parse_*`` function of every module in the package is found at import
time, so a parser added later is covered without touching this file. The inputs mix
real captures, tokens shaped like what the parsers look for, integers of 5000 digits,
NaN/Inf spellings, the whole C0/C1 range and whole escape sequences. Properties: no
exception; every number in the output finite and within 64 bits; no output string with
a control character (:func:`tests.unit.test_remote_strings.check_output`).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collectors.parsers
from collectors.assemble import assemble
from collectors.frames import Frame, Section
from tests.conftest import FIXTURES
from tests.unit.test_parse_sysfs import sysfs_dump
from tests.unit.test_remote_strings import BIDI, CONTROLS, SEQUENCES, check_output


def _parsers() -> list[tuple[str, Callable[..., Any]]]:
    found: list[tuple[str, Callable[..., Any]]] = []
    for info in pkgutil.iter_modules(collectors.parsers.__path__):
        mod = importlib.import_module(f"collectors.parsers.{info.name}")
        for name, fn in inspect.getmembers(mod, inspect.isfunction):
            if name.startswith("parse_") and fn.__module__ == mod.__name__:
                found.append((f"{info.name}.{name}", fn))
    return sorted(found, key=lambda x: x[0])


PARSERS = _parsers()


def _call(fn: Callable[..., Any], text: str) -> Any:
    params = list(inspect.signature(fn).parameters.values())[1:]
    extra = [
        "http://127.0.0.1:8000/metrics"
        for p in params
        if p.default is inspect.Parameter.empty
        and p.kind is not p.VAR_POSITIONAL
        and p.kind is not p.VAR_KEYWORD
    ]
    return fn(text, *extra)


def _capture_texts() -> list[str]:
    if not FIXTURES.is_dir():
        return ["NIC statistics:\n     rx_bytes: 1\n"]
    texts = []
    for sub in (
        "ethtool",
        "qos",
        "lspci",
        "iplink",
        "procnet",
        "nvidia_smi",
        "llm_metrics",
        "amd_smi",
        "nvidia_smi/captures_utkuozdemir/query_gpu_csv_",
    ):
        for path in sorted(FIXTURES.glob(sub + "*" if sub.endswith("_") else sub + "/*"))[:6]:
            if path.is_file() and path.stat().st_size < 200_000:
                texts.append(path.read_bytes().decode("utf-8", errors="replace"))
    texts.append((FIXTURES / "nvidia_smi/nvidia_smi_q_x_a10g_telegraf.xml").read_text())
    for tree in ("net", "infiniband"):  # the probe's sysnet / sysib dumps
        texts.append(sysfs_dump(FIXTURES / "sysfs/prometheus_procfs/sys/class" / tree))
    return texts


CAPTURES = _capture_texts()

# Lines shaped like what the parsers look for, so the fuzzer reaches past the first check.
_TOKENS = st.sampled_from(
    [
        "NIC statistics:",
        "[0]:",
        "rx_prio3_pause:",
        "mlx5_0/ports/1/counters/port_rcv_data",
        "eth0/statistics/rx_bytes",
        "eth0/device",
        "LnkSta:",
        "Speed",
        "GT/s",
        "Width",
        "x16",
        "(downgraded)",
        "prio:3",
        "dscp:26,",
        "tc:",
        "priority:",
        "enabled",
        "pg-pfc",
        "3:on",
        "requests",
        "pfc-cap",
        "{",
        "}",
        "[",
        "]",
        '"stats64"',
        '"ifname"',
        ":",
        ",",
        "-1",
        "0x1f",
        "N/A (no PMA)",
        "18446744073709551615",
        "1e309",
        "nan",
        "\t",
        " ",
        "#",
        "@@",
        "# HELP",
        "# TYPE",
        "vllm:generation_tokens_total",
        "le=",
        "+Inf",
        "index",
        "\r",
        "9" * 5000,  # beyond int()'s 4300-digit limit
        "1" * 21,  # beyond 64 bits
        "4294967295",
        "0x" + "f" * 40,
        "nan",
        "NaN",
        "+Inf",
        "-Inf",
        "inf",
        "Infinity",
        "-Infinity",
        "1e999",
        '"value": NaN',
        ": Infinity,",
        "GPU use (%)",
        "card0",
        'model_name="',
        '_bucket{le="',
        "firmware-version:",
        *SEQUENCES,
    ]
)
_CONTROL = st.sampled_from(CONTROLS + BIDI)
_LINE = st.lists(st.one_of(_TOKENS, _CONTROL, st.text(max_size=8)), max_size=12).map(" ".join)
STRUCTURED = st.lists(_LINE, max_size=30).map("\n".join)
RANDOM_BYTES = st.binary(max_size=2000).map(lambda b: b.decode("utf-8", errors="replace"))


@st.composite
def mangled_capture(draw: st.DrawFn) -> str:
    """A real capture cut, spliced with junk and truncated at random places."""
    text = draw(st.sampled_from(CAPTURES))
    a = draw(st.integers(0, len(text)))
    b = draw(st.integers(a, len(text)))
    junk = draw(st.one_of(st.text(max_size=40), _LINE, _TOKENS, _CONTROL))
    return text[:a] + junk + text[b:]


@st.composite
def spiked_capture(draw: st.DrawFn) -> str:
    """A real capture with its numbers or words replaced by hostile tokens here and there."""
    text = draw(st.sampled_from(CAPTURES))
    bad = draw(st.lists(_TOKENS | _CONTROL, min_size=1, max_size=4))
    parts = re.split(r"(\d+(?:\.\d+)?|[A-Za-z]{3,})", text)
    for tok in bad:
        i = draw(st.integers(0, max(len(parts) - 1, 0)))
        parts[i] = tok if i % 2 else parts[i] + tok
    return "".join(parts)


INPUTS = st.one_of(
    st.text(max_size=2000), RANDOM_BYTES, STRUCTURED, mangled_capture(), spiked_capture()
)


def test_parsers_found() -> None:
    names = {n for n, _ in PARSERS}
    assert {"ethtool.parse_ethtool_stats", "sysfs.parse_sysib", "qos.parse_dcb_pfc"} <= names


@pytest.mark.parametrize(("name", "fn"), PARSERS, ids=[n for n, _ in PARSERS])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=INPUTS)
def test_parser_never_raises(name: str, fn: Callable[..., Any], text: str) -> None:
    check_output(_call(fn, text))


_KINDS = st.sampled_from(
    [
        "sysnet",
        "sysib",
        "ethtool_S",
        "ethtool_i",
        "mlnx_qos",
        "dcb_pfc",
        "cputhrottle",
        "probe",
        "gpu_nvidia",
        "gpu_amd",
        "dcb_pfc",
        "dcb_app",
        "dcb_apptrust",
        "dcb_ets",
        "dcb_buffer",
        "unknown",
    ]
)
_SECTION = st.builds(
    Section,
    kind=_KINDS,
    subject=st.one_of(st.none(), st.sampled_from(["eth0", "mlx5_0", "ib0", "eth\x1b]0;x\x07"])),
    read_ns=st.one_of(st.none(), st.integers(0, 2**63)),
    status=st.sampled_from(["ok", "missing", "timeout", "error", "stale"]),
    detail=st.one_of(st.none(), st.sampled_from(["rocm-smi", "amd-smi", "rc=1", *SEQUENCES])),
    text=st.one_of(STRUCTURED, mangled_capture(), spiked_capture()),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sections=st.lists(_SECTION, max_size=8))
def test_assemble_never_raises(sections: list[Section]) -> None:
    sample = assemble("h", Frame(1, 0, 0.0, 0.0, sections))
    assert all(w.startswith("h: ") for w in sample.warnings)
    check_output(sample)
