"""A link's cable health from the frame's optics sections (issue 33, docs/PROBE.md "Optics").

``ethtool_m <netdev>`` -> ``LinkSample.module``; ``ethtool_fec <netdev>`` ->
``LinkSample.fec`` and the FEC counters (``LinkSample.counters["fec"]``, normalized by
collectors/normalize.py ``FEC_MAP``); ``devlink_health -`` -> ``LinkSample.health``: the
reporters of the netdev's PCI function (``ethtool -i`` bus-info) and of its ports;
``mlxlink <PCI function>`` (opt-in) -> ``LinkSample.module`` of the link on that function
(its bus-info) where ``ethtool -m`` gave none: ethtool's read wins, as it carries the
module's own alarm and warning limits, which mlxlink's bracketed ranges do not name.

The sections come on optics rounds only; the collector carries the latest of each between
them (fabtop/core/pipeline.py ``SLOW_KINDS``), so a carried one is parsed once (``read``).
A failed read is one warning line on its link; a port whose read backs off says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from collectors.frames import Frame, Section, TextRead
from collectors.layout import Warner
from collectors.normalize import ETHTOOL_MAP, MLXLINK_MAP, apply_map
from collectors.numbers import ALL_ONES
from collectors.parsers.devlink_health import parse_devlink_health
from collectors.parsers.ethtool_module import parse_ethtool_module
from collectors.parsers.fec import parse_show_fec
from collectors.parsers.mlxlink import parse_mlxlink_json
from collectors.samples import FEC_SOURCE, MLXLINK_SOURCE, LinkSample
from collectors.vocabulary import Metric

OPTICS_KINDS = ("ethtool_m", "ethtool_fec", "devlink_health", "mlxlink")

# What a failed read's first line means for the operator (the tool's words, then ours).
# What a port without module diagnostics or FEC answers (tests/fixtures/optics/*_veth_*):
# a fact of the port, said by the cable panel's absence, not a warning on every round.
_UNSUPPORTED = "Operation not supported"
# ethtool's "netlink error: Operation not permitted" (the netlink MODULE_EEPROM_GET is
# GENL_UNS_ADMIN_PERM) and sudo's own refusal (tests/fixtures/optics/SOURCES.md).
_HINTS = (
    (
        "Operation not permitted",
        "needs CAP_NET_ADMIN: log in as root, or set optics_sudo on the host",
    ),
    (
        "a password is required",
        "sudo -n may not run ethtool here: allow it without a password, or log in as root",
    ),
    ("ACCESS_REG", "the firmware refused the register (a restricted function)"),
)


def read_optics(
    find: Callable[[str, str | None], Section | None],
    read: TextRead,
    warn: Warner,
    link: LinkSample,
    bus_info: str | None,
) -> None:
    """Put the module, FEC and health reporters of ``link`` on it, from the frame."""
    ndev = link.netdev
    if ndev is None:
        return
    sec = _usable(find("ethtool_m", ndev), warn)
    if sec is not None:
        got = read(parse_ethtool_module, sec)
        warn.add(sec.kind, ndev, got.warnings)
        if got.module is not None:  # the parse is shared (kept): this link's own copy
            link.module = replace(got.module, read_ns=sec.read_ns)
    sec = _usable(find("ethtool_fec", ndev), warn)
    if sec is not None:
        fec = read(parse_show_fec, sec)
        warn.add(sec.kind, ndev, fec.warnings)
        if fec.state is not None:
            link.fec = replace(fec.state)
        if fec.counters:
            link.counters[FEC_SOURCE] = dict(fec.counters)
            link.slow_read_ns = sec.read_ns  # carried with them: a fresh read has a new time
    sec = find("devlink_health", None)
    if bus_info and sec is not None and sec.status in ("ok", "truncated", "timeout"):
        health = read(parse_devlink_health, sec)
        if health.reporters is not None:
            dev = f"pci/{bus_info}"
            link.health = tuple(
                r for r in health.reporters if r.device == dev or r.device.startswith(dev + "/")
            )
    sec = find("mlxlink", bus_info) if bus_info else None
    text = sec.text.lstrip() if sec is not None else ""
    if sec is not None and (
        text if sec.status == "ok" else sec.status == "error" and text[:1] == "{"
    ):
        # its answer; a failed call's JSON too: the tool's status message says why
        mlx = read(parse_mlxlink_json, sec)
        warn.add(sec.kind, sec.subject, mlx.warnings)
        if link.module is None and mlx.module is not None:
            link.module = replace(mlx.module, read_ns=sec.read_ns)
        said = _mlxlink_counters(link, mlx.counters, sec.read_ns)
        warn.add(sec.kind, sec.subject, [said] if said else [])
    else:
        _usable(sec, warn)  # a failure without JSON (sudo's refusal, a timeout): one line


def _mlxlink_counters(link: LinkSample, counters: dict[str, int], read_ns: int | None) -> str:
    """mlxlink's physical counters on ``link`` (raw, carried between its reads), and its
    corrected bits as the link's where ``ethtool -S`` counts none (ethtool's are read every
    frame, mlxlink's once every N optics rounds for N devices), at mlxlink's read time: a
    section that says none (a frame made by hand) gives no rate, so no corrected bits.
    Returns why its corrected bits are left out this read ("": they are not)."""
    if not counters:
        return ""
    link.counters[MLXLINK_SOURCE] = dict(counters)
    ethtool = link.counters.get("ethtool", {})
    if read_ns is None or any(
        n in ethtool for src in ETHTOOL_MAP[Metric.PHY_CORRECTED_BITS] for n in src.names
    ):
        return ""
    lanes = [v for n, v in counters.items() if n.startswith("raw_physical_errors_lane")]
    if not lanes:
        return ""
    if not ALL_ONES.isdisjoint(lanes):  # a glitched lane: its sum would be a false jump
        return "raw physical errors: a lane reads all-ones, corrected bits left out"
    if not apply_map(MLXLINK_MAP, counters):
        return "raw physical errors: sum beyond 64 bits, corrected bits left out"
    link.mlxlink_read_ns = read_ns
    return ""


def optics_host_warnings(frame: Frame, read: TextRead, warn: Warner) -> None:
    """The host's devlink section (its parser's warnings or its failure), and whether the
    node's FEC output has the error histogram: said once per host, not per port."""
    sec = _usable(frame.find("devlink_health"), warn)
    if sec is not None:
        warn.add(sec.kind, None, read(parse_devlink_health, sec).warnings)
    for sec in frame.all("ethtool_fec"):
        if sec.status == "ok" and sec.text.strip():
            state = read(parse_show_fec, sec).state
            if state is not None and state.histogram is False:
                tool = (sec.detail or "").replace("=", " ") or "ethtool"
                warn.add(
                    sec.kind,
                    None,
                    [
                        f"no FEC error histogram in this node's output ({tool}): it needs "
                        "Linux 6.18 and an ethtool that prints fec_symbol_err_*"
                    ],
                )
                return


def _usable(sec: Section | None, warn: Warner) -> Section | None:
    """The section when its text is the tool's answer; a failure said in one line."""
    if sec is None or (sec.status in ("ok", "truncated", "timeout") and sec.text.strip()):
        return sec
    if sec.status in ("missing", "ok"):  # no tool (said by the probe), or nothing printed
        return None
    if _UNSUPPORTED in sec.text:
        return None  # a port with no module diagnostics or FEC (a veth, a fixed PHY): a fact
    if sec.detail == "backoff":
        return None  # the failed read was said on its round; the probe retries in 15 rounds
    first = sec.text.strip().splitlines()[0][:160] if sec.text.strip() else ""
    hint = next((h for key, h in _HINTS if key in sec.text), "")
    detail = f" ({sec.detail})" if sec.detail else ""
    said = f": {first}" if first else ""
    warn.add(sec.kind, sec.subject, [f"{sec.status}{detail}{said}" + (f"; {hint}" if hint else "")])
    return None
